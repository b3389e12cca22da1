"""Okapi BM25 over a ``LiveIndex``'s incremental postings: exact top-k with block-max pruning.

Scores are ``rank_bm25.BM25Okapi``'s: for each occurrence of a query term ``t`` in the query,
``idf(t) * tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))`` summed over the terms.

**Postings.** Each term's postings are append-only numpy buffers of slots (ascending) and
term frequencies (:class:`~verityrag.index.snapshot.Posting`). A snapshot sees the prefix of
slots below its ``n_slots`` (a binary search) whose ``died`` is after its version. Document
frequencies at a snapshot are that prefix's length minus the term's postings that died at or
before its version: each term keeps the versions at which its postings died, so this is a
binary search too, never a count over the postings.

**Pruning (block-max).** The slot space is cut into blocks of ``Segment.block`` slots. A term
with at least :data:`LONG` postings keeps, for every block that holds it, an upper bound of its
tf part there (:class:`~verityrag.index.snapshot.BlockMax`), maintained as postings are
appended; it is computed at a reference average length ``a0`` and holds for the snapshot's
``avgdl`` after a factor ``max(1, avgdl / a0)``. Shorter lists have their exact block maxima
computed at query time. A query sums its terms' bounds per block, scores the most promising
blocks exactly to get the k-th best score, and then only the blocks whose bound reaches it,
in rounds that raise it. Deletes and later appends only make the stored bounds looser, never
wrong, so every snapshot can use them.

The top-k is identical to the exhaustive scorer's (:func:`score_all`), ties at the k-th place
included (highest score first, then the earliest slot): every path sums a chunk's terms in
the query's term order with the same floating-point expression, and a block is skipped only
when its bound is below the k-th score. No array of the index's size is allocated per query:
the per-block bounds live in a per-thread scratch buffer reused across queries.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from verityrag.index._postings import Tfs
from verityrag.index.snapshot import BlockMax, IndexSnapshot, Posting, Segment

__all__ = ["SMALL", "QueryTerm", "contributions", "document_frequency", "query_terms", "score_all", "top_k"]

#: A query whose terms have at most this many postings in all is scored whole, without pruning.
SMALL = 4096
# A block is skipped when its bound, raised by this relative margin, is below the k-th score: the
# bounds are computed in float64 from rounded-up float32 maxima, and summed in another order.
_SLACK = 1e-6
_FIRST_ROUND = 64  # blocks scored whole to get a first k-th score
_CANDIDATE_BATCH = 256  # chunks scored exactly before the k-th score is raised (then 4x more)

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


class QueryTerm(NamedTuple):
    """One distinct query term as a snapshot sees it: weight ``count * idf``, visible postings."""

    weight: float
    slots: npt.NDArray[np.int32]
    tfs: Tfs
    blocks: BlockMax | None


# ------------------------------------------------------------------ reading


def visible_end(posting: Posting, n_slots: int) -> int:
    """How many of the term's postings have slots below ``n_slots`` (slots are ascending)."""
    n = posting.n
    if n == 0 or posting.slots[n - 1] < n_slots:
        return n
    return int(np.searchsorted(posting.slots[:n], n_slots))


def document_frequency(seg: Segment, term: str, snap: IndexSnapshot) -> tuple[int, Posting | None, int]:
    """The term's document frequency at ``snap``, its postings, and how many of them are below ``n_slots``."""
    posting = seg.postings.get(term)
    if posting is None:
        return 0, None, 0
    end = visible_end(posting, snap.n_slots)
    dead = seg.dead.get(term)
    # A posting that died at version d <= snap.version had its slot published before d.
    df = end - (bisect.bisect_right(dead, snap.version) if dead else 0)
    return df, posting, end


def query_terms(
    snap: IndexSnapshot, terms: Sequence[str], idf_of_df: Callable[[int], float]
) -> list[QueryTerm]:
    """The query's distinct terms in first-occurrence order (the order scores are summed in)."""
    out: list[QueryTerm] = []
    if snap.n_live == 0:
        return out
    seg = snap.segment
    for term, count in Counter(terms).items():
        df, posting, end = document_frequency(seg, term, snap)
        if df == 0 or posting is None:
            continue
        out.append(QueryTerm(count * idf_of_df(df), posting.slots[:end], posting.tfs[:end], posting.blocks))
    return out


def contributions(
    weight: float, tfs: Tfs, dl: npt.NDArray[np.int32], k1: float, b: float, avgdl: float
) -> F64:
    """One term's score in each posting: the only place a BM25 term score is computed (in float64)."""
    tf = tfs.astype(np.float64)
    return weight * (tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avgdl)))


