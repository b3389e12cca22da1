"""``VerityRAGPipeline``: ingest documents into the live index and answer questions or abstain."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from verityrag.agent.controller import AgentController, AnswerabilityModel, AnswerGuard, ReaderAgreementCheck
from verityrag.agent.reformulation import Reformulator, SalientTermExpansion, TitleAnchoredRewrite
from verityrag.agent.sufficiency import SufficiencyGate
from verityrag.config import Settings
from verityrag.embed.base import Embedder
from verityrag.embed.hashing import HashingEmbedder
from verityrag.errors import InvalidInputError
from verityrag.generation.extractive import ExtractiveGenerator
from verityrag.generation.llm import LLMGenerator
from verityrag.generation.sentence_selector import SentenceSelector
from verityrag.generation.verified import AnswerStrategy, RejectAndRetry
from verityrag.index.live import LiveIndex
from verityrag.index.protocol import AnyIndex, SnapshotView, check_unique_ids
from verityrag.index.store import SQLiteDocumentStore
from verityrag.learned_checks import (
    CHECK_ATTRIBUTES,
    PairedSufficiency,
    attach_from_settings,
    fit_thresholds,
    requested_checks,
)
from verityrag.retrieval.features import ChunkTermCache, QueryTerms, feature_matrix
from verityrag.retrieval.hybrid import HybridRetriever
from verityrag.retrieval.reranker import (
    KEEP_RERANKER_ALPHA,
    LightGBMReranker,
    RankingData,
    ict_queries,
    sign_test_p,
)
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.text.chunking import chunk_spans
from verityrag.text.sentences import sentence_spans
from verityrag.types import Chunk, Document, Hit, QueryResult, TraceStep, is_valid_doc_id
from verityrag.verify.grounding import GroundingChecker

logger = logging.getLogger(__name__)

DATA_DIR_ENV = "VERITYRAG_DATA_DIR"
# ``data_dir=IN_MEMORY`` keeps everything in memory whatever VERITYRAG_DATA_DIR says: the eval
# and the demos pass it, so a benchmark never restores a user's documents nor writes into their store.
IN_MEMORY = ""
STORE_FILENAME = "verityrag.sqlite3"
DocumentLike = Document | Mapping[str, Any] | tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class IngestResult:
    doc_id: str
    n_chunks: int
    replaced: bool


def as_document(item: DocumentLike) -> Document:
    """Accept a ``Document``, a mapping with doc_id/title/text[/metadata], or a (doc_id, title, text) tuple."""
    if isinstance(item, Document):
        return item
    if isinstance(item, Mapping):
        missing = [k for k in ("doc_id", "text") if k not in item]
        if missing:
            raise InvalidInputError(missing[0], "is required")
        metadata = item.get("metadata")
        if metadata is None:
            metadata = {}
        elif isinstance(metadata, Mapping):
            metadata = dict(metadata)
        # Anything else goes to Document as it is, which names the field: dict() of a string or
        # a number raised a bare ValueError or TypeError.
        return Document(item["doc_id"], item.get("title", ""), item["text"], metadata)
    if isinstance(item, tuple) and len(item) == 3:
        return Document(*item)
    raise InvalidInputError("document", f"expected a Document, mapping or 3-tuple, got {type(item).__name__}")


class VerityRAGPipeline:
    """The whole system behind one object.

    Without ``data_dir`` (or ``VERITYRAG_DATA_DIR``) everything lives in memory, as it does
    with ``data_dir=IN_MEMORY`` whatever the environment says. With it, documents, chunks and
    vectors persist in SQLite and the index is restored on start without re-embedding (unless
    the embedder changed).
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        settings: Settings | None = None,
        analyzer: Analyzer = DEFAULT_ANALYZER,
        generator: ExtractiveGenerator | LLMGenerator | AnswerStrategy | None = None,
        index: AnyIndex | None = None,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.analyzer = analyzer
        self.embedder: Embedder = embedder or HashingEmbedder(analyzer=analyzer)
        # Any backend of the index contract (verityrag.index.protocol): the embedded LiveIndex by
        # default, Elasticsearch with Settings(backend="elasticsearch") or index=ElasticsearchIndex(...).
        self.index: AnyIndex = index if index is not None else self._default_index()
        if self.index.dim != self.embedder.dim:
            raise InvalidInputError(
                "index", f"holds {self.index.dim}-d vectors but the embedder makes {self.embedder.dim}-d ones"
            )
        if self.index.analyzer.fingerprint() != analyzer.fingerprint():
            raise InvalidInputError("index", "uses a different analyzer from the pipeline's")
        self.retriever = HybridRetriever(
            self.index,
            self.embedder,
            fusion=self.settings.fusion,
            candidates=max(self.settings.candidates, 50),
            dense_weight=self.settings.dense_weight,
        )
        self._chunk_terms = ChunkTermCache(analyzer)
        self.reranker = LightGBMReranker()
        self.use_reranker = True  # calibrate() keeps it only when it helps on labelled questions
        self.reformulate = True  # likewise for reformulation
        self.grounding = GroundingChecker(analyzer)
        # The extractive generator always ranks sentences (the gates read its features); an
        # LLM generator, or a verified strategy over one, writes the answer after the gates.
        # A bare LLMGenerator is wrapped in reject-and-retry with the grounding verifier.
        self.generator = (
            generator
            if isinstance(generator, ExtractiveGenerator)
            else ExtractiveGenerator(analyzer=analyzer)
        )
        self.answer_strategy: AnswerStrategy | None = None
        if isinstance(generator, LLMGenerator):
            self.answer_strategy = RejectAndRetry(generator)
        elif generator is not None and not isinstance(generator, ExtractiveGenerator):
            if not callable(getattr(generator, "answer", None)):
                raise InvalidInputError(
                    "generator",
                    "must be an ExtractiveGenerator, an LLMGenerator or have answer(question, hits, strictness)",
                )
            self.answer_strategy = generator
        self._gate: SufficiencyGate | None = None
        self.answer_guard: AnswerGuard | None = None
        self.answerability: AnswerabilityModel | None = None
        self.answer_reader: ReaderAgreementCheck | None = None
        # The sufficiency threshold calibrate() fitted together with the answerability check; it
        # applies only while that check is attached (see sufficiency_threshold).
        self.paired_sufficiency: PairedSufficiency | None = None
        # Where each settings-attached check's threshold comes from: settings, calibration or metadata.
        self.check_threshold_sources: dict[str, str] = {}
        if requested_checks(self.settings):  # loaded now: a missing model stops the start, not a query
            self.check_threshold_sources = attach_from_settings(self, self.settings)
        self._write_lock = threading.Lock()
        self._metadata: dict[str, dict[str, Any]] = {}  # per document, when there is no store
        resolved = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV) or None
        self.data_dir = Path(resolved) if resolved else None
        self.store: SQLiteDocumentStore | None = None
        if self.data_dir is not None and not isinstance(self.index, LiveIndex):
            raise InvalidInputError(
                "data_dir",
                f"is for the embedded index; {type(self.index).__name__} is its own durable store "
                f"(unset {DATA_DIR_ENV} or data_dir)",
            )
        if self.data_dir is not None:
            self.store = SQLiteDocumentStore(self.data_dir / STORE_FILENAME, self.settings.durability)
            self._restore(self.store)

    def _default_index(self) -> AnyIndex:
        if self.settings.backend == "elasticsearch":
            from verityrag.index.elastic import ElasticsearchIndex

            return ElasticsearchIndex.from_env(
                self.embedder.dim, analyzer=self.analyzer, vector_fingerprint=self.embedder.fingerprint()
            )
        return LiveIndex(
            dim=self.embedder.dim, analyzer=self.analyzer, dense_backend=self.settings.dense_backend
        )

    # ----------------------------------------------------------------- ingest
    def validate_document(self, doc: Document) -> Document:
        """The checks ingest runs on a document; returns it as it is stored.

        Its metadata comes back as JSON reads it (tuples as lists, keys as strings): what the
        store keeps and a restart returns. Without this an in-memory pipeline returned the
        caller's own objects, ``{1: (2, 3)}``, where a stored one returned ``{'1': [2, 3]}``.
        """
        limit = self.settings.max_document_chars
        if len(doc.text) > limit:
            raise InvalidInputError(
                "text", f"is {len(doc.text):,} characters; the limit is {limit:,} (max_document_chars)"
            )
        for field in ("title", "text"):
            try:
                getattr(doc, field).encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidInputError(field, f"is not valid Unicode text ({exc.reason})") from exc
        try:  # stored and served as JSON: what cannot be written must not be accepted
            dumped = json.dumps(doc.metadata, ensure_ascii=False, allow_nan=False)
            dumped.encode("utf-8")
        except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
            raise InvalidInputError("metadata", f"must be JSON with valid Unicode text ({exc})") from exc
        return dataclasses.replace(doc, metadata=json.loads(dumped))

    def _chunk(self, doc: Document) -> list[Chunk]:
        spans = chunk_spans(
            doc.doc_id,
            doc.text,
            max_words=self.settings.chunk_max_words,
            overlap_sentences=self.settings.chunk_overlap_sentences,
        )
        return [
            Chunk(s.chunk_id, doc.doc_id, doc.title, doc.text[s.start : s.end], s.position, s.start, s.end)
            for s in spans
        ]

    def _prepare(self, docs: list[Document]) -> list[tuple[Document, list[Chunk], npt.NDArray[np.float32]]]:
        chunked = [self._chunk(doc) for doc in docs]
        texts = [c.text for chunks in chunked for c in chunks]
        vectors = self.embedder.encode(texts) if texts else np.zeros((0, self.embedder.dim), np.float32)
        out = []
        offset = 0
        for doc, chunks in zip(docs, chunked, strict=True):
            out.append((doc, chunks, vectors[offset : offset + len(chunks)]))
            offset += len(chunks)
        return out

    def _commit(self, prepared: list[tuple[Document, list[Chunk], npt.NDArray[np.float32]]]) -> None:
        # Durable store first, then the index: once this returns the documents are
        # both persisted and searchable. One lock keeps store and index in the same order.
        upserts = [(doc.doc_id, chunks, vecs) for doc, chunks, vecs in prepared]
        counts = self.index.term_counts(upserts)  # analyzed once, for the store and the index
        with self._write_lock:
            if self.store is not None:
                self.store.put_many(prepared, counts)
            else:  # the index keeps no metadata: without a store it lives here
                for doc, _, _ in prepared:
                    self._metadata.pop(doc.doc_id, None)
                    if doc.metadata:
                        self._metadata[doc.doc_id] = dict(doc.metadata)
            self.index.apply(upserts, term_counts=counts)

    def ingest_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, Any] | None = None
    ) -> IngestResult:
        """Add or replace one document. Searchable (and persisted) when this returns."""
        doc = self.validate_document(Document(doc_id, title, text, metadata or {}))
        replaced = self.index.has_document(doc.doc_id)
        prepared = self._prepare([doc])
        self._commit(prepared)
        return IngestResult(doc.doc_id, len(prepared[0][1]), replaced)

    def ingest_documents(
        self, documents: Iterable[DocumentLike], batch_size: int = 512, progress: bool | None = None
    ) -> int:
        """Bulk ingest in one pass. Every document is validated before anything is written.

        Returns the number of documents ingested. A progress bar shows above a
        few hundred documents (``progress=None``) or when asked for.
        """
        # A negative batch size made range() empty: nothing written, yet the count came back.
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidInputError("batch_size", f"must be an integer >= 1, got {batch_size!r}")
        docs = [self.validate_document(as_document(item)) for item in documents]
        check_unique_ids((d.doc_id for d in docs), "documents")  # the API's body names it so too
        show = len(docs) > 300 if progress is None else progress
        bar = _progress(total=len(docs), desc="ingest", unit="doc", disable=not show)
        try:
            for first in range(0, len(docs), batch_size):
                batch = docs[first : first + batch_size]
                self._commit(self._prepare(batch))
                bar.update(len(batch))
        finally:
            bar.close()
        return len(docs)

    def ingest_file(
        self, path: str | os.PathLike[str], doc_id: str | None = None, title: str | None = None
    ) -> IngestResult:
        """Ingest a UTF-8 text file; the doc id defaults to the file name."""
        p = Path(path)
        raw = p.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(
                "file", f"{p} is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
            ) from exc
        return self.ingest_document(doc_id or p.name, title if title is not None else p.stem, text)

    def delete_document(self, doc_id: str) -> bool:
        """Remove a document from the store and both indexes. False if it was not there."""
        with self._write_lock:
            removed = self.store.delete(doc_id) if self.store is not None else False
            self._metadata.pop(doc_id, None)
            return self.index.delete(doc_id) or removed

    def get_document(self, doc_id: str) -> Document | None:
        if self.store is not None:
            return self.store.get(doc_id)
        chunks = self.index.chunks_of(doc_id)
        if not chunks:
            return None
        # Rebuild the text at the chunks' offsets: overlapping sentences appear once and the
        # whitespace between sentences (all that chunks leave out) becomes spaces.
        text = ""
        for c in chunks:
            if c.end > len(text):
                text = text.ljust(c.start) + c.text[max(len(text) - c.start, 0) :]
        return Document(doc_id, chunks[0].title, text, dict(self._metadata.get(doc_id, {})))

    def stats(self) -> dict[str, Any]:
        snap = self.index.snapshot()
        return {
            "documents": self.index.n_documents,
            "chunks": snap.n_live,
            "index_version": snap.version,
            "embedder": self.embedder.fingerprint(),
            "data_dir": str(self.data_dir) if self.data_dir else None,
            "learned_checks": self.learned_checks(),
        }

    def learned_checks(self) -> dict[str, dict[str, Any]]:
        """The learned checks attached (in the agent's order): threshold, where it came from, model folder.

        ``threshold_from`` is ``settings``, ``calibration`` or ``metadata`` for checks the
        settings attached, ``attached`` for ones set on the pipeline directly. An answerability
        check fitted by the joint rule also has ``sufficiency_threshold``: the sufficiency
        gate's threshold while it is attached.
        """
        out = {}
        for stage, attribute in CHECK_ATTRIBUTES.items():
            check = getattr(self, attribute)
            if check is not None:
                model_dir = getattr(check, "model_dir", None)
                out[stage] = {
                    "threshold": float(check.threshold),
                    "threshold_from": self.check_threshold_sources.get(stage, "attached"),
                    "model_dir": str(model_dir) if model_dir is not None else None,
                }
                paired = self._paired_threshold() if stage == "answerability" else None
                if paired is not None:
                    out[stage]["sufficiency_threshold"] = paired
        return out

    def _restore(self, store: SQLiteDocumentStore) -> None:
        started = time.perf_counter()
        fingerprint = self.embedder.fingerprint()
        stored_fp = store.get_meta("embedder")
        reembed = stored_fp is not None and stored_fp != fingerprint
        if reembed:
            logger.warning("embedder changed (%s -> %s): re-embedding stored chunks", stored_fp, fingerprint)
        dim = self.embedder.dim if not reembed else int(store.get_meta("embedder_dim") or 0)
        batch: list[tuple[str, list[Chunk], npt.NDArray[np.float32]]] = []
        counts: list[list[dict[str, int]]] | None = []
        # Stored term counts are reusable only if the same analyzer made them.
        same_analyzer = store.get_meta("analyzer") == self.analyzer.fingerprint()
        new_vectors: dict[str, npt.NDArray[np.float32]] = {}
        for stored in store.iter_documents(dim):
            if counts is not None:
                if same_analyzer and stored.term_counts is not None:
                    counts.append(stored.term_counts)
                else:
                    counts = None
            vectors = stored.vectors
            if reembed:
                vectors = self.embedder.encode([c.text for c in stored.chunks])
                new_vectors.update(zip((c.chunk_id for c in stored.chunks), vectors, strict=True))
            batch.append((stored.document.doc_id, stored.chunks, vectors))
        legacy = [doc_id for doc_id, _, _ in batch if not is_valid_doc_id(doc_id)]
        if legacy:
            logger.warning(
                "%d stored document(s) have ids today's rules refuse (first: %r): kept and "
                "searchable; delete_document removes them, the REST API cannot address them; "
                "re-ingest them under valid ids",
                len(legacy),
                legacy[0],
            )
        meta = {
            "embedder": fingerprint,
            "embedder_dim": str(self.embedder.dim),
            "analyzer": self.analyzer.fingerprint(),
        }
        new_counts: dict[str, dict[str, int]] = {}
        if not same_analyzer and batch:
            # Counted again by this analyzer and stored under its fingerprint: left as they were,
            # the next restore would read the old analyzer's counts as this one's.
            counts = self.index.term_counts(batch)
            for (_, chunks, _), chunk_counts in zip(batch, counts, strict=True):
                new_counts.update(zip((c.chunk_id for c in chunks), chunk_counts, strict=True))
        # Every new vector, count and the fingerprints that describe them in ONE transaction: a
        # crash while re-embedding leaves the old store intact, never half old, half new.
        store.replace_vectors(new_vectors, meta=meta, term_counts_by_chunk=new_counts)
        self.index.apply(batch, term_counts=counts)
        logger.info(
            "restored %d documents (%d chunks) from %s in %.2fs",
            self.index.n_documents,
            len(self.index),
            store.path,
            time.perf_counter() - started,
        )

    # ------------------------------------------------------------------ query
    @property
    def selector(self) -> SentenceSelector:
        """The generator's learned sentence selector (the bundled default, loaded on first use)."""
        return self.generator.selector

    @property
    def gate(self) -> SufficiencyGate:
        """The sufficiency gate: the bundled default until ``calibrate`` fits one on your questions."""
        if self._gate is None:
            self._gate = SufficiencyGate.default()
            # Its threshold was chosen with or without the reformulation loop: follow suit.
            self.reformulate = bool(self._gate.fit_summary_.get("reformulation", {}).get("used", True))
        return self._gate

    @property
    def sufficiency_threshold(self) -> float:
        """The sufficiency gate's threshold the agent applies now: the one ``calibrate`` fitted together
        with the answerability check while that check is attached, else the gate's own."""
        paired = self._paired_threshold()
        return self.gate.threshold_ if paired is None else paired

    def _paired_threshold(self) -> float | None:
        paired = self.paired_sufficiency
        if paired is None or self.answerability is None or paired.check is not self.answerability:
            return None
        return paired.threshold

    def _controller(self, settings: Settings, with_gate: bool = True) -> AgentController:
        reformulators: list[Reformulator] = [
            SalientTermExpansion(self._chunk_terms, self.index.idf),
            TitleAnchoredRewrite(),
        ]
        retriever = self.retriever
        if (settings.fusion, settings.dense_weight) != (retriever.fusion, retriever.dense_weight):
            retriever = HybridRetriever(
                self.index,
                self.embedder,
                settings.fusion,
                retriever.candidates,
                dense_weight=settings.dense_weight,
            )
        return AgentController(
            index=self.index,
            retriever=retriever,
            generator=self.generator,
            gate=self.gate if with_gate else None,
            grounding=self.grounding,
            cache=self._chunk_terms,
            reranker=self.reranker if self.reranker.is_fitted and self.use_reranker else None,
            reformulators=reformulators,
            answer_guard=self.answer_guard,
            answerability=self.answerability,
            answer_reader=self.answer_reader,
            max_reformulations=settings.max_reformulations if self.reformulate else 0,
            signal_floor=settings.reformulation_signal_floor,
            candidates=settings.candidates,
            top_k=settings.top_k,
            strictness=settings.strictness,
            verify=settings.verify,
            answer_strategy=self.answer_strategy,
            sufficiency_threshold=self._paired_threshold() if with_gate else None,
        )

    def train_reranker(self, n_queries: int = 800, seed: int = 0) -> VerityRAGPipeline:
        """Train the LightGBM reranker on the current corpus by inverse-cloze-task weak supervision.

        Sentences of the corpus, each reduced to a random part of its words, are
        the queries; the chunks that hold the sentence are the positives.
        """
        if isinstance(n_queries, bool) or not isinstance(n_queries, int) or n_queries < 1:
            # random.sample raised "Sample larger than population or is negative" for a negative
            # count, and 0 trained nothing, warning that the corpus was too small.
            raise InvalidInputError("n_queries", f"must be an integer >= 1, got {n_queries!r}")
        started = time.perf_counter()
        snap = self.index.snapshot()
        chunks = self.index.live_chunks(snap)
        if not chunks:
            raise InvalidInputError("corpus", "is empty: ingest documents before train_reranker()")
        sentences = [(c.chunk_id, c.text[s:e]) for c in chunks for s, e in sentence_spans(c.text)]
        rows: list[npt.NDArray[np.float64]] = []
        labels: list[npt.NDArray[np.int32]] = []
        groups: list[int] = []
        for query, sentence in ict_queries(sentences, n_queries, seed):
            hits = self.retriever.search(query, self.settings.candidates, snap)
            y = np.asarray([int(sentence in h.chunk.text) for h in hits], dtype=np.int32)
            if not hits or y.sum() == 0 or y.sum() == len(y):
                continue
            q = QueryTerms.from_index(query, self.index, snap)
            rows.append(feature_matrix(q, hits, self._chunk_terms))
            labels.append(y)
            groups.append(len(hits))
        if not groups:
            # A corpus this small has nothing to rerank; retrieval order stands.
            logger.warning("corpus too small to train a reranker (no pseudo-query had negatives)")
            return self
        data = RankingData(np.vstack(rows), np.concatenate(labels), np.asarray(groups, dtype=np.int32))
        self.reranker = LightGBMReranker(random_state=seed).fit(data)
        logger.info("reranker trained on %d ICT queries in %.2fs", len(groups), time.perf_counter() - started)
        return self

    def calibrate(self, questions: Iterable[tuple[str, Sequence[str]]]) -> dict[str, Any]:
        """Fit the sufficiency gate on labelled questions: ``(question, gold answers)``.

        An empty answer list means the corpus cannot answer the question. The
        gate learns, per ``Settings.gate_label``, whether a gold answer is in the evidence
        the generator reads (``evidence``, the default) or in the answer it would give
        (``answer``); its threshold follows ``Settings.abstention_target``
        (see :class:`~verityrag.agent.sufficiency.SufficiencyGate`).

        Learned checks the settings attached with an open threshold then get theirs by the
        main eval's rule (:mod:`verityrag.learned_checks`): the labelled questions are run
        through the whole agent once per check. Not with an LLM answer strategy (that would
        call the LLM once per question and check): those keep the thresholds their model
        folders recorded (the guard's and the reader's were fitted on LLM answers).
        """
        from verityrag.eval.metrics import contains_gold

        labelled = list(questions)
        if not labelled:
            raise InvalidInputError("questions", "need at least one labelled question")
        _check_labelled(labelled, self.settings.max_query_chars)
        if len(self.index) == 0:
            # Every question would find nothing and be labelled wrong: "need both correct and
            # incorrect examples" said nothing of the cause.
            raise InvalidInputError("corpus", "is empty: ingest documents before calibrate()")
        reranker_check = self._check_reranker(labelled)
        controller = self._controller(self.settings, with_gate=False)
        snap = self.index.snapshot()
        features, correct, must_abstain = [], [], []
        for question, answers in labelled:
            q = controller._query_terms(question, snap)
            attempt = controller._attempt(q, question, "original", snap)
            answer = attempt.sentences[0].sentence.text if attempt.sentences else ""
            features.append(attempt.features)
            if self.settings.gate_label == "answer":
                correct.append(bool(answers) and contains_gold(answer, answers))
            else:  # "evidence": a gold answer is in the evidence the generator reads
                correct.append(bool(answers) and _gold_in(attempt.hits[: self.generator.max_hits], answers))
            must_abstain.append(not answers)
        gate = SufficiencyGate(abstention_target=self.settings.abstention_target).fit(
            features, correct, must_abstain
        )
        self._gate = gate
        self.paired_sufficiency = None  # it was fitted with the gate this one replaces
        summary: dict[str, Any] = {**gate.fit_summary_, "reranker": reranker_check}
        self.reformulate = True
        if self.settings.max_reformulations > 0 and self.settings.gate_label == "evidence":
            # The loop answers with the best of several attempts (more chances of a false
            # accept), so its threshold is chosen again on that maximum, out of fold: each
            # question is looped with a gate fitted without it. Reformulation is kept only if
            # the loop beats a single attempt on the rule's objective (correct answers at the
            # abstention target), both measured out of fold.
            neg = np.asarray(must_abstain)
            _, single = gate.best_operating_point(gate.oof_probabilities_, np.asarray(correct), neg)
            probs, looped_correct = self._looped_oof(labelled, features, correct, snap)
            looped_threshold, looped = gate.best_operating_point(probs, looped_correct, neg)
            self.reformulate = looped > single
            summary["reformulation"] = {
                "used": self.reformulate,
                "objective_single": single,
                "objective_loop": looped,
            }
            if self.reformulate:
                gate.fit_summary_["threshold_single_attempt"] = summary["threshold"]
                gate.threshold_ = gate.fit_summary_["threshold"] = looped_threshold
                summary["threshold_single_attempt"] = summary["threshold"]
                summary["threshold"] = gate.threshold_
            gate.fit_summary_["reformulation"] = summary["reformulation"]
            logger.info("reformulation check: %s", summary["reformulation"])
        # Settings-attached checks without a fixed threshold get the main eval's rule, fitted here
        # with the gate just fitted (checks set on the pipeline directly are the caller's to tune).
        unfixed = [stage for stage, src in self.check_threshold_sources.items() if src != "settings"]
        if unfixed and self.answer_strategy is not None:
            # The fit would call the LLM once per answerable question and check: keep the
            # thresholds recorded for LLM answers (verityrag.learned_checks).
            summary["learned_checks"] = {
                stage: {
                    "threshold": getattr(self, CHECK_ATTRIBUTES[stage]).threshold,
                    "fitted": False,
                    "reason": "LLM answers: the model folder's threshold is kept",
                }
                for stage in unfixed
            }
        elif unfixed:
            # The joint rule emulates the pair from one pass, which holds only with one attempt
            # per question: the gate's out-of-fold probabilities only without reformulation.
            one_attempt = not self.reformulate or self.settings.max_reformulations == 0
            oof = [float(p) for p in gate.oof_probabilities_] if one_attempt else None
            summary["learned_checks"] = fit_thresholds(self, labelled, unfixed, sufficiency_oof=oof)
            for stage, fit in summary["learned_checks"].items():
                if fit["fitted"]:
                    self.check_threshold_sources[stage] = "calibration"
            logger.info("learned check thresholds: %s", summary["learned_checks"])
        return summary

    def _looped_oof(
        self,
        labelled: Sequence[tuple[str, Sequence[str]]],
        features: Sequence[Sequence[float]],
        correct: Sequence[bool],
        snap: SnapshotView,
        folds: int = 5,
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
        """Best-of-loop gate probabilities, each from a gate fitted on the other folds."""
        from sklearn.model_selection import StratifiedKFold

        y = np.asarray(correct, dtype=np.int32)
        x = np.asarray(features, dtype=np.float64)
        probs = np.zeros(len(y))
        looped_correct = np.zeros(len(y), dtype=bool)
        n_folds = min(folds, int(np.bincount(y, minlength=2).min()))
        if n_folds < 2:
            return self._gate.predict_proba(x) if self._gate else probs, y.astype(bool)
        splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=0)
        for train_idx, test_idx in splitter.split(x, y):
            # Only the fold gate's probabilities are read (the threshold is chosen on all folds
            # below), so it needs no unanswerable question of its own: with fit(), a training part
            # without one (a single unanswerable question, or few of them in one fold: the split
            # stratifies on correct) was refused and calibrate failed.
            fold_gate = SufficiencyGate(abstention_target=self.settings.abstention_target)
            fold_gate._fit_probabilities(x[train_idx], y[train_idx])
            looped = self._controller(self.settings, with_gate=False)
            looped.gate = fold_gate
            for i in test_idx:
                question, answers = labelled[i]
                q = looped._query_terms(question, snap)
                best = looped.search(q, snap, threshold=float("inf"), trace=[])
                probs[i] = best.probability
                looped_correct[i] = bool(answers) and _gold_in(best.hits[: self.generator.max_hits], answers)
        return probs, looped_correct

    def _check_reranker(self, labelled: Sequence[tuple[str, Sequence[str]]]) -> dict[str, Any]:
        """Keep the ICT reranker only if it ranks a gold-holding chunk first significantly more often
        than fusion alone on the answerable labelled questions (one-sided sign test on the
        questions where exactly one of them does, p < ``KEEP_RERANKER_ALPHA``)."""
        if not self.reranker.is_fitted:
            self.use_reranker = False
            return {"trained": False, "used": False}
        snap = self.index.snapshot()
        fused_hits = reranked_hits = wins = losses = n = 0
        for question, answers in labelled:
            if not answers:
                continue
            hits = self.retriever.search(question, self.settings.candidates, snap)
            if not hits:
                continue
            q = QueryTerms.from_index(question, self.index, snap)
            reranked = self.reranker.rerank(q, hits, self._chunk_terms)
            n += 1
            fused_first, reranked_first = _gold_in(hits[:1], answers), _gold_in(reranked[:1], answers)
            fused_hits += fused_first
            reranked_hits += reranked_first
            wins += reranked_first and not fused_first
            losses += fused_first and not reranked_first
        p_value = sign_test_p(wins, losses)
        self.use_reranker = p_value < KEEP_RERANKER_ALPHA
        check = {
            "trained": True,
            "used": self.use_reranker,
            "questions": n,
            "gold_at_1_fused": fused_hits / n if n else 0.0,
            "gold_at_1_reranked": reranked_hits / n if n else 0.0,
            "wins": wins,
            "losses": losses,
            "p_value": p_value,
        }
        logger.info("reranker check on labelled questions: %s", check)
        return check

    def query(
        self,
        question: str,
        k: int | None = None,
        settings: Settings | None = None,
        on_stage: Callable[[TraceStep], None] | None = None,
    ) -> QueryResult:
        """Answer with a cited evidence sentence, or abstain with a recorded reason.

        ``k`` is how many evidence chunks to keep (``Settings.top_k``); ``settings``
        overrides the pipeline's settings for this call (e.g.
        ``pipeline.settings.replace(strictness="strict")``): the query-time fields only,
        ``top_k``, ``candidates``, ``fusion``, ``dense_weight``, ``verify``, ``strictness``,
        ``max_reformulations``, ``reformulation_signal_floor`` and ``max_query_chars``. The
        others act where they are used: chunking and limits on ingest, ``abstention_target``
        and ``gate_label`` in :meth:`calibrate`, the index backend and the learned checks when
        the pipeline is built. ``on_stage`` is called with each trace step as it is recorded
        (input errors are raised before the first).
        """
        s = settings or self.settings
        if k is not None:
            s = s.replace(top_k=k)
        _check_question("question", question, s.max_query_chars)
        return self._controller(s).run(question, on_stage=on_stage)


