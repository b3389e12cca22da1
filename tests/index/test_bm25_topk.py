"""Differential test: pruned BM25 top-k (block-max) against the exhaustive scorer.

Random corpora (Zipf-distributed terms, duplicated chunks so that ties are everywhere) are
written through every path the index has (bulk and streaming appends, replaces, deletes,
compaction), and random queries are run on the newest snapshot and on older ones. The pruned
search must return the same chunks in the same order with the same scores as scoring every
posting: ties at the k-th place keep the earliest chunks. The pruning sizes are shrunk so that
small corpora exercise block maxima, stored and computed, and several scoring rounds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

from verityrag.index import _bm25_compiled, _postings, bm25
from verityrag.index.live import IndexSnapshot, LiveIndex
from verityrag.types import Chunk

pytestmark = pytest.mark.unit

VOCAB = [f"kw{i}" for i in range(120)]


@pytest.fixture(
    params=[
        (8, 16, 0, 4, False),
        (32, 40, 0, 8, False),
        (128, 512, 4096, 64, False),
        (128, 512, 4096, 64, True),
    ],
    ids=["tiny-blocks", "small-blocks", "default", "compiled"],
)
def pruning(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[int, int, int]]:
    """(BLOCK, LONG, SMALL) for the whole test (the segment reads BLOCK when it is made), and
    the blocks of the first round. ``search_lexical`` takes the vectorised block-max scorer, or
    with ``compiled`` the numba one (where it is installed)."""
    block, long, small, first_round, compiled = request.param
    if compiled and not _bm25_compiled.AVAILABLE:
        pytest.skip("numba is not installed")
    monkeypatch.setattr(_bm25_compiled, "AVAILABLE", compiled)
    monkeypatch.setattr(_postings, "BLOCK", block)
    monkeypatch.setattr(_postings, "LONG", long)
    monkeypatch.setattr(bm25, "SMALL", small)
    monkeypatch.setattr(bm25, "_FIRST_ROUND", first_round)
    return block, long, small


class Counting:
    """Counts the pruned searches, and the chunks they scored exactly (whole blocks, then candidates)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.scored = 0
        self.calls = 0
        blocks, slots = bm25._score_blocks, bm25._score_slots

        def counted_blocks(
            snap: IndexSnapshot, prepared: object, chosen: np.ndarray, k1: float, b: float
        ) -> object:
            self.scored += len(chosen) * snap.segment.block
            self.calls += 1
            return blocks(snap, prepared, chosen, k1, b)  # type: ignore[arg-type]

        def counted_slots(
            snap: IndexSnapshot, prepared: object, cand: np.ndarray, k1: float, b: float
        ) -> object:
            self.scored += len(cand)
            return slots(snap, prepared, cand, k1, b)  # type: ignore[arg-type]

        monkeypatch.setattr(bm25, "_score_blocks", counted_blocks)
        monkeypatch.setattr(bm25, "_score_slots", counted_slots)


def _text(rng: np.random.Generator, weights: np.ndarray) -> str:
    n = int(rng.integers(1, 40))
    return " ".join(VOCAB[i] for i in rng.choice(len(VOCAB), size=n, p=weights))


def _zipf(n: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, n + 1) ** s
    return w / w.sum()


def _docs(
    rng: np.random.Generator,
    make_chunk: Callable[..., Chunk],
    first: int,
    n: int,
    weights: np.ndarray,
    pool: list[str],
) -> list[tuple[str, list[Chunk], np.ndarray]]:
    """``n`` documents of 1-3 chunks; a third of the chunks repeat a text from ``pool`` (ties)."""
    out = []
    for d in range(first, first + n):
        doc_id = f"d{d:05d}"
        texts = []
        for _ in range(int(rng.integers(1, 4))):
            if pool and rng.random() < 0.33:
                texts.append(pool[int(rng.integers(len(pool)))])
            else:
                texts.append(_text(rng, weights))
                pool.append(texts[-1])
        chunks = [make_chunk(doc_id, t, i) for i, t in enumerate(texts)]
        out.append((doc_id, chunks, np.ones((len(chunks), 4), np.float32)))
    return out


