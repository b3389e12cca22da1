"""The bundled corpus as a ready pipeline: the one setup the terminal app, the API, the
Streamlit demo and the MCP server share, so they all answer the same way.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from verityrag.eval.dataset import DEFAULT_DATA_DIR, load_corpus, load_questions
from verityrag.pipeline import VerityRAGPipeline
from verityrag.types import Document

logger = logging.getLogger(__name__)

CORPUS_FILE = "corpus.jsonl"
CALIBRATION_FILE = Path("questions") / "calibration.jsonl"


def bundled_documents(data_dir: Path = DEFAULT_DATA_DIR, exclude_prefix: str | None = None) -> list[Document]:
    """data/built/corpus.jsonl (``make data``), without the documents whose id starts with ``exclude_prefix``."""
    docs = load_corpus(data_dir / CORPUS_FILE)
    if exclude_prefix:
        docs = [d for d in docs if not d.doc_id.startswith(exclude_prefix)]
    return docs


def load_bundled_corpus(
    pipeline: VerityRAGPipeline,
    max_docs: int | None = None,
    data_dir: Path = DEFAULT_DATA_DIR,
    exclude_prefix: str | None = None,
) -> int:
    """Ingest the bundled corpus (its first ``max_docs`` documents) if the index is empty."""
    if pipeline.index.n_documents > 0:
        logger.info("index holds %d documents: bundled corpus not loaded", pipeline.index.n_documents)
        return 0
    started = time.perf_counter()
    docs = bundled_documents(data_dir, exclude_prefix)
    if max_docs is not None:
        docs = docs[:max_docs]
    n = pipeline.ingest_documents(docs, progress=False)
    logger.info("ingested %d bundled documents in %.2fs", n, time.perf_counter() - started)
    return n


def calibrate_on_bundled(pipeline: VerityRAGPipeline, data_dir: Path = DEFAULT_DATA_DIR) -> None:
    """Train the ICT reranker on the corpus, fit the gate on the calibration questions and choose
    the reader's threshold.

    The gate learns from the answerable and held-out-topic questions; the in-domain unanswerable
    ones (on topic, not answered by the documents) only take part in choosing the reader's
    threshold: a gate taught to refuse them on topic alone would refuse answerable ones too.
    """
    pipeline.train_reranker()
    calib = load_questions(data_dir / CALIBRATION_FILE)
    in_domain = [q for q in calib if q.kind == "unanswerable_in_domain"]
    pipeline.calibrate(
        [(q.question, q.answers) for q in calib if q.kind != "unanswerable_in_domain"],
        reader_questions=[(q.question, q.answers) for q in in_domain],
    )


def holds_bundled_corpus(pipeline: VerityRAGPipeline, docs: Sequence[Document]) -> bool:
    """The index holds exactly these documents (by id): the bundled questions fit it."""
    index = pipeline.index
    return index.n_documents == len(docs) and all(index.has_document(d.doc_id) for d in docs)


def bundled_pipeline(
    data_dir: Path = DEFAULT_DATA_DIR,
    *,
    store_dir: str | os.PathLike[str] | None = None,
    exclude_prefix: str | None = None,
    calibrate: bool = True,
    factory: Callable[[], VerityRAGPipeline] | None = None,
) -> VerityRAGPipeline:
    """A pipeline over the bundled corpus, calibrated unless ``calibrate=False``.

    ``store_dir`` persists it (None: ``VERITYRAG_DATA_DIR`` when set; ``IN_MEMORY``: never);
    ``exclude_prefix`` holds documents back (the streaming demo streams them in later);
    ``factory`` builds the empty pipeline (default: from settings). A store that already holds
    other documents keeps them, unloaded and uncalibrated: the bundled questions are about the
    bundled corpus, and a gate fitted on them against other documents would refuse everything.
    """
    pipeline = factory() if factory is not None else VerityRAGPipeline(data_dir=store_dir)
    load_bundled_corpus(pipeline, data_dir=data_dir, exclude_prefix=exclude_prefix)
    if not calibrate:
        return pipeline
    if holds_bundled_corpus(pipeline, bundled_documents(data_dir, exclude_prefix)):
        calibrate_on_bundled(pipeline, data_dir)
    else:
        logger.warning(
            "the index holds %d documents that are not the bundled corpus: not calibrated on the bundled "
            "questions (the shipped gate stands; calibrate on questions about your documents)",
            pipeline.index.n_documents,
        )
    return pipeline