def score_all(snap: IndexSnapshot, terms: Sequence[QueryTerm], k1: float, b: float) -> tuple[F64, I64]:
    """The exhaustive scorer: scores over all slots of the snapshot, and the slots any term touched."""
    scores = np.zeros(snap.n_slots, dtype=np.float64)
    touched: list[npt.NDArray[np.int32]] = []
    for term in terms:
        slots, tfs = _visible(snap, term.slots, term.tfs)
        if len(slots) == 0:
            continue
        scores[slots] += contributions(term.weight, tfs, snap.doc_len[slots], k1, b, snap.avgdl)
        touched.append(slots)
    if not touched:
        return scores, np.empty(0, dtype=np.int64)
    return scores, np.unique(np.concatenate(touched)).astype(np.int64)


def _visible(
    snap: IndexSnapshot, slots: npt.NDArray[np.int32], tfs: Tfs
) -> tuple[npt.NDArray[np.int32], Tfs]:
    if snap.n_dead == 0:
        return slots, tfs
    keep = snap.died[slots] > snap.version
    return (slots, tfs) if keep.all() else (slots[keep], tfs[keep])


def rank(slots: npt.NDArray[np.integer], scores: F64, k: int) -> tuple[I64, F64]:
    """The ``k`` best (highest score, then earliest slot), in that order."""
    if len(slots) > 4 * k:  # cut to the k-th score first (ties kept), then sort the few left
        kth = np.partition(scores, len(scores) - k)[len(scores) - k]
        keep = scores >= kth
        slots, scores = slots[keep], scores[keep]
    order = np.lexsort((slots, -scores))[:k]
    return slots[order].astype(np.int64), scores[order]


def top_k(snap: IndexSnapshot, terms: Sequence[QueryTerm], k: int, k1: float, b: float) -> tuple[I64, F64]:
    """The top-``k`` slots and scores, exactly as the exhaustive scorer ranks the touched slots."""
    if k <= 0 or not terms:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64)
    total = sum(len(t.slots) for t in terms)
    if total <= SMALL or any(t.weight <= 0 for t in terms):
        # Few postings, or a term whose IDF is floored at or below zero (its bound is not a
        # maximum): score every touched slot; still no array of the index's size.
        return rank(*_score_union(snap, terms, k1, b), k)
    return _top_k_pruned(snap, terms, k, k1, b)


def _score_union(snap: IndexSnapshot, terms: Sequence[QueryTerm], k1: float, b: float) -> tuple[I64, F64]:
    visible = [_visible(snap, t.slots, t.tfs) for t in terms]
    cand = np.unique(np.concatenate([s for s, _ in visible])).astype(np.int64)
    scores = np.zeros(len(cand), dtype=np.float64)
    for term, (slots, tfs) in zip(terms, visible, strict=True):
        if len(slots):
            where = np.searchsorted(cand, slots)
            scores[where] += contributions(term.weight, tfs, snap.doc_len[slots], k1, b, snap.avgdl)
    return cand, scores


_scratch = threading.local()


