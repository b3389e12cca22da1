"""BM25 top-k compiled with numba: MaxScore over the query's posting lists, exact.

The same scores as the exhaustive scorer (:func:`verityrag.index.bm25.score_all`: each term's
contribution computed in float64 in the same order of operations, summed per slot in query
order) and the same ranking (highest score, then earliest slot), without a Python step per term
or per block.

**MaxScore.** Each long list (one with block maxima) has an upper bound of its contribution
(its weight times its largest block maximum, at the snapshot's average length). Short lists,
then long lists from the highest bound down, are scored whole, posting by posting, until the
lists left could not lift a chunk none of the scored lists holds to the k-th best partial score
so far; the lists left are then only looked up for the chunks already touched (a binary search
per chunk, or a pass over the list when the chunks are many), and a chunk is dropped once its
partial score plus the bounds of the lists left cannot reach the k-th. Contributions are
positive (a query with a weight at or below zero scores every list whole, in query order), so a
partial score is a lower bound of the final one. The chunks left within a hair of the k-th
score are summed again in query order, so scores and ties are the exhaustive scorer's bit for
bit. At a million chunks about half of a query's postings are read one by one (p50), the rest
looked up or never read.

The vectorised scorers stay the reference (differential tests) and serve when numba is not
installed.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from verityrag.index._postings import LONG
from verityrag.index.bm25 import tf_part_bounds

if TYPE_CHECKING:
    from verityrag.index.bm25 import QueryTerm
    from verityrag.index.snapshot import IndexSnapshot

try:
    from verityrag.embed._jit import compiled
except ImportError:  # pragma: no cover - numba is in requirements.txt; the vectorised path serves
    AVAILABLE = False
else:
    AVAILABLE = True

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

# Bounds are compared with this relative margin: they are rounded up float32 block maxima, and
# partial scores are summed in another order than the final ones.
SLACK = 1e-6
# A list is looked up chunk by chunk (binary search) when it is this many times longer than
# the chunks to find in it; otherwise it is read through once.
_LOOKUP_RATIO = 16


def _contribution(weight: float, tf: float, dl: float, k1: float, b: float, avgdl: float) -> float:
    # the order of operations of bm25.contributions
    return weight * (tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avgdl)))


def _find(slots: Any, lo: int, hi: int, slot: int) -> int:
    """Where ``slot`` is in the ascending ``slots[lo:hi]`` (``hi`` when it is not)."""
    end = hi
    while lo < hi:
        mid = (lo + hi) >> 1
        if slots[mid] < slot:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < end and slots[lo] == slot else end


def _kth(scores: Any, cand: Any, n: int, k: int) -> float:
    """The k-th highest of ``scores[cand[:n]]`` (``n >= k``): the heap :func:`_rank` keeps, its
    slots all equal so that only the scores order it."""
    heap_scores = np.empty(k, dtype=np.float64)
    heap_slots = np.zeros(k, dtype=np.int64)
    for i in range(k):
        heap_scores[i] = scores[cand[i]]
        _sift_up(heap_scores, heap_slots, i)
    for i in range(k, n):
        value = scores[cand[i]]
        if value > heap_scores[0]:
            heap_scores[0] = value
            _sift_down(heap_scores, heap_slots, 0, k)
    return float(heap_scores[0])


def _kernel(
    starts: Any,
    slots: Any,
    tfs: Any,
    weights: Any,
    order: Any,
    suffix: Any,
    n_whole: int,
    doc_len: Any,
    died: Any,
    version: int,
    check_dead: bool,
    k1: float,
    b: float,
    avgdl: float,
    k: int,
    scores: Any,
    seen: Any,
    touched: Any,
) -> tuple[Any, Any, int]:
    """``order``: the lists in the order they are scored; ``suffix[i]``: the bound of
    ``order[i:]`` together; the first ``n_whole`` are scored whole whatever the bounds say.
    Returns the top-k slots, their scores and how many postings were read one by one."""
    n_terms = len(order)
    n_touched = 0
    scored = 0
    most = 0.0  # the sum of the scored lists' largest contributions: no partial score is higher
    theta = -np.inf
    i = 0
    while i < n_terms:
        if i >= n_whole and n_touched >= k and suffix[i] * (1.0 + SLACK) < most:
            theta = _kth(scores, touched, n_touched, k)
            if suffix[i] * (1.0 + SLACK) < theta:
                break  # no chunk outside ``touched`` can reach the top k
        t = order[i]
        weight = weights[t]
        top = 0.0
        for j in range(starts[t], starts[t + 1]):
            slot = slots[j]
            if check_dead and died[slot] <= version:
                continue
            value = _contribution(weight, np.float64(tfs[j]), np.float64(doc_len[slot]), k1, b, avgdl)
            if value > top:
                top = value
            if not seen[slot]:
                seen[slot] = True
                touched[n_touched] = slot
                n_touched += 1
            scores[slot] += value
        scored += starts[t + 1] - starts[t]
        most += top
        i += 1
    cand = touched  # from here on, only the chunks touched so far
    n_cand = n_touched
    while i < n_terms:
        kept = 0
        for c in range(n_cand):
            slot = cand[c]
            if (scores[slot] + suffix[i]) * (1.0 + SLACK) >= theta:
                cand[kept] = slot
                kept += 1
            else:
                scores[slot] = 0.0
                seen[slot] = False
        n_cand = kept
        t = order[i]
        weight = weights[t]
        lo, hi = starts[t], starts[t + 1]
        if n_cand * _LOOKUP_RATIO < hi - lo:
            for c in range(n_cand):
                slot = cand[c]
                j = _find(slots, lo, hi, slot)
                if j < hi:  # a candidate is alive: no check of ``died``
                    scores[slot] += _contribution(
                        weight, np.float64(tfs[j]), np.float64(doc_len[slot]), k1, b, avgdl
                    )
        else:
            for j in range(lo, hi):
                slot = slots[j]
                if seen[slot]:
                    scores[slot] += _contribution(
                        weight, np.float64(tfs[j]), np.float64(doc_len[slot]), k1, b, avgdl
                    )
            scored += hi - lo
        i += 1
        if n_cand >= k:
            theta = max(theta, _kth(scores, cand, n_cand, k))
    if n_whole == n_terms:  # every list scored whole, in query order: the sums are the final ones
        out_slots, out_scores = _rank(cand, scores, n_cand, k)
        for c in range(n_cand):
            scores[cand[c]] = 0.0  # the scratch arrays are left as they were found
            seen[cand[c]] = False
        return out_slots, out_scores, scored
    kth = _kth(scores, cand, n_cand, k) if n_cand >= k else -np.inf
    n_final = 0
    for c in range(n_cand):
        slot = cand[c]
        if scores[slot] * (1.0 + SLACK) >= kth:
            cand[n_final] = slot
            n_final += 1
        scores[slot] = 0.0
        seen[slot] = False
    for c in range(n_final):  # summed again in query order, the exhaustive scorer's
        slot = cand[c]
        total = 0.0
        for t in range(len(weights)):
            j = _find(slots, starts[t], starts[t + 1], slot)
            if j < starts[t + 1]:
                total += _contribution(
                    weights[t], np.float64(tfs[j]), np.float64(doc_len[slot]), k1, b, avgdl
                )
        scores[slot] = total
    out_slots, out_scores = _rank(cand, scores, n_final, k)
    for c in range(n_final):
        scores[cand[c]] = 0.0
    return out_slots, out_scores, scored


def _rank(cand: Any, scores: Any, n: int, k: int) -> tuple[Any, Any]:
    """The best ``k`` of ``cand[:n]`` by ``scores`` (highest score, then earliest slot)."""
    # a min-heap of the best k: (score, -slot) smallest at the root
    size = min(k, n)
    heap_scores = np.empty(size, dtype=np.float64)
    heap_slots = np.empty(size, dtype=np.int64)
    filled = 0
    for i in range(n):
        slot = cand[i]
        score = scores[slot]
        if filled < size:
            heap_scores[filled] = score
            heap_slots[filled] = slot
            _sift_up(heap_scores, heap_slots, filled)
            filled += 1
        elif _worse(heap_scores[0], heap_slots[0], score, slot):
            heap_scores[0] = score
            heap_slots[0] = slot
            _sift_down(heap_scores, heap_slots, 0, size)
    # best first: pop the heap from the back
    out_scores = np.empty(filled, dtype=np.float64)
    out_slots = np.empty(filled, dtype=np.int64)
    for i in range(filled - 1, -1, -1):
        out_scores[i] = heap_scores[0]
        out_slots[i] = heap_slots[0]
        heap_scores[0] = heap_scores[i]
        heap_slots[0] = heap_slots[i]
        _sift_down(heap_scores, heap_slots, 0, i)
    return out_slots, out_scores


def _worse(score_a: float, slot_a: int, score_b: float, slot_b: int) -> bool:
    """a ranks below b: a lower score, or the same score and a later slot."""
    return score_a < score_b or (score_a == score_b and slot_a > slot_b)


def _sift_up(scores: Any, slots: Any, i: int) -> None:
    while i > 0:
        parent = (i - 1) // 2
        if _worse(scores[i], slots[i], scores[parent], slots[parent]):
            scores[i], scores[parent] = scores[parent], scores[i]
            slots[i], slots[parent] = slots[parent], slots[i]
            i = parent
        else:
            return


def _sift_down(scores: Any, slots: Any, i: int, size: int) -> None:
    while True:
        left, right, low = 2 * i + 1, 2 * i + 2, i
        if left < size and _worse(scores[left], slots[left], scores[low], slots[low]):
            low = left
        if right < size and _worse(scores[right], slots[right], scores[low], slots[low]):
            low = right
        if low == i:
            return
        scores[i], scores[low] = scores[low], scores[i]
        slots[i], slots[low] = slots[low], slots[i]
        i = low


if AVAILABLE:
    _worse = compiled(_worse)
    _sift_up = compiled(_sift_up)
    _sift_down = compiled(_sift_down)
    _contribution = compiled(_contribution)
    _find = compiled(_find)
    _kth = compiled(_kth)
    _rank = compiled(_rank)
    _kernel = compiled(_kernel)


def top_k(snap: IndexSnapshot, terms: Sequence[QueryTerm], k: int, k1: float, b: float) -> tuple[I64, F64]:
    """The top-``k`` slots and scores of the exhaustive scorer, ranked as :func:`bm25.rank` does."""
    slots, scores, _ = search(snap, terms, k, k1, b)
    return slots, scores


def search(
    snap: IndexSnapshot, terms: Sequence[QueryTerm], k: int, k1: float, b: float
) -> tuple[I64, F64, int]:
    """:func:`top_k`, and how many postings it read one by one (the rest were looked up or never read)."""
    n_terms = len(terms)
    starts = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum([len(t.slots) for t in terms], out=starts[1:])
    # As stored (int32 slots; uint16 frequencies, uint32 if a term has wide ones): the kernel is
    # compiled for each, and widening them here was a third of a query at 100k chunks.
    slots = np.concatenate([t.slots for t in terms])
    tfs = np.concatenate([t.tfs for t in terms])
    weights = np.asarray([t.weight for t in terms], dtype=np.float64)
    order, suffix, n_whole = _plan(snap, terms, k1)
    scores, seen, touched = _scratch(snap.n_slots, int(starts[-1]))
    out_slots, out_scores, scored = _kernel(
        starts,
        slots,
        tfs,
        weights,
        order,
        suffix,
        n_whole,
        snap.doc_len,
        snap.died,
        snap.version,
        snap.n_dead > 0,
        k1,
        b,
        snap.avgdl,
        k,
        scores,
        seen,
        touched,
    )
    return out_slots, out_scores, int(scored)


def _plan(snap: IndexSnapshot, terms: Sequence[QueryTerm], k1: float) -> tuple[I64, F64, int]:
    """The order the lists are scored in (short lists first, then long ones by bound, highest
    first), the bound of each suffix of that order, and how many are scored whole regardless."""
    n_terms = len(terms)
    bounds = np.full(n_terms, np.inf)
    if all(t.weight > 0 for t in terms):  # otherwise a partial score bounds nothing: all whole
        for i, term in enumerate(terms):
            blocks = term.blocks
            if blocks is not None and blocks.n and len(term.slots) >= LONG:
                largest = blocks.maxes[: blocks.n].max(keepdims=True)
                bounds[i] = term.weight * float(tf_part_bounds(largest, blocks.a0, snap.avgdl, k1)[0])
    order = np.argsort(-bounds, kind="stable")  # the unbounded (short) lists first, in query order
    n_whole = int(np.count_nonzero(np.isinf(bounds)))
    if n_whole == n_terms:
        return np.arange(n_terms, dtype=np.int64), np.zeros(n_terms + 1), n_terms
    ordered = np.where(np.isinf(bounds), 0.0, bounds)[order]
    suffix = np.zeros(n_terms + 1)
    suffix[:n_terms] = np.cumsum(ordered[::-1])[::-1]
    return order.astype(np.int64), suffix, n_whole


_local = threading.local()
_warming = threading.Event()  # set while the compiled code is being readied in the background


def ready() -> bool:
    """Whether a query may call the compiled code without waiting for it to be readied: false
    only while :func:`warm_up` runs (the vectorised scorer answers alike meanwhile)."""
    return not _warming.is_set()


def warm_up() -> None:
    """Ready the compiled top-k in a background thread: the first compiled call of a process,
    its machine code cached, still sets up numba's lowering (~0.4 s); a restarted index answers
    its first queries with the vectorised scorer meanwhile instead of waiting."""
    if not AVAILABLE or _warming.is_set():
        return
    _warming.set()
    threading.Thread(target=_run_once, name="bm25-warm-up", daemon=True).start()


def _run_once() -> None:
    try:  # the types the index's arrays have (int32 slots and lengths, uint16 frequencies)
        one = np.zeros(1, dtype=np.int64)
        _kernel(
            np.array([0, 1], dtype=np.int64),
            np.zeros(1, dtype=np.int32),
            np.ones(1, dtype=np.uint16),
            np.ones(1),
            one,
            np.zeros(2),
            1,
            np.ones(1, dtype=np.int32),
            np.full(1, np.iinfo(np.int64).max),
            0,
            False,
            1.5,
            0.75,
            1.0,
            1,
            np.zeros(1),
            np.zeros(1, dtype=np.bool_),
            one.copy(),
        )
    finally:
        _warming.clear()


def _scratch(n_slots: int, n_postings: int) -> tuple[F64, npt.NDArray[np.bool_], I64]:
    """This thread's scratch: a score and a flag per slot (left zeroed by the kernel) and room
    for the list of the slots touched."""
    scores: F64 | None = getattr(_local, "scores", None)
    if scores is None or len(scores) < n_slots:
        size = max(n_slots, 2 * (0 if scores is None else len(scores)))
        _local.scores, _local.seen = np.zeros(size, dtype=np.float64), np.zeros(size, dtype=np.bool_)
    touched: I64 | None = getattr(_local, "touched", None)
    if touched is None or len(touched) < n_postings:
        _local.touched = np.empty(
            max(n_postings, 2 * (0 if touched is None else len(touched))), dtype=np.int64
        )
    return _local.scores, _local.seen, _local.touched
