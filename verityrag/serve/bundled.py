"""The bundled corpus as a ready pipeline: the one setup the terminal app, the API, the
Streamlit demo and the MCP server share, so they all answer the same way.

The bundled documents go into the ``demo`` collection on a first start (an empty index never
given them before), so a question asks the user's own documents once there are any
(:mod:`verityrag.index.collections`). The calibration is fitted on the bundled corpus alone and
applied to whatever the index holds: a user's documents beside it, or instead of it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from verityrag.agent.calibration import CALIBRATION_FORMAT
from verityrag.config import Settings
from verityrag.errors import VerityRAGError
from verityrag.index.collections import COLLECTION_KEY
from verityrag.models.folder import RESOURCES_DIR
from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR, EvalQuestion, load_corpus, load_questions
from verityrag.types import Document

logger = logging.getLogger(__name__)

CORPUS_FILE = "corpus.jsonl"
CALIBRATION_FILE = Path("questions") / "calibration.jsonl"
#: Written into a persistent index's folder once the demo collection is loaded: a restart, or
#: an index whose demo the user removed, is not given it again.
DEMO_LOADED_MARKER = "demo-collection-loaded"


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
    collection: str | None = None,
) -> int:
    """Ingest the bundled corpus (its first ``max_docs`` documents) if the index is empty; with
    ``collection``, each document's metadata names it, and a persistent index gets the corpus
    once: never again after its first start (the user may have removed it)."""
    marker = Path(pipeline.data_dir) / DEMO_LOADED_MARKER if pipeline.data_dir and collection else None
    if pipeline.index.n_documents > 0 or (marker is not None and marker.exists()):
        logger.info("index holds %d documents: bundled corpus not loaded", pipeline.index.n_documents)
        return 0
    started = time.perf_counter()
    docs = bundled_documents(data_dir, exclude_prefix)
    if max_docs is not None:
        docs = docs[:max_docs]
    if collection:
        docs = [Document(d.doc_id, d.title, d.text, {**d.metadata, COLLECTION_KEY: collection}) for d in docs]
    n = pipeline.ingest_documents(docs, progress=False)
    if marker is not None:
        marker.write_text(f"{collection}: {n} documents\n", encoding="utf-8")
    logger.info("ingested %d bundled documents in %.2fs", n, time.perf_counter() - started)
    return n


#: What :func:`calibrate_on_split` fits from which questions; a change refits saved calibrations.
SPLIT_RECIPE = "gate: answerable+held_out; confidence: all; reader: model threshold"


def calibration_key(pipeline: VerityRAGPipeline, data_dir: Path) -> str:
    """What a calibration on the bundled corpus depends on: the corpus and the questions, the
    settings (chunking among them), the analyzer, the embedder and every shipped model file (its
    size and time), and this version; not what else ``pipeline``'s index holds."""
    import dataclasses

    import verityrag

    digest = hashlib.sha256()
    for part in (
        CALIBRATION_FORMAT,
        SPLIT_RECIPE,
        getattr(verityrag, "__version__", ""),
        json.dumps(dataclasses.asdict(pipeline.settings), sort_keys=True, default=str),
        pipeline.analyzer.fingerprint(),
        pipeline.embedder.fingerprint(),
    ):
        digest.update(part.encode("utf-8"))
    for path in (data_dir / CORPUS_FILE, data_dir / CALIBRATION_FILE):  # the texts behind the ids
        digest.update(path.read_bytes())
    resources = RESOURCES_DIR
    for path in sorted(p for p in resources.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(resources)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


def calibration_path(pipeline: VerityRAGPipeline, data_dir: Path = DEFAULT_DATA_DIR) -> Path:
    """Where :func:`calibrate_on_bundled` keeps the calibration of ``pipeline``'s index."""
    return data_dir / "calibration" / f"{calibration_key(pipeline, data_dir)}.json"


def calibrate_on_bundled(
    pipeline: VerityRAGPipeline, data_dir: Path = DEFAULT_DATA_DIR, cache: bool = True
) -> None:
    """:func:`fit_on_bundled`, or its saved result: the calibration is saved under
    ``data_dir/calibration`` keyed by :func:`calibration_key`, so the next start (the app, the
    API, the MCP server) takes a fraction of a second instead of a minute."""
    if not cache or pipeline.checks():  # learned checks' fits are not saved: fit every time
        fit_on_bundled(pipeline, data_dir)
        return
    path = calibration_path(pipeline, data_dir)
    if restore_calibration(pipeline, path):
        return
    fit_on_bundled(pipeline, data_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(pipeline.calibration_state()), encoding="utf-8")
    partial.replace(path)
    logger.info("calibration saved to %s", path)


def restore_calibration(pipeline: VerityRAGPipeline, path: Path) -> bool:
    """Load the calibration saved at ``path`` into ``pipeline``; False when there is none, or it
    is damaged or of an older format (then it is fitted again and saved over)."""
    if not path.is_file():
        return False
    try:
        pipeline.load_calibration_state(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, KeyError, VerityRAGError) as exc:
        logger.warning("saved calibration %s unusable (%s): fitting again", path, exc)
        return False
    logger.info("calibration restored from %s", path)
    return True


def fit_on_bundled(pipeline: VerityRAGPipeline, data_dir: Path = DEFAULT_DATA_DIR) -> None:
    """Train the ICT reranker on the corpus and calibrate on the bundled calibration questions
    (:func:`calibrate_on_split`)."""
    pipeline.train_reranker()
    calibrate_on_split(pipeline, load_questions(data_dir / CALIBRATION_FILE))


def calibrate_on_split(pipeline: VerityRAGPipeline, questions: Sequence[EvalQuestion]) -> dict[str, Any]:
    """``pipeline.calibrate`` on a calibration split; its summary.

    The gate learns from the answerable and held-out-topic questions; the in-domain unanswerable
    ones (on topic, not answered by the documents) are left out: a gate taught to refuse them on
    topic alone would refuse answerable ones too. With the others they fit ``confidence``: fitted
    without them, a refusal on topic looked wrong (ECE 0.187 on the test split; 0.052 with them).
    The reader keeps the threshold in effect (its model's own, decision 0060): ``calibrate`` does
    not refit it on them.
    """
    on_topic = [q for q in questions if q.kind == "unanswerable_in_domain"]
    return pipeline.calibrate(
        [(q.question, q.answers) for q in questions if q.kind != "unanswerable_in_domain"],
        [(q.question, q.answers) for q in on_topic],
        refit_reader=False,
    )


def holds_bundled_corpus(pipeline: VerityRAGPipeline, docs: Sequence[Document]) -> bool:
    """The index holds exactly these documents (by id): the bundled questions fit it."""
    index = pipeline.index
    return index.n_documents == len(docs) and all(index.has_document(d.doc_id) for d in docs)


def apply_bundled_calibration(pipeline: VerityRAGPipeline, data_dir: Path = DEFAULT_DATA_DIR) -> None:
    """Give ``pipeline``, whatever its index holds, the calibration fitted on the bundled corpus
    alone (saved, else fitted once on an in-memory copy of it and saved): the bundled questions
    are about the bundled corpus, and fitted against other documents the gate refused everything.
    Learned checks keep the thresholds of their folders or settings then."""
    if restore_calibration(pipeline, calibration_path(pipeline, data_dir)):
        return
    alone = VerityRAGPipeline(pipeline.embedder, IN_MEMORY, pipeline.settings, pipeline.analyzer)
    for stage, check in pipeline.checks().items():
        alone.attach_check(stage, check, pipeline.check_threshold_sources.get(stage) == "settings")
    load_bundled_corpus(alone, data_dir=data_dir)
    calibrate_on_bundled(alone, data_dir)
    pipeline.load_calibration_state(alone.calibration_state())
    logger.info(
        "calibrated on the bundled corpus alone (the index holds %d documents)", pipeline.index.n_documents
    )


def bundled_pipeline(
    data_dir: Path = DEFAULT_DATA_DIR,
    *,
    store_dir: str | os.PathLike[str] | None = None,
    exclude_prefix: str | None = None,
    calibrate: bool = True,
    factory: Callable[[], VerityRAGPipeline] | None = None,
    collection: str | None = None,
    settings: Settings | None = None,
) -> VerityRAGPipeline:
    """A pipeline over the bundled corpus, calibrated unless ``calibrate=False``.

    ``store_dir`` persists it (None or ``IN_MEMORY``: never; the entry points pass
    ``VERITYRAG_DATA_DIR``'s); ``exclude_prefix`` holds documents back (the streaming demo streams
    them in later); ``factory`` builds the empty pipeline (default: from ``settings``, whose
    default is ``Settings()``; the entry points pass ``Settings.from_env()``); ``collection`` (e.g.
    ``demo``) names the bundled documents' collection, loaded on a persistent index's first start
    only. An index that holds more, or other, documents is given the calibration fitted on the
    bundled corpus alone (:func:`apply_bundled_calibration`).
    """
    pipeline = factory() if factory is not None else VerityRAGPipeline(data_dir=store_dir, settings=settings)
    load_bundled_corpus(pipeline, data_dir=data_dir, exclude_prefix=exclude_prefix, collection=collection)
    if not calibrate:
        return pipeline
    if holds_bundled_corpus(pipeline, bundled_documents(data_dir, exclude_prefix)):
        calibrate_on_bundled(pipeline, data_dir)
    else:
        apply_bundled_calibration(pipeline, data_dir)
    return pipeline
