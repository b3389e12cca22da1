"""BM25 top-k compiled with numba: every visible posting of every query term scored in one pass,
the best ``k`` kept in a heap.

The same scores as the exhaustive scorer (:func:`verityrag.index.bm25.score_all`: each term's
contribution computed in float64 in the same order of operations, summed per slot in query
order) and the same ranking (highest score, then earliest slot), without a Python step per term
or per block: at a million chunks the postings of a query fit in a compiled loop where the
vectorised block-max scorer spent its time in numpy calls. The vectorised scorers stay the
reference (differential tests) and serve when numba is not installed.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

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


def _kernel(
    starts: Any,
    slots: Any,
    tfs: Any,
    weights: Any,
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
) -> tuple[Any, Any]:
    n_touched = 0
    for t in range(len(weights)):
        weight = weights[t]
        for j in range(starts[t], starts[t + 1]):
            slot = slots[j]
            if check_dead and died[slot] <= version:
                continue
            tf = np.float64(tfs[j])
            dl = np.float64(doc_len[slot])
            # the order of operations of bm25.contributions
            value = weight * (tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * dl / avgdl)))
            if not seen[slot]:
                seen[slot] = True
                touched[n_touched] = slot
                n_touched += 1
            scores[slot] += value
    # a min-heap of the best k: (score, -slot) smallest at the root
    size = min(k, n_touched)
    heap_scores = np.empty(size, dtype=np.float64)
    heap_slots = np.empty(size, dtype=np.int64)
    filled = 0
    for i in range(n_touched):
        slot = touched[i]
        score = scores[slot]
        scores[slot] = 0.0  # the scratch arrays are left as they were found
        seen[slot] = False
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
    _kernel = compiled(_kernel)


def top_k(snap: IndexSnapshot, terms: Sequence[QueryTerm], k: int, k1: float, b: float) -> tuple[I64, F64]:
    """The top-``k`` slots and scores of the exhaustive scorer, ranked as :func:`bm25.rank` does."""
    starts = np.zeros(len(terms) + 1, dtype=np.int64)
    np.cumsum([len(t.slots) for t in terms], out=starts[1:])
    # As stored (int32 slots; uint16 frequencies, uint32 if a term has wide ones): the kernel is
    # compiled for each, and widening them here was a third of a query at 100k chunks.
    slots = np.concatenate([t.slots for t in terms])
    tfs = np.concatenate([t.tfs for t in terms])
    weights = np.asarray([t.weight for t in terms], dtype=np.float64)
    scores, seen, touched = _scratch(snap.n_slots, int(starts[-1]))
    return _kernel(
        starts,
        slots,
        tfs,
        weights,
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


_local = threading.local()


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