def _queries(rng: np.random.Generator, weights: np.ndarray, n: int) -> list[list[str]]:
    out = []
    for _ in range(n):
        size = int(rng.integers(1, 9))
        # Common terms (long lists), rare ones, and repeats (a term counted once per occurrence).
        out.append([VOCAB[i] for i in rng.choice(len(VOCAB), size=size, p=weights)])
    return out


def _assert_same_top_k(
    index: LiveIndex, queries: list[list[str]], snap: IndexSnapshot | None, rng: np.random.Generator
) -> int:
    compared = 0
    for terms in queries:
        k = int(rng.choice([1, 2, 3, 10, 25, 60]))
        pruned = index.search_lexical(terms, k, snap)
        exhaustive = index.search_lexical_exhaustive(terms, k, snap)
        assert [(h.chunk.chunk_id, h.score) for h in pruned] == [
            (h.chunk.chunk_id, h.score) for h in exhaustive
        ], (terms, k)
        compared += 1
    return compared


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_search_lexical_random_corpora_equals_exhaustive_top_k(
    pruning: tuple[int, int, int],
    make_chunk: Callable[..., Chunk],
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
) -> None:
    rng = np.random.default_rng(seed)
    weights = _zipf(len(VOCAB), 1.0 + 0.2 * seed)
    counting = Counting(monkeypatch)
    index = LiveIndex(dim=4)
    pool: list[str] = []
    index.apply(_docs(rng, make_chunk, 0, 900, weights, pool))  # bulk: numpy-grouped postings
    compared = _assert_same_top_k(index, _queries(rng, weights, 40), None, rng)
    old = index.snapshot()
    for d in range(900, 1000):  # streaming: one document per version
        index.apply(_docs(rng, make_chunk, d, 1, weights, pool))
    for d in rng.choice(1000, size=150, replace=False).tolist():  # replaces and deletes
        if d % 2:
            index.apply(_docs(rng, make_chunk, d, 1, weights, pool))
        else:
            index.delete(f"d{d:05d}")
    assert index.snapshot().n_dead > 0
    compared += _assert_same_top_k(index, _queries(rng, weights, 60), None, rng)
    compared += _assert_same_top_k(index, _queries(rng, weights, 30), old, rng)  # an older version
    for d in range(0, 1000, 3):  # enough deletes to compact (dead > 1024 and > half)
        index.delete(f"d{d:05d}")
    for d in range(1, 1000, 3):
        index.delete(f"d{d:05d}")
    assert index.snapshot().segment is not old.segment
    index.apply(_docs(rng, make_chunk, 1000, 200, weights, pool))
    compared += _assert_same_top_k(index, _queries(rng, weights, 60), None, rng)
    compared += _assert_same_top_k(index, _queries(rng, weights, 20), old, rng)  # the old segment
    assert compared == 210
    if pruning[2] == 0:  # the pruned path ran, and skipped blocks: the comparison is not vacuous
        assert counting.calls > 100


def test_search_lexical_pruning_skips_blocks_and_keeps_exact_top_k(
    pruning: tuple[int, int, int], make_chunk: Callable[..., Chunk], monkeypatch: pytest.MonkeyPatch
) -> None:
    # One rare term in a few chunks, one common term everywhere: blocks holding only the
    # common term cannot reach the k-th score set by the rare term's chunks.
    _block, _long, small = pruning
    if small:
        pytest.skip("the default SMALL scores this corpus whole")
    counting = Counting(monkeypatch)
    texts = ["common filler" if i % 3 else "plain text" for i in range(3000)]
    texts += ["plain text"] * 2000  # 'common' in 2,000 of 5,000 chunks: positive IDF
    for i in (17, 1201, 2999):
        texts[i] = "rare common"
    index = LiveIndex(dim=4)
    index.apply(
        [
            (f"c{i:04d}", [make_chunk(f"c{i:04d}", t)], np.ones((1, 4), np.float32))
            for i, t in enumerate(texts)
        ]
    )
    hits = index.search_lexical("rare common", 3)
    assert [h.chunk.doc_id for h in hits] == ["c0017", "c1201", "c2999"]
    assert index.idf("common") > 0
    assert hits == index.search_lexical_exhaustive("rare common", 3)
    assert 0 < counting.scored < 2003 / 4  # of the chunks holding a query term


