"""Many threads ingesting through the pipeline while others query: no errors, nothing lost.

The reader is off: these tests check the store, the index and retrieval (the selector's sentence
answers; the reader, which may cite another of the top chunks, has its own tests).
"""

from __future__ import annotations

import math
import random
import sys
import threading
from collections.abc import Iterator

import pytest

from verityrag import Settings, VerityRAGPipeline

pytestmark = pytest.mark.integration

N_WRITERS = 4
DOCS_PER_WRITER = 40
N_READERS = 3


def _token(writer: int, i: int) -> str:
    return f"uniq{writer}x{i:03d}q"


@pytest.fixture
def fast_thread_switching() -> Iterator[None]:
    """Switch threads every 10 µs instead of 5 ms, so writers and readers interleave finely."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(old)


@pytest.mark.usefixtures("fast_thread_switching")
@pytest.mark.filterwarnings("error::RuntimeWarning")  # e.g. log of a negative number -> NaN scores
def test_concurrent_ingest_and_queries_lose_nothing_and_raise_nothing() -> None:
    pipeline = VerityRAGPipeline(settings=Settings(chunk_max_words=12, reader=False))
    pipeline.ingest_documents(
        [(f"seed-{i}", "Seed", f"Seed document {i} about rivers and mountains.") for i in range(20)]
    )
    acked: list[tuple[str, str]] = []  # (doc_id, token), appended only after ingest_document returned
    acked_lock = threading.Lock()
    errors: list[BaseException] = []
    writers_done = threading.Event()
    reader_checks = [0] * N_READERS
    chunk_counts: dict[str, int] = {}

    def writer(w: int) -> None:
        try:
            for i in range(DOCS_PER_WRITER):
                doc_id, token = f"w{w}-doc{i:03d}", _token(w, i)
                text = f"Writer {w} wrote document {i}. It carries the marker {token} for lookup. Rivers too."
                result = pipeline.ingest_document(doc_id, f"Writer {w}", text)
                assert result.replaced is False
                chunk_counts[doc_id] = result.n_chunks
                with acked_lock:
                    acked.append((doc_id, token))
        except BaseException as exc:
            errors.append(exc)

    def reader(r: int) -> None:
        rng = random.Random(r)
        try:
            # Until the writers are done, and at least a few checks in any case: on a busy machine
            # a reader's first query can outlast every writer.
            while not writers_done.is_set() or reader_checks[r] < 3:
                with acked_lock:
                    pick = rng.choice(acked) if acked else None
                result = pipeline.query(
                    rng.choice(["Where are the rivers?", "mountains and rivers", "marker lookup"])
                )
                assert result.evidence or result.abstained
                assert all(math.isfinite(h.bm25_score) and math.isfinite(h.score) for h in result.evidence)
                if pick is not None:  # acknowledged before this query started: must be found
                    doc_id, token = pick
                    hits = pipeline.retriever.search(token, k=3)
                    assert hits[0].chunk.doc_id == doc_id, (token, [h.chunk.doc_id for h in hits])
                    reader_checks[r] += 1
        except BaseException as exc:
            errors.append(exc)

    writers = [threading.Thread(target=writer, args=(w,)) for w in range(N_WRITERS)]
    readers = [threading.Thread(target=reader, args=(r,)) for r in range(N_READERS)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join(timeout=120)
    writers_done.set()
    for t in readers:
        t.join(timeout=120)

    assert not errors, repr(errors[0])
    assert not any(t.is_alive() for t in readers + writers)
    assert all(n > 0 for n in reader_checks), reader_checks
    n_docs = 20 + N_WRITERS * DOCS_PER_WRITER
    assert len(acked) == N_WRITERS * DOCS_PER_WRITER
    assert pipeline.index.n_documents == n_docs
    assert len(pipeline.index) == 20 + sum(chunk_counts.values())
    assert len(pipeline.index.live_chunks()) == len(pipeline.index)
    stats = pipeline.stats()
    assert (stats["documents"], stats["chunks"]) == (n_docs, len(pipeline.index))
    for doc_id, token in acked:
        result = pipeline.query(f"Which document carries the marker {token}?")
        assert not result.abstained, token
        assert result.citations[0].doc_id == doc_id
        assert pipeline.index.search_lexical(token, 1)[0].chunk.doc_id == doc_id


@pytest.mark.usefixtures("fast_thread_switching")
def test_concurrent_replace_and_delete_keep_exact_counts() -> None:
    pipeline = VerityRAGPipeline(settings=Settings(chunk_max_words=12, reader=False))
    n_docs = 60
    pipeline.ingest_documents(
        [(f"d{i:02d}", "T", f"Version zero of doc {i}. Token v0d{i:02d}t.") for i in range(n_docs)]
    )
    errors: list[BaseException] = []

    def churn(worker: int) -> None:
        try:
            for rnd in range(1, 6):
                for i in range(worker, n_docs, 3):
                    assert pipeline.ingest_document(
                        f"d{i:02d}", "T", f"Version {rnd} of doc {i}. Token v{rnd}d{i:02d}t."
                    ).replaced
                    pipeline.query(f"Version {rnd} of doc {i}")
            for i in range(worker, n_docs, 6):
                assert pipeline.delete_document(f"d{i:02d}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=churn, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a writer did not finish"
    assert not errors, repr(errors[0])
    deleted = {f"d{i:02d}" for w in range(3) for i in range(w, n_docs, 6)}
    live = sorted(set(f"d{i:02d}" for i in range(n_docs)) - deleted)
    assert sorted(pipeline.index.doc_ids()) == live
    assert pipeline.index.n_documents == pipeline.stats()["documents"] == len(live)
    assert len(pipeline.index) == sum(len(pipeline.index.chunks_of(d)) for d in live)
    for doc_id in live:
        i = int(doc_id[1:])
        assert pipeline.index.search_lexical(f"v5d{i:02d}t", 1)[0].chunk.doc_id == doc_id
        assert pipeline.index.search_lexical(f"v4d{i:02d}t", 1) == []
