"""Dense search: exact top-k against brute force; deletes honoured; the hnsw backend."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from verityrag.errors import InvalidInputError
from verityrag.index.live import LiveIndex
from verityrag.types import Chunk

pytestmark = pytest.mark.unit

DIM = 16


def _filled(
    make_chunk: Callable[..., Chunk],
    unit_rows: Callable[..., np.ndarray],
    n_docs: int,
    chunks_per_doc: int = 2,
    backend: str = "exact",
    seed: int = 0,
) -> tuple[LiveIndex, dict[str, np.ndarray]]:
    """An index of ``n_docs`` docs with random unit vectors; returns it and vectors by chunk id."""
    rng = np.random.default_rng(seed)
    index = LiveIndex(dim=DIM, dense_backend=backend)  # type: ignore[arg-type]
    vectors: dict[str, np.ndarray] = {}
    upserts = []
    for d in range(n_docs):
        doc_id = f"doc{d:03d}"
        chunks = [make_chunk(doc_id, f"text {d} {p}", p) for p in range(chunks_per_doc)]
        rows = unit_rows(rng, chunks_per_doc, DIM)
        vectors.update({c.chunk_id: r for c, r in zip(chunks, rows, strict=True)})
        upserts.append((doc_id, chunks, rows))
    index.apply(upserts)
    return index, vectors


def _brute_force(vectors: dict[str, np.ndarray], query: np.ndarray, k: int) -> list[tuple[str, float]]:
    ids = list(vectors)
    sims = np.stack([vectors[i] for i in ids]) @ query
    order = np.argsort(-sims, kind="stable")[:k]
    return [(ids[i], float(sims[i])) for i in order]


@pytest.mark.parametrize("k", [1, 5, 17])
def test_search_dense_exact_returns_brute_force_top_k(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray], k: int
) -> None:
    index, vectors = _filled(make_chunk, unit_rows, 40)
    rng = np.random.default_rng(1)
    for query in unit_rows(rng, 10, DIM):
        got = index.search_dense(query, k)
        expected = _brute_force(vectors, query, k)
        assert [h.chunk.chunk_id for h in got] == [cid for cid, _ in expected]
        assert np.allclose([h.score for h in got], [s for _, s in expected], atol=1e-5)


def test_search_dense_after_deletes_and_replace_never_returns_removed_chunks(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray]
) -> None:
    index, vectors = _filled(make_chunk, unit_rows, 40)
    deleted = [f"doc{d:03d}" for d in range(0, 40, 3)]
    for doc_id in deleted:
        assert index.delete(doc_id)
    rng = np.random.default_rng(2)
    new_rows = unit_rows(rng, 1, DIM)
    index.upsert("doc001", [make_chunk("doc001", "new text")], new_rows)
    remaining = {cid: v for cid, v in vectors.items() if cid.split("#")[0] not in {*deleted, "doc001"}}
    remaining["doc001#0"] = new_rows[0]
    for query in [*unit_rows(rng, 8, DIM), vectors["doc000#0"], vectors["doc001#1"]]:
        got = index.search_dense(query, 10)
        assert [h.chunk.chunk_id for h in got] == [cid for cid, _ in _brute_force(remaining, query, 10)]
    everything = index.search_dense(vectors["doc000#0"], 1000)
    assert len(everything) == len(index) == len(remaining)
    assert {h.chunk.doc_id for h in everything}.isdisjoint(deleted)
    assert [h.chunk.text for h in everything if h.chunk.doc_id == "doc001"] == ["new text"]


def test_search_dense_k_larger_than_index_returns_all_live(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray]
) -> None:
    index, _ = _filled(make_chunk, unit_rows, 3)
    assert len(index.search_dense(np.ones(DIM, np.float32) / 4, 50)) == 6
    assert index.search_dense(np.ones(DIM, np.float32) / 4, 0) == []


def test_search_dense_empty_index_returns_nothing() -> None:
    assert LiveIndex(dim=DIM).search_dense(np.ones(DIM, np.float32), 5) == []


def test_search_dense_wrong_dimension_raises(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray]
) -> None:
    index, _ = _filled(make_chunk, unit_rows, 2)
    with pytest.raises(InvalidInputError, match="has dimension 8, index has 16") as err:
        index.search_dense(np.ones(8, np.float32), 3)
    assert err.value.field == "vector"


def test_apply_vectors_of_wrong_shape_raises_and_writes_nothing(make_chunk: Callable[..., Chunk]) -> None:
    index = LiveIndex(dim=DIM)
    with pytest.raises(InvalidInputError, match="expected") as err:
        index.upsert("d", [make_chunk("d", "text")], np.ones((2, DIM), np.float32))
    assert err.value.field == "vectors"
    assert len(index) == 0
    assert index.snapshot().version == 0


def test_apply_same_doc_twice_in_one_batch_raises_and_writes_nothing(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray]
) -> None:
    index = LiveIndex(dim=DIM)
    rows = unit_rows(np.random.default_rng(0), 1, DIM)
    with pytest.raises(
        InvalidInputError, match=r"more than once in the batch \(upserts\[0\] and upserts\[1\]\)"
    ) as err:
        index.apply([("d", [make_chunk("d", "one")], rows), ("d", [make_chunk("d", "two")], rows)])
    assert err.value.field == "upserts[1].doc_id"
    assert len(index) == 0


@pytest.fixture
def _hnswlib() -> None:
    pytest.importorskip("hnswlib", reason="dense_backend='hnsw' needs hnswlib")


@pytest.mark.usefixtures("_hnswlib")
def test_search_dense_hnsw_vector_in_index_finds_itself_first(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray]
) -> None:
    index, vectors = _filled(make_chunk, unit_rows, 150, backend="hnsw")
    assert index.snapshot().segment.ann is not None
    for chunk_id, vector in list(vectors.items())[::5]:
        top = index.search_dense(vector, 3)
        assert top[0].chunk.chunk_id == chunk_id
        assert top[0].score == pytest.approx(1.0, abs=1e-5)


@pytest.mark.usefixtures("_hnswlib")
def test_search_dense_hnsw_after_deletes_never_returns_deleted(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray]
) -> None:
    index, vectors = _filled(make_chunk, unit_rows, 150, backend="hnsw")
    deleted = {f"doc{d:03d}" for d in range(0, 150, 4)}
    for doc_id in deleted:
        index.delete(doc_id)
    for chunk_id, vector in vectors.items():
        top = index.search_dense(vector, 5)
        assert len(top) == 5
        assert {h.chunk.doc_id for h in top}.isdisjoint(deleted)
        if chunk_id.split("#")[0] not in deleted:
            assert top[0].chunk.chunk_id == chunk_id


@pytest.mark.usefixtures("_hnswlib")
def test_search_dense_hnsw_after_compaction_finds_live_and_skips_deleted(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray]
) -> None:
    index, vectors = _filled(make_chunk, unit_rows, 1100, chunks_per_doc=2, backend="hnsw")
    segment = index.snapshot().segment
    deleted = {f"doc{d:03d}" for d in range(600)}  # 1200 dead of 2200 slots: compaction
    for doc_id in deleted:
        index.delete(doc_id)
    assert index.snapshot().segment is not segment
    for chunk_id, vector in list(vectors.items())[::37]:
        top = index.search_dense(vector, 3)
        assert {h.chunk.doc_id for h in top}.isdisjoint(deleted)
        if chunk_id.split("#")[0] not in deleted:
            assert top[0].chunk.chunk_id == chunk_id


def test_live_index_unknown_backend_lists_allowed(make_chunk: Callable[..., Chunk]) -> None:
    with pytest.raises(InvalidInputError, match="'faiss' is not one of auto, exact, hnsw") as err:
        LiveIndex(dim=DIM, dense_backend="faiss")  # type: ignore[arg-type]
    assert err.value.field == "dense_backend"


@pytest.mark.parametrize("backend", ["exact", "hnsw"])
def test_search_dense_old_snapshot_keeps_what_it_held(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray], backend: str
) -> None:
    if backend == "hnsw":
        pytest.importorskip("hnswlib", reason="dense_backend='hnsw' needs hnswlib")
    # A reader's snapshot is a version: a delete or an add after it changes nothing it sees,
    # with the approximate backend as with the exact one.
    index, vectors = _filled(make_chunk, unit_rows, 150, backend=backend)
    before = index.snapshot()
    deleted = {f"doc{d:03d}" for d in range(0, 150, 3)}
    for doc_id in deleted:
        index.delete(doc_id)
    extra = unit_rows(np.random.default_rng(99), 1, DIM)
    index.upsert("late", [make_chunk("late", "a late document")], extra)
    for chunk_id, vector in list(vectors.items())[::3]:
        old = index.search_dense(vector, 5, snapshot=before)
        assert old[0].chunk.chunk_id == chunk_id
        assert len(old) == 5
        new = index.search_dense(vector, 5)
        assert {h.chunk.doc_id for h in new}.isdisjoint(deleted)
    assert "late" not in {h.chunk.doc_id for h in index.search_dense(extra[0], 5, snapshot=before)}
    assert index.search_dense(extra[0], 1)[0].chunk.doc_id == "late"


@pytest.mark.usefixtures("_hnswlib")
def test_search_dense_hnsw_mostly_deleted_returns_every_live_chunk(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray]
) -> None:
    # 145 of 150 documents deleted, under the compaction threshold: the graph still holds
    # them all, and the filtered search (or the exact scan it falls back to) must find every live chunk.
    index, vectors = _filled(make_chunk, unit_rows, 150, backend="hnsw")
    live = {"doc007", "doc042", "doc077", "doc100", "doc149"}
    for d in range(150):
        if f"doc{d:03d}" not in live:
            index.delete(f"doc{d:03d}")
    assert index.snapshot().n_dead > 0  # not compacted away
    live_chunks = {c for c in vectors if c.split("#")[0] in live}
    for vector in list(vectors.values())[::10]:
        assert {h.chunk.chunk_id for h in index.search_dense(vector, len(live_chunks))} == live_chunks


@pytest.mark.usefixtures("_hnswlib")
def test_search_dense_hnsw_falls_back_to_the_exact_scan(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    # When the filtered graph search cannot find k visible slots (hnswlib raises), the
    # snapshot is scanned exactly: the same hits as the exact backend.
    index, vectors = _filled(make_chunk, unit_rows, 60, backend="hnsw")
    exact, _ = _filled(make_chunk, unit_rows, 60)
    ann = index.snapshot().segment.ann
    assert ann is not None

    graph = ann._index

    class Failing:  # hnswlib's Index is a C type: its methods cannot be patched
        def knn_query(self, *args: object, **kwargs: object) -> None:
            raise RuntimeError("Cannot return the results in a contiguous 2D array")

        def get_items(self, *args: object, **kwargs: object) -> object:  # the graph holds the vectors
            return graph.get_items(*args, **kwargs)

    monkeypatch.setattr(ann, "_index", Failing())
    for vector in list(vectors.values())[::7]:
        got = [(h.chunk.chunk_id, round(h.score, 5)) for h in index.search_dense(vector, 4)]
        assert got == [(h.chunk.chunk_id, round(h.score, 5)) for h in exact.search_dense(vector, 4)]


def test_search_dense_ties_at_kth_place_keep_earliest_chunks(make_chunk: Callable[..., Chunk]) -> None:
    # As for BM25: which tied chunks fill the last places must not depend on slot numbers,
    # which a restart or a compaction renumbers.
    tied = np.zeros(DIM, np.float32)
    tied[0] = 1.0
    closer = np.zeros(DIM, np.float32)
    closer[:2] = (1.0, 0.1)
    closer /= np.linalg.norm(closer)
    index = LiveIndex(dim=DIM)
    index.apply(
        [
            (f"d{i:04d}", [make_chunk(f"d{i:04d}", "x")], (closer if i in (500, 999) else tied)[None, :])
            for i in range(1000)
        ]
    )
    hits = index.search_dense(closer, 5)
    assert [h.chunk.doc_id for h in hits] == ["d0500", "d0999", "d0000", "d0001", "d0002"]


@pytest.mark.usefixtures("_hnswlib")
def test_search_dense_auto_moves_dense_vectors_to_the_graph_at_the_threshold(
    make_chunk: Callable[..., Chunk], unit_rows: Callable[..., np.ndarray]
) -> None:
    rng = np.random.default_rng(5)
    index = LiveIndex(dim=DIM, ann_threshold=300)  # dense_backend="auto", the default
    rows = unit_rows(rng, 400, DIM)
    index.apply([(f"d{i:03d}", [make_chunk(f"d{i:03d}", "x")], rows[i : i + 1]) for i in range(250)])
    before = index.snapshot()
    assert before.vectors is not None
    assert before.segment.ann is None
    exact_before = index.search_dense(rows[7], 5)
    index.apply([(f"d{i:03d}", [make_chunk(f"d{i:03d}", "x")], rows[i : i + 1]) for i in range(250, 400)])
    after = index.snapshot()
    assert after.vectors is None
    assert after.segment.ann is not None
    for i in range(0, 400, 9):
        assert index.search_dense(rows[i], 3)[0].chunk.doc_id == f"d{i:03d}"
    assert index.search_dense(rows[7], 5, snapshot=before) == exact_before  # the old version, exactly
    assert index.cosines(rows[3], ["d003#0", "d399#0", "gone#0"]) == [
        pytest.approx(1.0, abs=1e-5),
        pytest.approx(float(rows[3] @ rows[399]), abs=1e-5),
        0.0,
    ]


def test_search_dense_auto_keeps_sparse_vectors_exact_past_the_threshold(
    make_chunk: Callable[..., Chunk],
) -> None:
    # Hashed vectors set a quarter of their dimensions: their sparse queries stay exact.
    from verityrag.embed.hashing import HashingEmbedder

    embedder = HashingEmbedder(dim=64)
    texts = [f"document {i} about topic {i % 17} and item {i % 29}" for i in range(400)]
    vectors = embedder.encode(texts)
    index = LiveIndex(dim=64, ann_threshold=300)
    index.apply(
        [(f"d{i:03d}", [make_chunk(f"d{i:03d}", t)], vectors[i : i + 1]) for i, t in enumerate(texts)]
    )
    snap = index.snapshot()
    assert snap.vectors is not None
    assert snap.segment.ann is None
    assert index.search_dense(embedder.encode(["topic 5 item 7"])[0], 3)


@pytest.mark.parametrize("spill", [False, True])
def test_search_dense_hashed_vectors_int8_store_returns_the_float32_exact_top_k(
    make_chunk: Callable[..., Chunk], spill: bool
) -> None:
    # Sparse (hashed) vectors are scanned as int8 and rescored from float32 rows (in a temp file
    # when spilled): the hits and their order must be those of exact float32 search.
    from verityrag.embed.hashing import HashingEmbedder
    from verityrag.index._vectors import QuantizedColumns

    rng = np.random.default_rng(3)
    words = [f"kw{i}" for i in range(60)]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(2, 12)))) for _ in range(700)]
    texts += texts[:50]  # identical vectors: ties
    embedder = HashingEmbedder(dim=64)
    vectors = embedder.encode(texts)
    index = LiveIndex(dim=64, text_memory_limit=4096 if spill else 1 << 25)
    index.apply(
        [(f"d{i:04d}", [make_chunk(f"d{i:04d}", t)], vectors[i : i + 1]) for i, t in enumerate(texts)]
    )
    assert isinstance(index.snapshot().segment.vectors, QuantizedColumns)
    assert index.snapshot().segment.vectors.rows.spilled is spill
    deleted = {f"d{i:04d}" for i in range(0, 750, 7)}
    old = index.snapshot()
    for doc_id in deleted:
        index.delete(doc_id)
    queries = embedder.encode([" ".join(rng.choice(words, size=3)) for _ in range(40)])
    for snap, gone in ((index.snapshot(), deleted), (old, set())):
        ids = [f"d{i:04d}" for i in range(len(texts)) if f"d{i:04d}" not in gone]
        matrix = np.stack([vectors[int(d[1:])] for d in ids])
        for query in queries:
            sims = (matrix * query).sum(axis=1, dtype=np.float32)
            for k in (1, 10, 60):
                expected = sorted(range(len(ids)), key=lambda i: (-sims[i], i))[:k]
                got = index.search_dense(query, k, snapshot=snap)
                assert [h.chunk.doc_id for h in got] == [ids[i] for i in expected]
                assert np.allclose([h.score for h in got], sims[expected], atol=1e-6)