def test_search_lexical_ties_across_blocks_keep_earliest_chunks(
    pruning: tuple[int, int, int], make_chunk: Callable[..., Chunk]
) -> None:
    # 2,000 identical chunks after two better ones: the pruned search scores the blocks in
    # bound order, not slot order, and must still fill the last places with the earliest.
    texts = ["okapi okapi river" if i in (1500, 1999) else "okapi river" for i in range(2000)]
    texts += ["plain filler text"] * 2500  # okapi in under half the chunks: positive IDF
    index = LiveIndex(dim=4)
    index.apply(
        [
            (f"d{i:04d}", [make_chunk(f"d{i:04d}", t)], np.ones((1, 4), np.float32))
            for i, t in enumerate(texts)
        ]
    )
    for k in (3, 5, 40):
        hits = index.search_lexical("okapi river", k)
        assert [h.chunk.doc_id for h in hits][:3] == ["d1500", "d1999", "d0000"]
        assert [h.chunk.doc_id for h in hits] == ["d1500", "d1999"] + [f"d{i:04d}" for i in range(k - 2)]
        assert hits == index.search_lexical_exhaustive("okapi river", k)


def test_document_frequency_at_old_snapshots_after_deletes(make_chunk: Callable[..., Chunk]) -> None:
    index = LiveIndex(dim=4)
    index.apply(
        [
            (f"d{i}", [make_chunk(f"d{i}", "okapi river" if i % 2 else "okapi")], np.ones((1, 4), np.float32))
            for i in range(10)
        ]
    )
    first = index.snapshot()
    index.delete("d1")
    index.delete("d2")
    second = index.snapshot()
    index.apply([("d11", [make_chunk("d11", "okapi river")], np.ones((1, 4), np.float32))])
    assert [index.document_frequency("okapi", s) for s in (first, second, index.snapshot())] == [10, 8, 9]
    assert [index.document_frequency("river", s) for s in (first, second, index.snapshot())] == [5, 4, 5]


@pytest.mark.parametrize("batch", [1, 70])
def test_term_frequency_past_uint16_is_kept_exactly(make_chunk: Callable[..., Chunk], batch: int) -> None:
    # Frequencies are stored as uint16; a term with a larger one moves to uint32 (streaming path
    # for one chunk, numpy-grouped path for a batch of 64 or more).
    index = LiveIndex(dim=4)
    index.apply(
        [
            (f"f{i}", [make_chunk(f"f{i}", f"okapi filler {i}")], np.ones((1, 4), np.float32))
            for i in range(80)
        ]
    )
    big = [(f"big{i}", [make_chunk(f"big{i}", "okapi")], np.ones((1, 4), np.float32)) for i in range(batch)]
    counts = [[{"okapi": 70_000 + i}] for i in range(batch)]
    index.apply(big, term_counts=counts)
    posting = index.snapshot().segment.postings["okapi"]
    assert posting.tfs.dtype == np.uint32
    assert posting.tfs[: posting.n].max() == 70_000 + batch - 1
    hits = index.search_lexical(["okapi"], 3)
    assert hits == index.search_lexical_exhaustive(["okapi"], 3)
    assert hits[0].chunk.doc_id == f"big{batch - 1}"
