"""Append-only numpy buffers that readers can hold while a writer appends.

A writer only ever writes past the published length, and growth copies into a
new buffer, so a reader holding an old buffer reference keeps a valid view of
everything that was published when it took the reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


class GrowableArray:
    """A 1-D or 2-D (``width`` columns) array with amortised O(1) append."""

    def __init__(
        self, dtype: npt.DTypeLike, width: int | None = None, capacity: int = 1024, fill: Any = 0
    ) -> None:
        self.dtype = np.dtype(dtype)
        self.width = width
        self.fill = fill
        self.size = 0
        self.buf: npt.NDArray[Any] = self._alloc(max(capacity, 1))

    def _alloc(self, capacity: int) -> npt.NDArray[Any]:
        shape = (capacity,) if self.width is None else (capacity, self.width)
        return np.full(shape, self.fill, dtype=self.dtype)

    def reserve(self, extra: int) -> None:
        needed = self.size + extra
        if needed <= len(self.buf):
            return
        capacity = len(self.buf)
        while capacity < needed:
            capacity *= 2
        new = self._alloc(capacity)
        new[: self.size] = self.buf[: self.size]
        # Swap the reference only when the copy is complete.
        self.buf = new

    def frozen(self, copy: bool = False) -> GrowableArray:
        """The array as it stands, for an image written while writers go on: a view of its first
        ``size`` rows (appends land past them, or in a new buffer), or a copy where the caller
        changes rows in place. At least one row is kept, so that it can grow again."""
        twin = GrowableArray.__new__(GrowableArray)
        twin.dtype, twin.width, twin.fill, twin.size = self.dtype, self.width, self.fill, self.size
        rows = self.buf[: max(self.size, 1)]
        twin.buf = rows.copy() if copy else rows
        return twin

    def extend(self, values: npt.ArrayLike) -> int:
        """Append rows; returns the index of the first appended row."""
        arr = np.asarray(values, dtype=self.dtype)
        count = len(arr)
        self.reserve(count)
        first = self.size
        self.buf[first : first + count] = arr
        self.size = first + count
        return first
