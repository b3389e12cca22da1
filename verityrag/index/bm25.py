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
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from verityrag.index.snapshot import BlockMax, IndexSnapshot, Posting, Segment

__all__ = [
    "BLOCK",
    "LONG",
    "SMALL",
    "QueryTerm",
    "add_postings",
    "add_postings_bulk",
    "contributions",
    "document_frequency",
    "query_terms",
    "rebuild_postings",
    "score_all",
    "top_k",
]

#: Slots per block of the block maxima.
BLOCK = 128
#: A term keeps block maxima once it has this many postings; shorter lists are bounded at query time.
LONG = 512
#: A query whose terms have at most this many postings in all is scored whole, without pruning.
SMALL = 4096
# A block is skipped when its bound, raised by this relative margin, is below the k-th score: the
# bounds are computed in float64 from rounded-up float32 maxima, the scores with a float32 step.
_SLACK = 1e-6
# Block maxima are recomputed when the average length moves this far from the one they used.
_A0_DRIFT = 1.25
_FIRST_ROUND = 64  # blocks scored whole to get a first k-th score
_CANDIDATE_BATCH = 256  # chunks scored exactly before the k-th score is raised (then 4x more)

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


class QueryTerm(NamedTuple):
    """One distinct query term as a snapshot sees it: weight ``count * idf``, visible postings."""

    weight: float
    slots: npt.NDArray[np.int32]
    tfs: npt.NDArray[np.float32]
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
    weight: float, tfs: npt.NDArray[np.float32], dl: npt.NDArray[np.int32], k1: float, b: float, avgdl: float
) -> F64:
    """One term's score in each posting: the only place a BM25 term score is computed."""
    return weight * (tfs * (k1 + 1.0) / (tfs + k1 * (1.0 - b + b * dl / avgdl)))


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
    snap: IndexSnapshot, slots: npt.NDArray[np.int32], tfs: npt.NDArray[np.float32]
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
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


def _prepare(snap: IndexSnapshot, term: QueryTerm, n_blocks: int, k1: float, b: float) -> _Prepared:
    if term.blocks is not None:
        blocks = term.blocks
        ids = blocks.ids[: blocks.n]
        if blocks.n and ids[-1] >= n_blocks:  # blocks past the snapshot (a later write)
            ids = ids[: int(np.searchsorted(ids, n_blocks))]
        parts = blocks.maxes[: len(ids)].astype(np.float64) * max(1.0, snap.avgdl / blocks.a0)
        bounds = term.weight * np.minimum(parts, k1 + 1.0)
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


# ------------------------------------------------------------------ writing


def _tf_part(tfs: npt.ArrayLike, dl: npt.ArrayLike, k1: float, b: float, a0: float) -> F64:
    tf = np.asarray(tfs, dtype=np.float64)
    return tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * np.asarray(dl, dtype=np.float64) / a0))


# Bounds are stored as float32 after this relative raise: float32 rounding moves a value by at
# most 2**-24 of it, so the stored bound is never below the exact one.
_ROUND_UP = 1.0 + 2.0**-20


def _round_up(values: F64) -> npt.NDArray[np.float32]:
    return (values * _ROUND_UP).astype(np.float32)


def _group_max(slots: npt.NDArray[np.int32], part: F64, block: int) -> tuple[npt.NDArray[np.int32], F64]:
    bids = slots // block
    starts = np.flatnonzero(np.diff(bids, prepend=-1))
    return bids[starts].astype(np.int32), np.maximum.reduceat(part, starts)


def build_blocks(
    seg: Segment, slots: npt.NDArray[np.int32], tfs: npt.NDArray[np.float32], k1: float, b: float, a0: float
) -> BlockMax:
    """Block maxima of a whole posting list at the average length ``a0``."""
    ids, maxes = _group_max(slots, _tf_part(tfs, seg.doc_len.buf[slots], k1, b, a0), seg.block)
    capacity = max(16, 2 * len(ids))
    id_buf = np.empty(capacity, dtype=np.int32)
    max_buf = np.empty(capacity, dtype=np.float32)
    id_buf[: len(ids)] = ids
    max_buf[: len(ids)] = _round_up(maxes)
    return BlockMax(id_buf, max_buf, len(ids), a0)


