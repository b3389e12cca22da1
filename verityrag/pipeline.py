"""``VerityRAGPipeline``: the facade users import. It wires the parts and holds no algorithm.

Writes go through :class:`~verityrag.ingest.writer.DocumentWriter` (which owns the durable
store); questions through one :class:`~verityrag.agent.controller.AgentController`, built once
and rebuilt only when the settings of a call or a part (gate, reranker, learned check, answer
strategy) change; calibration is :mod:`verityrag.agent.calibration`'s, learned-check thresholds
:mod:`verityrag.thresholds.learned`'s.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from verityrag.agent.calibration import (
    Calibration,
    check_reranker,
    fit_confidence,
    fit_reader_threshold,
    fit_sufficiency_gate,
)
from verityrag.agent.confidence import ConfidenceModel, shipped_confidence
from verityrag.agent.controller import AgentConfig, AgentController, AgentParts
from verityrag.agent.interfaces import AnswerabilityModel, AnswerCheckModel, AnswerGuard, ReaderCheckModel
from verityrag.agent.questions import check_labelled, check_question
from verityrag.agent.reformulation import Reformulator, SalientTermExpansion, TitleAnchoredRewrite
from verityrag.agent.sufficiency import SufficiencyGate
from verityrag.checks.registry import CHECK_ATTRIBUTES, load_check, requested_checks
from verityrag.config import Settings
from verityrag.embed.embedder import Embedder
from verityrag.embed.hashing import HashingEmbedder
from verityrag.errors import InvalidInputError
from verityrag.generation.extractive import ExtractiveGenerator
from verityrag.generation.llm import LLMGenerator
from verityrag.generation.reading import EvidenceReader, logit
from verityrag.generation.sentence_selector import SentenceSelector
from verityrag.generation.verified import AnswerStrategy, answer_parts
from verityrag.index.collections import collection_filter, narrowed, scoped_filter
from verityrag.index.filters import AnyFilter, as_filter
from verityrag.index.live import LiveIndex
from verityrag.index.protocol import AnyIndex
from verityrag.index.store import SQLiteDocumentStore
from verityrag.ingest.checkpoints import PeriodicCheckpoints
from verityrag.ingest.files import document_from_file
from verityrag.ingest.writer import (
    DATA_DIR_ENV,
    IN_MEMORY,
    STORE_FILENAME,
    DocumentLike,
    DocumentPage,
    DocumentWriter,
    IngestResult,
    as_document,
    resolve_data_dir,
)
from verityrag.retrieval.features import ChunkTermCache
from verityrag.retrieval.hybrid import HybridRetriever
from verityrag.retrieval.reranker import LightGBMReranker, train_ict_reranker
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.thresholds.learned import PairedSufficiency, ScoredCheck, fit_attached_checks
from verityrag.types import Document, QueryResult, TraceStep
from verityrag.verify.grounding import GroundingChecker

logger = logging.getLogger(__name__)

#: What ``calibrate`` fitted, saved beside a persistent index's store and opened with it.
CALIBRATION_FILENAME = "calibration.json"

__all__ = [
    "DATA_DIR_ENV",
    "IN_MEMORY",
    "STORE_FILENAME",
    "DocumentLike",
    "IngestResult",
    "VerityRAGPipeline",
    "as_document",
]


class VerityRAGPipeline:
    """The whole system behind one object.

    Without ``data_dir`` (or with ``IN_MEMORY``) everything lives in memory. With it, documents,
    chunks and vectors persist in SQLite and the index is restored on start without re-embedding
    (unless the embedder changed). Without ``settings``, the defaults: the constructor reads no
    environment; the entry points pass ``Settings.from_env()`` and ``VERITYRAG_DATA_DIR``.
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
        self.settings = settings if settings is not None else Settings()
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
        self.grounding = GroundingChecker(analyzer)
        self.generator, self.answer_strategy = answer_parts(generator, analyzer)
        self._bundled_gate: SufficiencyGate | None = None  # loaded on first use
        self._calibration = Calibration()  # nothing fitted yet
        self.answer_guard: AnswerGuard | None = None
        self.answerability: AnswerabilityModel | None = None
        self.reader_check: ReaderCheckModel | None = None
        self.answer_check: AnswerCheckModel | None = None
        # Where each settings-attached check's threshold comes from: settings or metadata (the
        # calibration's own fits say "calibration").
        self.check_threshold_sources: dict[str, str] = {}
        llm_answers = self.answer_strategy is not None
        for stage, threshold in requested_checks(self.settings, llm_answers).items():
            # Loaded now: a missing model stops the start, not a query.
            self.attach_check(
                stage, load_check(stage, threshold, llm_answers, self.settings), threshold is not None
            )
        # The extractive reader: files checked now (a missing model stops the start), model loaded later.
        self.reader = EvidenceReader.open(self.settings.reader_model) if self.settings.reader else None
        # P(a reply is right): calibrate()'s; until then the one fitted for the shipped gate and reader.
        shipped_parts = self.reader is not None and not self.settings.reader_model and not llm_answers
        self._calibration = Calibration(confidence=shipped_confidence() if shipped_parts else None)
        self.writer = DocumentWriter(
            self.index, self.embedder, analyzer, self.settings, resolve_data_dir(data_dir)
        )
        self._open_saved_calibration()
        # One bound method, kept: the agent's parts are told apart by identity (its cache key).
        self._sources = self.writer.provenance
        self._controller_lock = threading.Lock()
        self._controller_cache: tuple[tuple[Any, ...], AgentController] | None = None
        self._other_retrievers: dict[tuple[str, float], HybridRetriever] = {}
        self._closed = False
        # A persistent index writes its image while it runs too, so a crash replays a bounded tail.
        self._checkpoints: PeriodicCheckpoints | None = None
        store = self.store
        if store is not None and (self.settings.checkpoint_writes or self.settings.checkpoint_seconds):
            self._checkpoints = PeriodicCheckpoints(
                self.writer.checkpoint,
                store.generation,
                self.settings.checkpoint_writes,
                self.settings.checkpoint_seconds,
                open_=lambda: not store.closed,
            )
            self._checkpoints.start()

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
    @property
    def store(self) -> SQLiteDocumentStore | None:
        """The durable store (None: in memory)."""
        return self.writer.store

    @property
    def data_dir(self) -> Path | None:
        return self.writer.data_dir

    def checkpoint(self) -> bool:
        """Write the index image beside the store (``data_dir``): the next start opens it instead of
        re-indexing every stored document. True when the image on disk is of the store as it is
        now; False without a store, or when another process wrote to it (the next start rebuilds
        the index from the store, as it always may)."""
        return self.writer.checkpoint()

    def close(self) -> None:
        """A clean stop: :meth:`checkpoint`, then the store closed (once: a second call does
        nothing). The pipeline is not used after."""
        if self._closed:
            return
        self._closed = True
        if self._checkpoints is not None:
            self._checkpoints.stop()
        if self.store is not None:
            self.checkpoint()
            self.store.close()

    def __enter__(self) -> VerityRAGPipeline:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def validate_document(self, doc: Document) -> Document:
        """The checks ingest runs on a document; returns it as it is stored."""
        return self.writer.validate(doc)

    def ingest_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, Any] | None = None
    ) -> IngestResult:
        """Add or replace one document. Searchable (and persisted) when this returns."""
        return self.writer.write_one(Document(doc_id, title, text, metadata or {}))

    def ingest_documents(
        self, documents: Iterable[DocumentLike], batch_size: int = 512, progress: bool | None = None
    ) -> int:
        """Bulk ingest in one pass. Every document is validated before anything is written.

        Returns the number of documents ingested. A progress bar shows above a
        few hundred documents (``progress=None``) or when asked for.
        """
        return self.writer.write_many(documents, batch_size, progress)

    def ingest_batch(self, documents: Sequence[Document], name: str = "documents") -> list[IngestResult]:
        """Bulk ingest as ``POST /documents`` does: all or nothing, as :meth:`ingest_documents`;
        an invalid document is named where it stands (``documents[3].text``, ``name`` the
        batch's), and each comes back with its chunk count and whether it replaced one."""
        return self.writer.write_batch(documents, name)

    def ingest_file(
        self,
        path: str | os.PathLike[str],
        doc_id: str | None = None,
        title: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> IngestResult:
        """Ingest a file as ``POST /documents/files`` does (:mod:`verityrag.ingest.files`): PDF,
        DOCX, HTML, Markdown, CSV or plain text, parsed by its format; the doc id its name made
        safe, the title the file's own (else its name's stem), ``source``/``title``/``format`` in
        its metadata beside ``metadata``; ``doc_id`` and ``title`` given replace them. A file that
        cannot be read raises :class:`InvalidInputError` (field ``file``) naming it and why."""
        p = Path(path)
        doc, _ = document_from_file(p.name, p.read_bytes(), None, self.settings.max_document_chars, metadata)
        if title is not None:
            doc = dataclasses.replace(doc, title=title, metadata={**doc.metadata, "title": title})
        return self.ingest_document(doc_id or doc.doc_id, doc.title, doc.text, doc.metadata)

    def delete_document(self, doc_id: str) -> bool:
        """Remove a document from the store and both indexes. False if it was not there."""
        return self.writer.delete(doc_id)

    def get_document(self, doc_id: str) -> Document | None:
        return self.writer.get(doc_id)

    def list_documents(
        self,
        filter: AnyFilter = None,
        offset: int = 0,
        limit: int = 50,
        title: str | None = None,
        collection: str | None = None,
    ) -> DocumentPage:
        """``(total, page)``: documents by doc_id without their text; ``filter`` as in :meth:`query`,
        ``title``: only those whose title holds these words (any case), ``collection``: only that
        collection's (``yours``: those added without one)."""
        if collection is not None:
            if not collection.strip():
                raise InvalidInputError("collection", "must be a collection's name")
            chosen = collection_filter(collection.strip(), self.writer.metadata_index)
            filter = narrowed(as_filter(filter), chosen)
        return self.writer.list_documents(filter, offset, limit, title)

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

    # ------------------------------------------------------- learned checks
    def attach_check(self, stage: str, check: Any, fixed_threshold: bool = False) -> None:
        """Attach a learned check at its ``stage`` (``answerability``, ``guard``, ``reader``);
        ``fixed_threshold``: its threshold is the caller's, ``calibrate`` leaves it alone."""
        if stage not in CHECK_ATTRIBUTES:
            raise InvalidInputError("stage", f"must be one of {', '.join(CHECK_ATTRIBUTES)}, got {stage!r}")
        setattr(self, CHECK_ATTRIBUTES[stage], check)
        self.check_threshold_sources[stage] = "settings" if fixed_threshold else "metadata"
        # A threshold calibrate fitted was the previous check's.
        fitted = {k: v for k, v in self._calibration.check_thresholds.items() if k != stage}
        self._calibration = dataclasses.replace(self._calibration, check_thresholds=fitted)

    def checks(self) -> dict[str, Any]:
        """The learned checks attached, by stage, in the agent's order."""
        out = {}
        for stage, attribute in CHECK_ATTRIBUTES.items():
            check = getattr(self, attribute)
            if check is not None:
                out[stage] = check
        return out

    def learned_checks(self) -> dict[str, dict[str, Any]]:
        """The learned checks attached (in the agent's order): threshold, where it came from, model folder.

        ``threshold_from`` is ``settings``, ``calibration`` or ``metadata`` for checks the
        settings attached, ``attached`` for ones set on the pipeline directly. An answerability
        check fitted by the joint rule also has ``sufficiency_threshold``: the sufficiency
        gate's threshold while it is attached.
        """
        out = {}
        for stage, check in self.checks().items():
            model_dir = getattr(check, "model_dir", None)
            out[stage] = {
                "threshold": float(check.threshold),
                "threshold_from": (
                    "calibration"
                    if stage in self._calibration.check_thresholds
                    else self.check_threshold_sources.get(stage, "attached")
                ),
                "model_dir": str(model_dir) if model_dir is not None else None,
            }
            paired = self.paired_threshold() if stage == "answerability" else None
            if paired is not None:
                out[stage]["sufficiency_threshold"] = paired
        return out

    # ------------------------------------------------------------------ query
    @property
    def selector(self) -> SentenceSelector:
        """The generator's learned sentence selector (the bundled default, loaded on first use)."""
        return self.generator.selector

    @property
    def calibration(self) -> Calibration:
        """What ``train_reranker`` and ``calibrate`` fitted (or :meth:`use_calibration` gave)."""
        return self._calibration

    def use_calibration(self, calibration: Calibration) -> VerityRAGPipeline:
        """Build the agent from ``calibration`` from now on (for the same corpus and models); a
        persistent index keeps it beside its store."""
        self._apply_calibration(calibration)
        self._save_calibration()
        return self

    def _apply_calibration(self, calibration: Calibration) -> None:
        self._calibration = calibration
        for stage, threshold in calibration.check_thresholds.items():
            check = self.checks().get(stage)
            if check is not None and self.check_threshold_sources.get(stage) != "settings":
                check.threshold = threshold

    @property
    def gate(self) -> SufficiencyGate:
        """The sufficiency gate: the bundled default until ``calibrate`` fits one on your questions."""
        if self._calibration.gate is not None:
            return self._calibration.gate
        if self._bundled_gate is None:
            self._bundled_gate = SufficiencyGate.default()
        return self._bundled_gate

    @property
    def reranker(self) -> LightGBMReranker | None:
        """The reranker ``train_reranker`` fitted (None: retrieval's order)."""
        return self._calibration.reranker

    @property
    def reformulate(self) -> bool:
        """Whether the agent may reformulate: as calibrate chose, else as the gate's own fit did (its
        threshold was chosen with or without the loop)."""
        if self._calibration.reformulate is not None:
            return self._calibration.reformulate
        return bool(self.gate.fit_summary_.get("reformulation", {}).get("used", True))

    @property
    def confidence_model(self) -> ConfidenceModel | None:
        """What a reply's ``confidence`` is fitted by (None: the gate's probability)."""
        return self._calibration.confidence

    @property
    def sufficiency_threshold(self) -> float:
        """The sufficiency gate's threshold the agent applies now: the one ``calibrate`` fitted together
        with the answerability check while that check is attached, else the gate's own."""
        paired = self.paired_threshold()
        return self.gate.threshold_ if paired is None else paired

    def paired_threshold(self) -> float | None:
        """The sufficiency threshold fitted together with the answerability check, while that
        check is attached; else None (the gate's own applies)."""
        paired = self._calibration.paired_sufficiency
        if paired is None or self.answerability is None or paired.check is not self.answerability:
            return None
        return paired.threshold

    @property
    def reader_logit_threshold(self) -> float:
        """The reader's answer threshold on the answer logit at the balanced level: the setting,
        else what ``calibrate`` fitted, else the model's own (0: an answer preferred to none)."""
        if self.settings.reader_answer_threshold is not None:
            return logit(self.settings.reader_answer_threshold)
        if self._calibration.reader_logit_threshold is not None:
            return self._calibration.reader_logit_threshold
        metadata = getattr(self.reader.model, "metadata", None) if self.reader is not None else None
        return logit(float(metadata.threshold)) if metadata is not None else 0.0

    def warm_up(self) -> VerityRAGPipeline:
        """Load the models a first query would (the reader, the selector, the gate)."""
        if self.reader is not None:
            self.reader.warm_up()
        _ = self.selector, self.gate
        return self

    def _reformulators(self) -> list[Reformulator]:
        return [SalientTermExpansion(self._chunk_terms, self.index.idf), TitleAnchoredRewrite()]

    def agent_config(
        self,
        settings: Settings,
        sufficiency_threshold: float | None,
        reader_logit_threshold: float | None = None,
    ) -> AgentConfig:
        """How an agent over this pipeline decides: ``settings`` and what calibration fitted."""
        return AgentConfig(
            max_reformulations=settings.max_reformulations if self.reformulate else 0,
            max_hops=settings.max_hops,
            candidates=settings.candidates,
            top_k=settings.top_k,
            signal_floor=settings.reformulation_signal_floor,
            strictness=settings.strictness,
            verify=settings.verify,
            min_sources=settings.min_sources,
            sufficiency_threshold=sufficiency_threshold,
            reader_logit_threshold=(
                self.reader_logit_threshold if reader_logit_threshold is None else reader_logit_threshold
            ),
            reader_subjects=settings.reader_subjects,
            report_conflicts=settings.report_conflicts,
            conflict_reader_logit_threshold=self.reader_logit_threshold,
            gate_min_chunks=settings.gate_min_chunks,
        )

    def _agent_parts(
        self, settings: Settings, gate: SufficiencyGate | None, checks: Mapping[str, Any]
    ) -> AgentParts:
        retriever = self.retriever
        fused = (settings.fusion, settings.dense_weight)
        if fused != (retriever.fusion, retriever.dense_weight):
            # One per fusion setting, kept: the agent built over it is cached by its parts.
            if fused not in self._other_retrievers:
                self._other_retrievers[fused] = HybridRetriever(
                    self.index,
                    self.embedder,
                    settings.fusion,
                    retriever.candidates,
                    dense_weight=settings.dense_weight,
                )
            retriever = self._other_retrievers[fused]
        return AgentParts(
            index=self.index,
            retriever=retriever,
            sentence_ranker=self.generator,
            gate=gate,
            grounding=self.grounding,
            cache=self._chunk_terms,
            reranker=self.reranker if self._calibration.use_reranker else None,
            answer_guard=checks.get("guard"),
            answerability=checks.get("answerability"),
            reader_check=checks.get("reader"),
            answer_check=checks.get("answer_check"),
            answer_strategy=self.answer_strategy,
            reader=self.reader,
            confidence=self.confidence_model,
            sources=self._sources,
        )

    def _build_controller(
        self,
        settings: Settings,
        gate: SufficiencyGate | None,
        checks: Mapping[str, Any],
        sufficiency_threshold: float | None,
        reader_logit_threshold: float | None = None,
    ) -> AgentController:
        return self._agent_parts(settings, gate, checks).controller(
            self._reformulators(), self.agent_config(settings, sufficiency_threshold, reader_logit_threshold)
        )

    def new_controller(self, settings: Settings | None = None) -> AgentController:
        """A new agent over the pipeline's parts as they are now (not the one :meth:`query` reuses):
        one to change without changing the pipeline's."""
        return self._build_controller(
            settings or self.settings, self.gate, self.checks(), self.paired_threshold()
        )

    def controller(self, settings: Settings | None = None) -> AgentController:
        """The agent for ``settings`` (default: the pipeline's): built once, and again only when its
        config or one of its parts (gate, reranker, learned checks, reader, answer strategy,
        confidence model) changes."""
        s = settings or self.settings
        parts = self._agent_parts(s, self.gate, self.checks())
        key = (parts.identity(), self.agent_config(s, self.paired_threshold()))
        with self._controller_lock:
            cached = self._controller_cache
            if cached is not None and cached[0] == key:
                return cached[1]
            built = parts.controller(self._reformulators(), key[1])
            if s is self.settings or s == self.settings:
                self._controller_cache = (key, built)
            return built

    def query_with(
        self,
        question: str,
        checks: Mapping[str, ScoredCheck],
        sufficiency_threshold: float | None,
        reader_logit_threshold: float | None = None,
    ) -> QueryResult:
        """One question through the agent with exactly ``checks`` attached (by stage), the
        sufficiency gate at ``sufficiency_threshold`` (None: its own) and the reader's threshold at
        ``reader_logit_threshold`` (on the answer logit; None: its own): how thresholds are fitted and
        swept (:mod:`verityrag.thresholds.learned`) without touching the pipeline."""
        check_question("question", question, self.settings.max_query_chars)
        return self._build_controller(
            self.settings, self.gate, checks, sufficiency_threshold, reader_logit_threshold
        ).run(question)

    def reader_open_query(self) -> Callable[[str], QueryResult]:
        """``query`` with the reader refusing nothing for want of confidence (a span of the wrong kind
        still is): one pass gives every reader threshold's outcome, as the reader only ever turns
        an answer into an abstention."""
        checks, paired = self.checks(), self.paired_threshold()
        return lambda question: self.query_with(question, checks, paired, reader_logit_threshold=-math.inf)

    def train_reranker(self, n_queries: int = 800, seed: int = 0) -> VerityRAGPipeline:
        """Train the LightGBM reranker on the current corpus by inverse-cloze-task weak supervision.

        Sentences of the corpus, each reduced to a random part of its words, are
        the queries; the chunks that hold the sentence are the positives.
        """
        started = time.perf_counter()
        trained = train_ict_reranker(
            self.index, self.retriever, self._chunk_terms, self.settings.candidates, n_queries, seed
        )
        if trained is None:
            # A corpus this small has nothing to rerank; retrieval order stands.
            logger.warning("corpus too small to train a reranker (no pseudo-query had negatives)")
            return self
        self._calibration = dataclasses.replace(self._calibration, reranker=trained)
        logger.info("reranker trained in %.2fs", time.perf_counter() - started)
        self._save_calibration()
        return self

    def calibrate(
        self,
        questions: Iterable[tuple[str, Sequence[str]]],
        reader_questions: Iterable[tuple[str, Sequence[str]]] = (),
        refit_reader: bool = True,
    ) -> dict[str, Any]:
        """Fit the sufficiency gate on labelled questions: ``(question, gold answers)``.

        An empty answer list means the corpus cannot answer the question. The gate learns, per
        ``Settings.gate_label``, whether a gold answer is in the evidence the generator reads
        (``evidence``, the default) or in the answer it would give (``answer``); its threshold
        follows ``Settings.abstention_target`` (see :mod:`verityrag.agent.calibration`).

        Given ``reader_questions`` (on-topic questions the documents do not answer, which the gate
        must not learn to refuse on topic alone), the reader's threshold (unless the settings fix
        it, or ``refit_reader=False`` keeps the one in effect) is refitted on them and ``questions``
        where a wrong answer stops paying (:func:`~verityrag.agent.calibration.choose_reader_threshold`);
        without, the model's own.

        Learned checks the settings attached with an open threshold then get theirs by the
        main eval's rule (:mod:`verityrag.thresholds.learned`): the labelled questions are run
        through the whole agent once per check. Not with an LLM answer strategy (that would
        call the LLM once per question and check): those keep the thresholds their model
        folders recorded (the guard's and the reader's were fitted on LLM answers).

        Last, every labelled question is asked of the agent so fitted, and a reply's
        ``confidence`` becomes the probability that it is right, fitted on those replies
        (:mod:`verityrag.agent.confidence`; not with an LLM answer strategy).
        """
        labelled = list(questions)
        for_reader = list(reader_questions)
        if not labelled:
            raise InvalidInputError("questions", "need at least one labelled question")
        check_labelled(labelled, self.settings.max_query_chars)
        check_labelled(for_reader, self.settings.max_query_chars, "reader_questions")
        if len(self.index) == 0:
            # Every question would find nothing and be labelled wrong: "need both correct and
            # incorrect examples" said nothing of the cause.
            raise InvalidInputError("corpus", "is empty: ingest documents before calibrate()")
        use_reranker, reranker_check = check_reranker(
            self.reranker or LightGBMReranker(),
            self.retriever,
            self.index,
            self._chunk_terms,
            labelled,
            self.settings.candidates,
        )
        # The fold agents loop as the settings allow.
        self._calibration = dataclasses.replace(
            self._calibration, use_reranker=use_reranker, reformulate=True
        )
        checks = self.checks()
        fit = fit_sufficiency_gate(
            self._build_controller(self.settings, None, checks, None),
            labelled,
            self.settings,
            lambda gate: self._build_controller(self.settings, gate, checks, None),
        )
        self._calibration = dataclasses.replace(
            self._calibration,
            gate=fit.gate,
            reformulate=fit.reformulate,
            # They were fitted with the gate this one replaces.
            paired_sufficiency=None,
            check_thresholds={},
        )
        summary: dict[str, Any] = dict(fit.summary)
        loop: dict[str, Any] = {
            k: summary.pop(k) for k in ("reformulation", "threshold_single_attempt") if k in summary
        }
        summary = {**summary, "reranker": reranker_check, **loop}
        if self.reader is not None and self.settings.reader_answer_threshold is None and not refit_reader:
            summary["reader"] = {
                "fitted": False,
                "reason": "refit_reader=False: the threshold in effect is kept",
            }
        elif self.reader is not None and self.settings.reader_answer_threshold is None:
            if self.answer_strategy is None and for_reader:
                summary["reader"] = self._fit_reader_threshold(labelled + for_reader)
            else:  # with an LLM strategy the fit would call the LLM once per question
                self._calibration = dataclasses.replace(self._calibration, reader_logit_threshold=None)
                reason = "LLM answers" if for_reader else "no reader_questions"
                summary["reader"] = {"fitted": False, "reason": f"{reason}: the model's threshold is kept"}
        # Settings-attached checks without a fixed threshold get the main eval's rule, fitted here
        # with the gate just fitted (checks set on the pipeline directly are the caller's to tune).
        unfixed = [stage for stage, src in self.check_threshold_sources.items() if src != "settings"]
        if unfixed and self.answer_strategy is not None:
            # The fit would call the LLM once per answerable question and check: keep the
            # thresholds recorded for LLM answers (verityrag.thresholds.learned).
            summary["learned_checks"] = {
                stage: {
                    "threshold": checks[stage].threshold,
                    "fitted": False,
                    "reason": "LLM answers: the model folder's threshold is kept",
                }
                for stage in unfixed
            }
        elif unfixed:
            summary["learned_checks"] = self._fit_check_thresholds(labelled, unfixed)
            logger.info("learned check thresholds: %s", summary["learned_checks"])
        # The replies below are the agent's without it.
        self._calibration = dataclasses.replace(self._calibration, confidence=None)
        if self.answer_strategy is None:  # with an LLM it would be called once per question
            confidence, summary["confidence"] = fit_confidence(self.query, labelled + for_reader)
            self._calibration = dataclasses.replace(self._calibration, confidence=confidence)
        self._save_calibration()
        return summary

    def _fit_check_thresholds(
        self, labelled: Sequence[tuple[str, Sequence[str]]], stages: Sequence[str]
    ) -> dict[str, dict[str, Any]]:
        fit = fit_attached_checks(self, labelled, stages)
        checks = self.checks()
        for stage, threshold in fit.thresholds.items():
            checks[stage].threshold = threshold
        fitted = {stage: t for stage, t in fit.thresholds.items() if fit.report[stage]["fitted"]}
        paired = self._calibration.paired_sufficiency
        if "answerability" in fit.thresholds:
            found = fit.paired_sufficiency
            paired = PairedSufficiency(checks["answerability"], found) if found is not None else None
        self._calibration = dataclasses.replace(
            self._calibration,
            check_thresholds={**self._calibration.check_thresholds, **fitted},
            paired_sufficiency=paired,
        )
        return fit.report

    def _fit_reader_threshold(self, labelled: Sequence[tuple[str, Sequence[str]]]) -> dict[str, Any]:
        # The open query below must not depend on an old fit.
        self._calibration = dataclasses.replace(self._calibration, reader_logit_threshold=None)
        probability, fit = fit_reader_threshold(self.reader_open_query(), labelled)
        self._calibration = dataclasses.replace(self._calibration, reader_logit_threshold=logit(probability))
        logger.info("reader threshold: %s", fit)
        return fit

    def calibration_state(self) -> dict[str, Any]:
        """What ``train_reranker`` and ``calibrate`` fitted, as JSON, to restore with
        :meth:`load_calibration_state` (a service starts without calibrating again)."""
        return self._calibration.to_dict()

    def load_calibration_state(self, state: Mapping[str, Any]) -> VerityRAGPipeline:
        """Restore what :meth:`calibration_state` saved (for the same corpus and models). It stays
        where it was saved: a service that restores a cached calibration at every start (``make
        run``'s bundled one) does not write it beside its store again each time."""
        self._apply_calibration(Calibration.from_dict(state, self.answerability))
        return self

    def _calibration_file(self) -> Path | None:
        return self.data_dir / CALIBRATION_FILENAME if self.data_dir is not None else None

    def _save_calibration(self) -> None:
        """Write the calibration beside the store (a persistent index): the next start opens it."""
        path = self._calibration_file()
        if path is None:
            return
        saved = {"calibration": self.calibration_state(), "embedder": self.embedder.fingerprint()}
        partial = path.with_name(path.name + ".partial")
        with partial.open("w", encoding="utf-8") as out:
            json.dump(saved, out)
            out.flush()
            os.fsync(out.fileno())  # whole before it replaces the one saved before
        partial.replace(path)

    def _open_saved_calibration(self) -> None:
        """Open the calibration saved beside the store, when it was fitted with this embedder; one
        unusable is left for the next ``calibrate`` to write over, and said."""
        path = self._calibration_file()
        if path is None or not path.is_file():
            return
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            if saved.get("embedder") != self.embedder.fingerprint():
                raise InvalidInputError("calibration", "was fitted with another embedder")
            self._apply_calibration(Calibration.from_dict(saved["calibration"], self.answerability))
        except (ValueError, KeyError, TypeError, InvalidInputError) as exc:
            logger.warning(
                "calibration saved at %s not used (%s): the defaults apply until calibrate()", path, exc
            )

    def query(
        self,
        question: str,
        k: int | None = None,
        settings: Settings | None = None,
        on_stage: Callable[[TraceStep], None] | None = None,
        filter: AnyFilter = None,
        collection: str | None = None,
    ) -> QueryResult:
        """Answer with a cited evidence sentence, or abstain with a recorded reason.

        ``k`` is how many evidence chunks to keep (``Settings.top_k``); ``settings``
        overrides the pipeline's settings for this call (e.g.
        ``pipeline.settings.replace(strictness="strict")``): the query-time fields only,
        ``top_k``, ``candidates``, ``fusion``, ``dense_weight``, ``verify``, ``strictness``,
        ``max_reformulations``, ``max_hops``, ``reformulation_signal_floor`` and ``max_query_chars``. The
        others act where they are used: chunking and limits on ingest, ``abstention_target``
        and ``gate_label`` in :meth:`calibrate`, the index backend and the learned checks when
        the pipeline is built. ``on_stage`` is called with each trace step as it is recorded
        (input errors are raised before the first). An answer's citations carry their documents'
        source and ingest time; ``min_sources`` asks for corroboration (verify.sources). ``filter``:
        only documents whose metadata matches (:mod:`verityrag.index.filters`), inside retrieval.
        ``collection``: which documents (:func:`verityrag.index.collections.scoped_filter`): a
        collection's name, ``all``, or None / ``auto``: yours when there are any, the bundled
        ``demo`` collection only when nothing else is there (with no ``demo``: every document).
        """
        # Every front end's choice of documents, resolved here (before the question is checked,
        # so a bad filter or collection is named first, as the API always did).
        filter = scoped_filter(collection, as_filter(filter), self.writer.metadata_index)
        s = settings or self.settings
        if k is not None:
            s = s.replace(top_k=k)
        check_question("question", question, s.max_query_chars)
        doc_ids = self.writer.matching(filter)  # None: no filter
        return self.controller(s).run(question, on_stage=on_stage, doc_ids=doc_ids)