def _scratch_buffers(n_slots: int, n_blocks: int) -> tuple[F64, npt.NDArray[np.bool_], F64]:
    """This thread's accumulators, per slot (scores, flags) and per block, reused from query to
    query (callers leave them zeroed): a query writes only where its postings are."""
    per_slot: F64 | None = getattr(_scratch, "per_slot", None)
    if per_slot is None or len(per_slot) < n_slots:
        size = max(n_slots, 4096) * 5 // 4
        _scratch.per_slot = per_slot = np.zeros(size, dtype=np.float64)
        _scratch.flags = np.zeros(size, dtype=bool)
    per_block: F64 | None = getattr(_scratch, "per_block", None)
    if per_block is None or len(per_block) < n_blocks:
        _scratch.per_block = per_block = np.zeros(max(n_blocks, 1024) * 5 // 4, dtype=np.float64)
    return per_slot, _scratch.flags, per_block


class _Prepared(NamedTuple):
    term: QueryTerm
    exact: F64 | None  # a short list's contributions, all its postings (dead ones included)
    ids: npt.NDArray[np.int32]  # blocks holding the term, ascending
    bounds: F64  # the term's score bound in each of them (weight included)
    top: float  # its bound over all blocks


def tf_part_bounds(maxes: npt.NDArray[np.float32], a0: float, avgdl: float, k1: float) -> F64:
    """Block maxima of the tf part kept at the average length ``a0`` as bounds at ``avgdl``: a
    longer average raises a chunk's tf part by at most ``avgdl / a0``, a shorter one only lowers
    it, and no tf part passes ``k1 + 1``."""
    return np.minimum(maxes.astype(np.float64) * max(1.0, avgdl / a0), k1 + 1.0)


def _prepare(snap: IndexSnapshot, term: QueryTerm, n_blocks: int, k1: float, b: float) -> _Prepared:
    if term.blocks is not None:
        blocks = term.blocks
        ids = blocks.ids[: blocks.n]
        if blocks.n and ids[-1] >= n_blocks:  # blocks past the snapshot (a later write)
            ids = ids[: int(np.searchsorted(ids, n_blocks))]
        bounds = term.weight * tf_part_bounds(blocks.maxes[: len(ids)], blocks.a0, snap.avgdl, k1)
        return _Prepared(term, None, ids, bounds, float(bounds.max()) if len(bounds) else 0.0)
    exact = contributions(term.weight, term.tfs, snap.doc_len[term.slots], k1, b, snap.avgdl)
    bids = term.slots // snap.segment.block
    starts = np.flatnonzero(np.diff(bids, prepend=-1))
    bounds = np.maximum.reduceat(exact, starts) if len(starts) else exact[:0]
    return _Prepared(term, exact, bids[starts], bounds, float(bounds.max()) if len(bounds) else 0.0)


def _top_k_pruned(
    snap: IndexSnapshot, terms: Sequence[QueryTerm], k: int, k1: float, b: float
) -> tuple[I64, F64]:
    """Block-max MaxScore, vectorised.

    1. Each block's bound is the sum of its terms' block maxima; the :data:`_FIRST_ROUND`
       blocks of highest bound are scored whole, which gives a k-th score ``theta``.
    2. The terms of smallest bound whose bounds add up to less than ``theta`` are
       *non-essential*: a chunk holding none of the other (essential) terms cannot reach the
       top-k. The essential terms' postings are accumulated per slot; each such chunk is
       bounded by that partial score plus its block's non-essential maxima.
    3. The chunks whose bound reaches ``theta`` are scored exactly, every term in query order
       by binary search in its postings, and ranked with the first round's.
    """
    block = snap.segment.block
    n_blocks = (snap.n_slots + block - 1) // block
    prepared = [_prepare(snap, t, n_blocks, k1, b) for t in terms]
    per_slot, flags, per_block = _scratch_buffers(snap.n_slots, n_blocks)
    try:
        for p in prepared:
            per_block[p.ids] += p.bounds
        touched = np.flatnonzero(per_block[:n_blocks])
        upper = per_block[touched]
    finally:
        per_block[:n_blocks] = 0.0
    if len(touched) > _FIRST_ROUND:
        first_blocks = np.sort(touched[np.argpartition(-upper, _FIRST_ROUND - 1)[:_FIRST_ROUND]])
    else:
        first_blocks = touched
    best_slots, best_scores = rank(*_score_blocks(snap, prepared, first_blocks, k1, b), k)
    if len(first_blocks) == len(touched):
        return best_slots, best_scores
    theta = float(best_scores[-1]) if len(best_scores) == k else -math.inf
    by_top = sorted(range(len(prepared)), key=lambda i: prepared[i].top)
    tops = np.cumsum([prepared[i].top for i in by_top])
    n_minor = int(np.searchsorted(tops * (1.0 + _SLACK), theta))
    minor = [prepared[i] for i in by_top[:n_minor]]
    major = [prepared[i] for i in by_top[n_minor:]]
    cand_parts: list[npt.NDArray[np.int32]] = []
    bound_parts: list[F64] = []
    written: list[npt.NDArray[np.int32]] = []
    try:
        for p in minor:
            per_block[p.ids] += p.bounds
        for p in major:
            slots, idx = _visible_postings(snap, p.term.slots)
            per_slot[slots] += (
                p.exact[idx]
                if p.exact is not None
                else contributions(p.term.weight, p.term.tfs[idx], snap.doc_len[slots], k1, b, snap.avgdl)
            )
            written.append(slots)
        # Each chunk's bound: its essential partial score plus its block's non-essential maxima.
        # A chunk in several essential lists is taken once (flags), with the same bound.
        for slots in written:
            bound = per_slot[slots] + per_block[slots // block]
            reach = (bound * (1.0 + _SLACK) >= theta) & ~flags[slots]
            cand_parts.append(slots[reach])
            bound_parts.append(bound[reach])
            flags[slots[reach]] = True
    finally:
        for slots in written:
            per_slot[slots] = 0.0
        for slots in cand_parts:
            flags[slots] = False
        per_block[:n_blocks] = 0.0
    if not cand_parts:
        return best_slots, best_scores
    cand = np.concatenate(cand_parts).astype(np.int64)
    bound = np.concatenate(bound_parts)
    # The first round's blocks are scored already.
    cand_blocks = cand // block
    at = np.minimum(np.searchsorted(first_blocks, cand_blocks), len(first_blocks) - 1)
    fresh = first_blocks[at] != cand_blocks
    cand, bound = cand[fresh], bound[fresh]
    # Highest bounds first, in growing batches: theta rises and drops the rest.
    order = np.argsort(-bound, kind="stable")
    cand, bound = cand[order], bound[order]
    batch = _CANDIDATE_BATCH
    while len(cand):
        now, cand, bound = cand[:batch], cand[batch:], bound[batch:]
        scores = _score_slots(snap, prepared, now, k1, b)
        best_slots, best_scores = rank(
            np.concatenate([best_slots, now]), np.concatenate([best_scores, scores]), k
        )
        if len(best_scores) == k:
            theta = float(best_scores[-1])
            keep = bound * (1.0 + _SLACK) >= theta
            cand, bound = cand[keep], bound[keep]
        batch *= 4
    return best_slots, best_scores


def _visible_postings(
    snap: IndexSnapshot, slots: npt.NDArray[np.int32]
) -> tuple[npt.NDArray[np.int32], I64 | slice]:
    """The visible ones of a term's postings, and where they are in its arrays."""
    if snap.n_dead:
        keep = snap.died[slots] > snap.version
        if not keep.all():
            idx = np.flatnonzero(keep)
            return slots[idx], idx
    return slots, slice(None)


def _gather(
    snap: IndexSnapshot, term: QueryTerm, first: I64, shift: I64
) -> tuple[I64, npt.NDArray[np.int32], I64] | None:
    """A term's visible postings in the blocks starting at ``first``: their indexes in the
    term's postings, their slots, and their places in the blocks' local arrays."""
    block = snap.segment.block
    lo = np.searchsorted(term.slots, first)
    hi = np.searchsorted(term.slots, first + block)
    lengths = hi - lo
    total = int(lengths.sum())
    if total == 0:
        return None
    ends = np.cumsum(lengths)
    idx = np.repeat(lo - (ends - lengths), lengths) + np.arange(total)
    slots = term.slots[idx]
    shifts = np.repeat(shift, lengths)
    if snap.n_dead:
        keep = snap.died[slots] > snap.version
        if not keep.all():
            idx, slots, shifts = idx[keep], slots[keep], shifts[keep]
    return idx, slots, slots - shifts


def _local_layout(snap: IndexSnapshot, chosen: I64) -> tuple[I64, I64]:
    block = snap.segment.block
    first = chosen * block
    # A posting at slot s in the i-th chosen block goes to local[i * block + s - first[i]].
    return first, first - np.arange(len(chosen), dtype=np.int64) * block


def _contributions_at(
    snap: IndexSnapshot, p: _Prepared, idx: I64, slots: npt.NDArray[np.integer], k1: float, b: float
) -> F64:
    if p.exact is not None:
        return p.exact[idx]
    return contributions(p.term.weight, p.term.tfs[idx], snap.doc_len[slots], k1, b, snap.avgdl)


def _score_blocks(
    snap: IndexSnapshot, prepared: Sequence[_Prepared], chosen: I64, k1: float, b: float
) -> tuple[I64, F64]:
    """Exact scores of the visible touched slots in the ``chosen`` blocks (ascending ids)."""
    block = snap.segment.block
    first, shift = _local_layout(snap, chosen)
    local = np.zeros(len(chosen) * block, dtype=np.float64)
    seen = np.zeros(len(chosen) * block, dtype=bool)
    for p in prepared:  # in query order: the exhaustive scorer's order of summation
        found = _gather(snap, p.term, first, shift)
        if found is not None:
            idx, slots, pos = found
            local[pos] += _contributions_at(snap, p, idx, slots, k1, b)
            seen[pos] = True
    hits = np.flatnonzero(seen)
    return first[hits // block] + hits % block, local[hits]


def _score_slots(snap: IndexSnapshot, prepared: Sequence[_Prepared], cand: I64, k1: float, b: float) -> F64:
    """Exact scores of visible ``cand`` slots (ascending), every term in query order."""
    scores = np.zeros(len(cand), dtype=np.float64)
    for p in prepared:
        slots = p.term.slots
        if not len(slots):
            continue
        at = np.searchsorted(slots, cand)
        inside = at < len(slots)
        present = np.zeros(len(cand), dtype=bool)
        present[inside] = slots[at[inside]] == cand[inside]
        if present.any():
            idx = at[present]
            scores[present] += _contributions_at(snap, p, idx, cand[present], k1, b)
    return scores