def _extend_blocks(blocks: BlockMax, ids: npt.NDArray[np.int32], maxes: npt.NDArray[np.float32]) -> BlockMax:
    n = blocks.n
    id_buf, max_buf = blocks.ids, blocks.maxes
    if n and len(ids) and ids[0] == id_buf[n - 1]:
        # The last block grows: raising its bound in place only loosens it for older readers.
        if maxes[0] > max_buf[n - 1]:
            max_buf[n - 1] = maxes[0]
        ids, maxes = ids[1:], maxes[1:]
    total = n + len(ids)
    if total > len(id_buf):
        new_ids = np.empty(max(total, 2 * n), dtype=np.int32)
        new_maxes = np.empty(max(total, 2 * n), dtype=np.float32)
        new_ids[:n], new_maxes[:n] = id_buf[:n], max_buf[:n]
        id_buf, max_buf = new_ids, new_maxes
    id_buf[n:total], max_buf[n:total] = ids, maxes
    return BlockMax(id_buf, max_buf, total, blocks.a0)


def _with_blocks(
    seg: Segment,
    posting: Posting,
    new_from: int,
    k1: float,
    b: float,
    avgdl: float,
) -> BlockMax | None:
    """The block maxima after postings ``[new_from, n)`` were appended (built once the list is long)."""
    n = posting.n
    blocks = posting.blocks
    if n < LONG:
        return None
    if blocks is None or not 1 / _A0_DRIFT <= avgdl / blocks.a0 <= _A0_DRIFT:
        return build_blocks(seg, posting.slots[:n], posting.tfs[:n], k1, b, avgdl)
    slots = posting.slots[new_from:n]
    ids, maxes = _group_max(
        slots, _tf_part(posting.tfs[new_from:n], seg.doc_len.buf[slots], k1, b, blocks.a0), seg.block
    )
    return _extend_blocks(blocks, ids, _round_up(maxes))


def add_postings(seg: Segment, slot: int, tf: Mapping[str, int], k1: float, b: float, avgdl: float) -> None:
    """Append one chunk's postings (streaming ingest): O(its terms), plain Python per term."""
    postings = seg.postings
    dl = float(seg.doc_len.buf[slot])
    block_id = slot // seg.block
    for term, freq in tf.items():
        entry = postings.get(term)
        if entry is None:
            sbuf = np.empty(4, dtype=np.int32)
            tbuf = np.empty(4, dtype=np.float32)
            sbuf[0] = slot
            tbuf[0] = freq
            postings[term] = Posting(sbuf, tbuf, 1)
            continue
        sbuf, tbuf, n, blocks = entry
        if n == len(sbuf):
            sbuf = np.concatenate([sbuf, np.empty(n, dtype=np.int32)])
            tbuf = np.concatenate([tbuf, np.empty(n, dtype=np.float32)])
        sbuf[n] = slot
        tbuf[n] = freq
        if blocks is None or not blocks.a0 / _A0_DRIFT <= avgdl <= blocks.a0 * _A0_DRIFT:
            posting = Posting(sbuf, tbuf, n + 1, blocks)
            if n + 1 >= LONG:
                posting = Posting(sbuf, tbuf, n + 1, _with_blocks(seg, posting, n, k1, b, avgdl))
            postings[term] = posting
            continue
        # The new posting's bound, rounded up (as _round_up does) in plain floats.
        bound = freq * (k1 + 1.0) / (freq + k1 * (1.0 - b + b * dl / blocks.a0)) * _ROUND_UP
        last = blocks.n - 1
        if blocks.ids[last] == block_id:
            if bound > blocks.maxes[last]:  # raised in place: only looser for older readers
                blocks.maxes[last] = bound
        elif blocks.n < len(blocks.ids):  # room: written past n, as postings are
            blocks.ids[blocks.n] = block_id
            blocks.maxes[blocks.n] = bound
            blocks = BlockMax(blocks.ids, blocks.maxes, blocks.n + 1, blocks.a0)
        else:
            blocks = _extend_blocks(blocks, np.array([block_id], np.int32), np.array([bound], np.float32))
        postings[term] = Posting(sbuf, tbuf, n + 1, blocks)


