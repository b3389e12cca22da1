"""Approximate dense search for ``LiveIndex(dense_backend="hnsw")``, on hnswlib (``pip install hnswlib``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt


class HnswIndex:
    """Optional approximate dense search (``pip install hnswlib``); guarded by a lock.

    Deleted slots stay in the graph until compaction rebuilds it: a search filters by the
    reader's snapshot instead, so a snapshot taken before a delete still finds what it holds
    (as the exact backend does), and one taken before an add never sees the new slots.
    """

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        try:
            import hnswlib
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "dense_backend='hnsw' needs hnswlib: pip install 'verityrag[ann]' (or hnswlib)"
            ) from exc
        self._lock = threading.Lock()
        self._index = hnswlib.Index(space="ip", dim=dim)
        self._index.init_index(max_elements=capacity, ef_construction=200, M=16)
        self._index.set_ef(128)
        self._capacity = capacity

    def add(self, vectors: npt.NDArray[np.float32], first_slot: int) -> None:
        with self._lock:
            needed = first_slot + len(vectors)
            if needed > self._capacity:
                while self._capacity < needed:
                    self._capacity *= 2
                self._index.resize_index(self._capacity)
            self._index.add_items(vectors, np.arange(first_slot, needed), num_threads=1)

    def query(
        self, vector: npt.NDArray[np.float32], k: int, visible: Callable[[int], bool]
    ) -> tuple[npt.NDArray[Any], Any] | None:
        """The ``k`` nearest slots that ``visible`` accepts, or None when the graph search
        could not find ``k`` of them (a heavily filtered graph; the caller scans instead)."""
        with self._lock:
            try:
                labels, distances = self._index.knn_query(vector, k=k, num_threads=1, filter=visible)
            except RuntimeError:  # hnswlib: fewer than k results passed the filter
                return None
        return labels[0], 1.0 - distances[0]
