"""Writing a ``LiveIndex``'s postings: appends (one chunk, or a batch grouped with numpy),
compaction, death versions, and the block maxima that :mod:`verityrag.index.bm25` prunes with.

A term's postings are append-only buffers of slots (int32, ascending) and term frequencies
(uint16, uint32 once one passes 65,535). Buffers grow by a quarter into new ones; a writer only
writes past what it published, so a reader holding an older entry reads a valid prefix. Once a
term has :data:`LONG` postings it keeps, for every block of :data:`BLOCK` slots that holds it,
an upper bound of its tf part ``tf (k1 + 1) / (tf + k1 (1 - b + b dl / a0))`` there, rounded
up to float32 (:class:`~verityrag.index.snapshot.BlockMax`); a later posting in the last block
raises its bound in place, which only loosens it for older readers.
"""

from __future__ import annotations

from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain, compress
from typing import Any

import numpy as np
import numpy.typing as npt

from verityrag.index.snapshot import BlockMax, OpenedPostings, Posting, Segment

#: Slots per block of the block maxima.
BLOCK = 128
#: A term keeps block maxima once it has this many postings; shorter lists are bounded at query time.
LONG = 512
# Block maxima are recomputed when the average length moves this far from the one they used.
_A0_DRIFT = 1.25

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
# Term frequencies: uint16, or uint32 for a term whose frequency in some chunk passes 65,535.
Tfs = npt.NDArray[np.uint16] | npt.NDArray[np.uint32]
_TF16_MAX = 65535


def _grown(n: int, needed: int) -> int:
    """A buffer's next capacity: 25% more (not twice: a million chunks' postings would keep a
    third of their RAM unused), at least ``needed``."""
    return max(needed, n + n // 4 + 4)


def _with_room(buf: npt.NDArray[Any], n: int, needed: int, dtype: Any = None) -> npt.NDArray[Any]:
    """``buf`` if it holds ``needed`` entries, else a larger copy of its first ``n`` (in ``dtype``)."""
    if needed <= len(buf) and (dtype is None or buf.dtype == dtype):
        return buf
    grown = np.empty(_grown(n, needed) if needed > len(buf) else len(buf), dtype=dtype or buf.dtype)
    grown[:n] = buf[:n]
    return grown


def _tf_dtype(largest: int) -> Any:
    return np.uint16 if largest <= _TF16_MAX else np.uint32


def _tf_part(tfs: npt.ArrayLike, dl: npt.ArrayLike, k1: float, b: float, a0: float | F64) -> F64:
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
    seg: Segment, slots: npt.NDArray[np.int32], tfs: Tfs, k1: float, b: float, a0: float
) -> BlockMax:
    """Block maxima of a whole posting list at the average length ``a0``."""
    ids, maxes = _group_max(slots, _tf_part(tfs, seg.doc_len.buf[slots], k1, b, a0), seg.block)
    capacity = _grown(len(ids), 16)
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
    id_buf, max_buf = _with_room(id_buf, n, total), _with_room(max_buf, n, total)
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
            sbuf = np.empty(2, dtype=np.int32)
            tbuf = np.empty(2, dtype=_tf_dtype(freq))
            sbuf[0] = slot
            tbuf[0] = freq
            postings[term] = Posting(sbuf, tbuf, 1)
            continue
        sbuf, tbuf, n, blocks = entry
        if n == len(sbuf) or freq > _TF16_MAX:
            sbuf = _with_room(sbuf, n, n + 1)
            tbuf = _with_room(tbuf, n, len(sbuf), np.uint32 if freq > _TF16_MAX else None)
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
    freqs = np.fromiter(chain.from_iterable(tf.values() for _, tf in items), np.int64, len(keys))
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
    # Per term: its largest frequency; per (term, block) run: the block id and the largest tf
    # part at the term's reference length (the terms that keep block maxima use them).
    largest = np.maximum.reduceat(tf_arr, starts).tolist()
    narrow = tf_arr.astype(np.uint16) if max(largest) <= _TF16_MAX else None
    entries = [postings.get(terms[i]) for i in ids[starts].tolist()]
    a0 = [e.blocks.a0 if e is not None and e.blocks is not None else avgdl for e in entries]
    block_of = slot_arr // seg.block
    runs = np.flatnonzero(np.diff(block_of, prepend=-1) | np.diff(ids, prepend=-1))
    parts = _tf_part(tf_arr, seg.doc_len.buf[slot_arr], k1, b, np.repeat(a0, ends - starts))
    run_ids = block_of[runs].astype(np.int32)
    run_maxes = _round_up(np.maximum.reduceat(parts, runs))
    first_run = np.searchsorted(runs, starts).tolist()
    last_run = np.searchsorted(runs, ends).tolist()
    for t, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        term = terms[ids[start]]
        entry = entries[t]
        wide = largest[t] > _TF16_MAX
        if entry is None:
            tfs = tf_arr[start:end].astype(np.uint32) if wide else narrow[start:end].copy()  # type: ignore[index]
            posting = Posting(slot_arr[start:end].copy(), tfs, end - start)
            if end - start >= LONG:
                posting = Posting(
                    posting.slots, tfs, end - start, _with_blocks(seg, posting, 0, k1, b, avgdl)
                )
            postings[term] = posting
            continue
        sbuf, tbuf, n, blocks = entry
        total = n + end - start
        # Grown by a quarter into new buffers when full: copying the term's whole postings on
        # every batch made a bulk batch (or a 64-chunk document) cost O(corpus), not O(batch).
        sbuf = _with_room(sbuf, n, total)
        tbuf = _with_room(tbuf, n, len(sbuf), np.uint32 if wide else None)
        # Written past n only: readers of the old entry read [:n].
        sbuf[n:total], tbuf[n:total] = slot_arr[start:end], tf_arr[start:end]
        posting = Posting(sbuf, tbuf, total)
        if blocks is not None and 1 / _A0_DRIFT <= avgdl / blocks.a0 <= _A0_DRIFT:
            runs_of_term = slice(first_run[t], last_run[t])
            blocks = _extend_blocks(blocks, run_ids[runs_of_term], run_maxes[runs_of_term])
        elif total >= LONG:
            blocks = _with_blocks(seg, posting, n, k1, b, avgdl)
        postings[term] = Posting(sbuf, tbuf, total, blocks)
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


def live_frequencies(seg: Segment) -> Counter[str]:
    """Per term, how many of its postings are alive in the newest version (its postings less its
    deaths): the document frequencies a ``LiveIndex`` keeps, derived when it opens an image."""
    postings = seg.postings
    where: dict[str, int] | None = None
    if isinstance(postings, OpenedPostings):
        terms, lengths, where = postings.lengths()
    else:
        terms = list(postings)
        lengths = np.fromiter((p.n for p in postings.values()), np.int64, len(terms))
    if seg.dead:
        if where is None:
            where = dict(zip(terms, range(len(terms)), strict=True))
        for term, log in seg.dead.items():
            lengths[where[term]] -= len(log)
    alive = lengths > 0
    return Counter(dict(zip(compress(terms, alive.tolist()), lengths[alive].tolist(), strict=True)))


def mark_dead(seg: Segment, terms: Iterable[str], version: int) -> None:
    """Record that one posting of each of ``terms`` died at ``version`` (versions only grow)."""
    dead = seg.dead
    for term in terms:
        log = dead.get(term)
        if log is None:
            log = dead[term] = array("q")
        log.append(version)