def add_postings_bulk(
    seg: Segment, items: Sequence[tuple[int, Mapping[str, int]]], k1: float, b: float, avgdl: float
) -> Counter[str]:
    """Append many chunks' postings at once: group by term with numpy, one merge per term.

    Returns the document frequency each term gained."""
    gained: Counter[str] = Counter()
    if not items:
        return gained
    # Everything below runs in C-level loops (chain, map, fromiter): restoring 100k
    # chunks is dominated by this function.
    keys = list(chain.from_iterable(tf.keys() for _, tf in items))
    if not keys:
        return gained
    lengths = np.fromiter((len(tf) for _, tf in items), dtype=np.int64, count=len(items))
    slot_ids = np.fromiter((slot for slot, _ in items), dtype=np.int32, count=len(items))
    freqs = np.fromiter(chain.from_iterable(tf.values() for _, tf in items), np.float32, len(keys))
    vocab: defaultdict[str, int] = defaultdict()
    vocab.default_factory = vocab.__len__  # first sight of a term gives it the next id
    term_ids = np.fromiter(map(vocab.__getitem__, keys), dtype=np.int64, count=len(keys))
    gained.update(dict(zip(vocab, np.bincount(term_ids).tolist(), strict=True)))
    order = np.argsort(term_ids, kind="stable")  # stable keeps slots ascending within a term
    ids = term_ids[order]
    slot_arr = np.repeat(slot_ids, lengths)[order]
    tf_arr = freqs[order]
    bounds = np.flatnonzero(np.diff(ids)) + 1
    starts = np.concatenate([[0], bounds])
    ends = np.concatenate([bounds, [len(ids)]])
    terms = list(vocab)
    postings = seg.postings
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        term = terms[ids[start]]
        entry = postings.get(term)
        if entry is None:
            posting = Posting(slot_arr[start:end].copy(), tf_arr[start:end].copy(), end - start)
            postings[term] = posting._replace(blocks=_with_blocks(seg, posting, 0, k1, b, avgdl))
            continue
        sbuf, tbuf, n, blocks = entry
        total = n + end - start
        if total > len(sbuf):
            # Grown by doubling into new buffers: copying the term's whole postings on every
            # batch made a bulk batch (or a 64-chunk document) cost O(corpus), not O(batch).
            new_s = np.empty(max(total, 2 * n), dtype=np.int32)
            new_t = np.empty(max(total, 2 * n), dtype=np.float32)
            new_s[:n], new_t[:n] = sbuf[:n], tbuf[:n]
            sbuf, tbuf = new_s, new_t
        # Written past n only: readers of the old entry read [:n].
        sbuf[n:total], tbuf[n:total] = slot_arr[start:end], tf_arr[start:end]
        posting = Posting(sbuf, tbuf, total, blocks)
        postings[term] = posting._replace(blocks=_with_blocks(seg, posting, n, k1, b, avgdl))
    return gained


def rebuild_postings(old: Segment, new: Segment, remap: I64, k1: float, b: float, avgdl: float) -> None:
    """Compaction: ``old``'s postings without dead slots, renumbered by ``remap`` (-1: dropped)."""
    for term, (sbuf, tbuf, n, _) in old.postings.items():
        new_slots = remap[sbuf[:n]]
        keep = new_slots >= 0
        if keep.any():
            slots = new_slots[keep].astype(np.int32)
            posting = Posting(slots, tbuf[:n][keep].copy(), len(slots))
            new.postings[term] = posting._replace(blocks=_with_blocks(new, posting, 0, k1, b, avgdl))


def mark_dead(seg: Segment, terms: Iterable[str], version: int) -> None:
    """Record that one posting of each of ``terms`` died at ``version`` (versions only grow)."""
    dead = seg.dead
    for term in terms:
        log = dead.get(term)
        if log is None:
            log = dead[term] = array("q")
        log.append(version)