def _check_question(field: str, question: object, max_chars: int) -> None:
    """The checks ``query`` runs on a question, naming ``field``."""
    if not isinstance(question, str):
        raise InvalidInputError(field, f"must be a string, got {type(question).__name__}")
    if not question.strip():
        raise InvalidInputError(field, "is empty")
    if len(question) > max_chars:
        raise InvalidInputError(field, f"is {len(question):,} characters; the limit is {max_chars:,}")
    try:  # a lone surrogate (half an emoji) passed, and the result could not be serialised
        question.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(field, f"is not valid Unicode text ({exc.reason})") from exc


def _check_labelled(labelled: Sequence[object], max_chars: int) -> None:
    """Each item is ``(question, gold answers)``: a question ``query`` accepts and a list of strings.

    A bare string as the answers is a ``Sequence[str]`` too: its characters were matched as the
    gold answers ("1", "7", "7", "6" for "1776", never whole tokens of the evidence), so the question
    was labelled wrong and calibrate fitted the gate on wrong labels or failed far from the cause.
    """
    for i, item in enumerate(labelled):
        if not isinstance(item, Sequence) or isinstance(item, str) or len(item) != 2:
            raise InvalidInputError(f"questions[{i}]", "must be a (question, answers) pair")
        question, answers = item
        _check_question(f"questions[{i}].question", question, max_chars)
        if isinstance(answers, str | bytes) or not isinstance(answers, Sequence | Set):
            raise InvalidInputError(
                f"questions[{i}].answers",
                f"must be a list of answer strings ([] if the corpus cannot answer), got {type(answers).__name__}",
            )
        bad = next((a for a in answers if not isinstance(a, str)), None)
        if bad is not None:
            raise InvalidInputError(
                f"questions[{i}].answers", f"must hold strings only, got {type(bad).__name__}"
            )


def _gold_in(hits: Sequence[Hit], answers: Sequence[str]) -> bool:
    """A gold answer (SQuAD-normalised, whole tokens) is in one of these hits' text."""
    from verityrag.eval.metrics import contains_gold

    return any(contains_gold(h.chunk.text, answers) for h in hits)


def _progress(total: int, desc: str, unit: str, disable: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=disable)
