"""``VerityRAGPipeline``: ingest documents into the live index and answer questions or abstain."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from verityrag.config import Settings
from verityrag.embed.base import Embedder
from verityrag.embed.hashing import HashingEmbedder
from verityrag.errors import InvalidInputError
from verityrag.generation.extractive import ExtractiveGenerator
from verityrag.index.live import LiveIndex
from verityrag.index.store import SQLiteDocumentStore
from verityrag.retrieval.hybrid import HybridRetriever
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.text.chunking import chunk_spans
from verityrag.types import (
    AbstainReason,
    Chunk,
    ClaimSupport,
    Document,
    GroundingReport,
    Hit,
    QueryResult,
    TraceStep,
)

logger = logging.getLogger(__name__)

DATA_DIR_ENV = "VERITYRAG_DATA_DIR"
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
        return Document(item["doc_id"], item.get("title", ""), item["text"], dict(item.get("metadata") or {}))
    if isinstance(item, tuple) and len(item) == 3:
        return Document(*item)
    raise InvalidInputError("document", f"expected a Document, mapping or 3-tuple, got {type(item).__name__}")


class VerityRAGPipeline:
    """The whole system behind one object.

    Without ``data_dir`` (or ``VERITYRAG_DATA_DIR``) everything lives in memory.
    With it, documents, chunks and vectors persist in SQLite and the index is
    restored on start without re-embedding (unless the embedder changed).
    """

    def __init__(
        self,
        embedder: Embedder | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        settings: Settings | None = None,
        analyzer: Analyzer = DEFAULT_ANALYZER,
    ) -> None:
        self.settings = settings or Settings.from_env()
        self.analyzer = analyzer
        self.embedder: Embedder = embedder or HashingEmbedder(analyzer=analyzer)
        self.index = LiveIndex(
            dim=self.embedder.dim, analyzer=analyzer, dense_backend=self.settings.dense_backend
        )
        self.retriever = HybridRetriever(
            self.index, self.embedder, fusion=self.settings.fusion, candidates=self.settings.candidates
        )
        self.generator = ExtractiveGenerator(analyzer)
        self._write_lock = threading.Lock()
        resolved = data_dir if data_dir is not None else os.environ.get(DATA_DIR_ENV) or None
        self.data_dir = Path(resolved) if resolved else None
        self.store: SQLiteDocumentStore | None = None
        if self.data_dir is not None:
            self.store = SQLiteDocumentStore(self.data_dir / STORE_FILENAME, self.settings.durability)
            self._restore(self.store)

    # ----------------------------------------------------------------- ingest
    def _validate(self, doc: Document) -> Document:
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
        return doc

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
            self.index.apply(upserts, term_counts=counts)

    def ingest_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, Any] | None = None
    ) -> IngestResult:
        """Add or replace one document. Searchable (and persisted) when this returns."""
        doc = self._validate(Document(doc_id, title, text, metadata or {}))
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
        docs = [self._validate(as_document(item)) for item in documents]
        ids = [d.doc_id for d in docs]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise InvalidInputError("doc_id", f"{dup!r} appears more than once in the batch")
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
        return Document(doc_id, chunks[0].title, text)

    def stats(self) -> dict[str, Any]:
        snap = self.index.snapshot()
        return {
            "documents": self.index.n_documents,
            "chunks": snap.n_live,
            "index_version": snap.version,
            "embedder": self.embedder.fingerprint(),
            "data_dir": str(self.data_dir) if self.data_dir else None,
        }

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
        meta = {
            "embedder": fingerprint,
            "embedder_dim": str(self.embedder.dim),
            "analyzer": self.analyzer.fingerprint(),
        }
        # Every new vector and the fingerprint that describes them in ONE transaction: a
        # crash while re-embedding leaves the old store intact, never half old, half new.
        store.replace_vectors(new_vectors, meta=meta)
        self.index.apply(batch, term_counts=counts)
        logger.info(
            "restored %d documents (%d chunks) from %s in %.2fs",
            self.index.n_documents,
            len(self.index),
            store.path,
            time.perf_counter() - started,
        )

    # ------------------------------------------------------------------ query
    def train_reranker(self) -> VerityRAGPipeline:
        """Train the reranker on the current corpus. (The baseline ranks by fused score.)"""
        return self

    def calibrate(self, questions: Iterable[tuple[str, Sequence[str]]]) -> dict[str, float]:
        """Choose the answer threshold on labelled questions: ``(question, gold answers)``.

        An empty answer list means the corpus cannot answer the question. The
        rule: maximise balanced accuracy, i.e. the mean of (answered and a gold
        answer is in the answer) over answerable questions and (abstained) over
        unanswerable ones. Returns the chosen threshold and its figures.
        """
        from verityrag.eval.metrics import contains_gold

        labelled = list(questions)
        if not labelled:
            raise InvalidInputError("questions", "need at least one labelled question")
        scored: list[tuple[float, bool, bool]] = []  # (support, answerable, correct if answered)
        for question, answers in labelled:
            result = self._answer(question, min_support=0.0)
            text = result.answer or ""
            scored.append((result.confidence, bool(answers), bool(answers) and contains_gold(text, answers)))
        n_pos = sum(1 for _, a, _ in scored if a)
        n_neg = len(scored) - n_pos
        best_t, best_score = self.settings.min_answer_support, -1.0
        for t in sorted({round(s, 6) for s, _, _ in scored} | {0.0, 1.0}):
            good = sum(1 for s, a, c in scored if a and c and s >= t)
            refused = sum(1 for s, a, _ in scored if not a and s < t)
            score = (good / n_pos if n_pos else 0.0) + (refused / n_neg if n_neg else 0.0)
            if score > best_score:
                best_t, best_score = t, score
        self.settings = self.settings.replace(min_answer_support=best_t)
        logger.info("calibrated min_answer_support=%.4f (balanced score %.4f)", best_t, best_score / 2)
        return {"min_answer_support": best_t, "balanced_accuracy": best_score / 2, "questions": len(scored)}

    def query(self, question: str, k: int | None = None) -> QueryResult:
        """Answer with the best evidence sentence and its citation, or abstain with a reason."""
        return self._answer(question, k=k)

    def _answer(self, question: str, k: int | None = None, min_support: float | None = None) -> QueryResult:
        if not isinstance(question, str):
            raise InvalidInputError("question", f"must be a string, got {type(question).__name__}")
        if not question.strip():
            raise InvalidInputError("question", "is empty")
        if len(question) > self.settings.max_query_chars:
            raise InvalidInputError(
                "question", f"is {len(question):,} characters; the limit is {self.settings.max_query_chars:,}"
            )
        trace: list[TraceStep] = []
        snap = self.index.snapshot()
        t0 = time.perf_counter()
        hits = self.retriever.search(question, k or self.settings.top_k, snap)
        t1 = time.perf_counter()
        trace.append(
            TraceStep("retrieve", (t1 - t0) * 1000, {"hits": len(hits), "index_version": snap.version})
        )
        if not hits:
            return _abstain(question, AbstainReason.NO_EVIDENCE, (), trace)
        candidates = self.generator.candidates(question, hits, lambda t: self.index.idf(t, snap))
        t2 = time.perf_counter()
        best = candidates[0] if candidates else None
        support = best.coverage if best else 0.0
        trace.append(
            TraceStep("generate", (t2 - t1) * 1000, {"sentences": len(candidates), "support": support})
        )
        threshold = self.settings.min_answer_support if min_support is None else min_support
        if best is None or support < threshold:
            return _abstain(question, AbstainReason.SUFFICIENCY, tuple(hits), trace, support)
        grounding = GroundingReport(support, (ClaimSupport(best.sentence.text, support),))
        return QueryResult(
            question=question,
            answer=best.sentence.text,
            abstained=False,
            abstain_reason=None,
            grounding=grounding,
            confidence=support,
            sentences=(best.sentence,),
            evidence=tuple(hits),
            trace=tuple(trace),
        )


def _abstain(
    question: str,
    reason: AbstainReason,
    hits: tuple[Hit, ...],
    trace: list[TraceStep],
    confidence: float = 0.0,
) -> QueryResult:
    logger.debug("abstain (%s) on %r at confidence %.3f", reason.value, question, confidence)
    return QueryResult(
        question=question,
        answer=None,
        abstained=True,
        abstain_reason=reason,
        grounding=GroundingReport(0.0),
        confidence=confidence,
        evidence=hits,
        trace=tuple(trace),
    )


def _progress(total: int, desc: str, unit: str, disable: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=disable)
