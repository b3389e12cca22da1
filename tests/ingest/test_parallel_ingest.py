"""Bulk ingest on both cores (verityrag.ingest.parallel): the worker processes make the same index
as preparing in process does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from verityrag import Settings, VerityRAGPipeline
from verityrag.eval.benchmarks import SyntheticDocs
from verityrag.ingest import parallel, writer
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.bundled_corpus import load_corpus

pytestmark = pytest.mark.integration  # the workers' results come back over a pipe

CORPUS = Path(__file__).resolve().parents[2] / "data" / "built" / "corpus.jsonl"


def _built(workers: int, docs: list, monkeypatch: pytest.MonkeyPatch) -> VerityRAGPipeline:
    monkeypatch.setattr(parallel.WorkerPool, "__init__", lambda self, n=None: _init(self, workers))
    pipeline = VerityRAGPipeline(settings=Settings(reader=False), data_dir=IN_MEMORY)
    pipeline.ingest_documents(docs, progress=False)
    return pipeline


def _init(pool: parallel.WorkerPool, workers: int) -> None:
    pool.workers = workers


def test_the_workers_build_the_index_preparing_in_process_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    if not CORPUS.exists():
        pytest.skip("make data builds the bundled corpus")
    maker = SyntheticDocs(load_corpus(CORPUS), seed=3)
    monkeypatch.setattr(writer, "PARALLEL_MIN_DOCUMENTS", 2000)  # the default takes 20,000
    docs = [maker.make() for _ in range(2010)]
    started: list[int] = []
    original = parallel.WorkerPool.prepare

    def counted(self: parallel.WorkerPool, preparer: parallel.Preparer, batches: list) -> list:
        started.append(len(batches))
        return original(self, preparer, batches)

    monkeypatch.setattr(parallel.WorkerPool, "prepare", counted)
    # The suite's other tests leave threads behind (servers, pools); the workers only run the
    # preparer, which takes none of their locks.
    monkeypatch.setattr(parallel, "_other_threads", list)
    in_process = _built(1, docs, monkeypatch)
    assert started == []
    on_workers = _built(2, docs, monkeypatch)
    assert len(started) == 1  # the batches went to the workers
    assert started[0] > 1
    a, b = in_process.index, on_workers.index
    assert (len(a), a.n_documents) == (len(b), b.n_documents)
    chunk_ids = [c.chunk_id for d in docs[:50] for c in a.chunks_of(d.doc_id)]
    assert chunk_ids == [c.chunk_id for d in docs[:50] for c in b.chunks_of(d.doc_id)]
    assert np.array_equal(a.snapshot().doc_len[: len(a)], b.snapshot().doc_len[: len(b)])
    for question in ["who founded the university", "the river flows into the sea", docs[7].text[:60]]:
        assert [(s.chunk.chunk_id, s.score) for s in a.search_lexical(question, 10)] == [
            (s.chunk.chunk_id, s.score) for s in b.search_lexical(question, 10)
        ]
        vector = in_process.embedder.encode([question])[0]
        assert [(s.chunk.chunk_id, s.score) for s in a.search_dense(vector, 10)] == [
            (s.chunk.chunk_id, s.score) for s in b.search_dense(vector, 10)
        ]


def test_no_worker_is_forked_beside_another_thread() -> None:
    import threading

    stop = threading.Event()
    other = threading.Thread(target=stop.wait, name="a server thread")
    other.start()
    try:
        assert "a server thread" in parallel._other_threads()
        assert not parallel.WorkerPool(2).useful
    finally:
        stop.set()
        other.join()
    assert not parallel.WorkerPool(1).useful
