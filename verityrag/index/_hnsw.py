"""Approximate dense search for ``LiveIndex`` at scale, on hnswlib (``pip install hnswlib``).

The graph holds the vectors (float32: hnswlib has no other type), labelled by slot; the index
keeps no second copy. Deleted slots stay in the graph until compaction rebuilds it: a search
keeps what the reader's snapshot sees, so a snapshot taken before a delete still finds what it
holds, and one taken before an add never sees the new slots.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np
import numpy.typing as npt

from verityrag.index._visibility import VisibleSlots

#: Graph degree and search breadth (docs/decisions/0043-dense-exact-for-hashed-ann-for-model-vectors.md).
M = 16
EF_CONSTRUCTION = 200
EF_SEARCH = 256


class HnswIndex:
    """An hnswlib graph over slots; guarded by a lock (hnswlib's index is not thread-safe to grow)."""

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        try:
            import hnswlib
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "dense_backend='hnsw' needs hnswlib: pip install 'verityrag[ann]' (or hnswlib)"
            ) from exc
        self.dim = dim
        self._lock = threading.Lock()
        self._index = hnswlib.Index(space="ip", dim=dim)
        self._capacity = max(capacity, 1024)
        self._index.init_index(max_elements=self._capacity, ef_construction=EF_CONSTRUCTION, M=M)
        self._index.set_ef(EF_SEARCH)
        self.count = 0

    def add(self, vectors: npt.NDArray[np.float32], first_slot: int) -> None:
        with self._lock:
            needed = first_slot + len(vectors)
            if needed > self._capacity:
                while self._capacity < needed:
                    self._capacity *= 2
                self._index.resize_index(self._capacity)
            # A batch (bulk ingest, restore, the move to the graph) is inserted by every core.
            threads = 1 if len(vectors) < 1000 else min(4, os.cpu_count() or 1)
            self._index.add_items(
                np.ascontiguousarray(vectors, dtype=np.float32),
                np.arange(first_slot, needed),
                num_threads=threads,
            )
            self.count = max(self.count, needed)

    def query(
        self, vector: npt.NDArray[np.float32], k: int, snap: VisibleSlots
    ) -> tuple[list[int], list[float]] | None:
        """The ``k`` nearest slots that ``snap`` sees, or None when the graph search cannot find
        ``k`` of them (a heavily filtered graph; the caller scans instead)."""
        with self._lock:
            count = self.count
            hidden = count - snap.n_live  # dead slots, and slots written after the snapshot
            try:
                if hidden <= 0:
                    labels, distances = self._index.knn_query(vector, k=k, num_threads=1)
                    return labels[0].tolist(), (1.0 - distances[0]).tolist()
                # Ask for enough more that the visible ones usually fill k, and filter here:
                # a Python filter callback costs a call per visited node.
                wanted = min(count, int(k * count / max(count - hidden, 1)) + 10)
                labels, distances = self._index.knn_query(vector, k=wanted, num_threads=1)
                slots = labels[0].astype(np.int64)
                keep = slots < snap.n_slots
                if snap.n_dead:
                    keep &= snap.died[np.minimum(slots, snap.n_slots - 1)] > snap.version
                if int(keep.sum()) >= k:
                    chosen = np.flatnonzero(keep)[:k]
                    return slots[chosen].tolist(), (1.0 - distances[0][chosen]).tolist()
                labels, distances = self._index.knn_query(vector, k=k, num_threads=1, filter=snap.is_visible)
            except RuntimeError:  # hnswlib: fewer than k results passed the filter
                return None
        return labels[0].tolist(), (1.0 - distances[0]).tolist()

    def vectors(self, slots: list[int]) -> npt.NDArray[np.float32]:
        """The stored vectors of ``slots``, one row each."""
        if not slots:
            return np.empty((0, self.dim), dtype=np.float32)
        with self._lock:
            return np.asarray(self._index.get_items(slots, return_type="numpy"), dtype=np.float32)

    def exact_scan(self, vector: npt.NDArray[np.float32], snap: VisibleSlots) -> npt.NDArray[np.float32]:
        """Inner products with every slot ``snap`` sees (-inf elsewhere), read from the graph in batches."""
        sims = np.full(snap.n_slots, -np.inf, dtype=np.float32)
        live = snap.live_slots()
        for first in range(0, len(live), 50_000):
            part = live[first : first + 50_000]
            sims[part] = self.vectors(part.tolist()) @ vector
        return sims

    def nbytes(self) -> int:
        """The graph's memory, from hnswlib's layout: per element its vector, level-0 links and label;
        per allocated element a lock; upper levels and the label map approximated per element."""
        per_element = self.dim * 4 + (2 * M * 4 + 4) + 8 + 64
        return self.count * per_element + self._capacity * 48

    def add_columns(self, columns: Any, n: int) -> None:
        """Add slots ``[0, n)`` from a :class:`~verityrag.index._growable.ColumnBlocks`, a batch at a time."""
        view = columns.view()
        for first in range(0, n, 20_000):
            slots = np.arange(first, min(n, first + 20_000))
            self.add(view.columns(slots), first)
