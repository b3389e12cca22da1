"""Append-only numpy buffers that readers can hold while a writer appends.

A writer only ever writes past the published length, and growth copies into a
new buffer, so a reader holding an old buffer reference keeps a valid view of
everything that was published when it took the reference.
"""

from __future__ import annotations

from collections.abc import Sequence
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

    def extend(self, values: npt.ArrayLike) -> int:
        """Append rows; returns the index of the first appended row."""
        arr = np.asarray(values, dtype=self.dtype)
        count = len(arr)
        self.reserve(count)
        first = self.size
        self.buf[first : first + count] = arr
        self.size = first + count
        return first


class ColumnBlocks:
    """Vectors stored column-wise, ``block[:, slot - first]``, in blocks of ``block_cols`` slots.

    A hashed bag-of-words query has a few dozen nonzero dimensions, so exact search reads only
    those rows: ``nnz * n`` floats instead of ``dim * n``. Dense queries read every row, at
    the cost of row-major storage. Full blocks are never copied: growing a million-slot index
    does not hold two copies of its vectors (only the first block grows, by doubling, up to
    ``block_cols``). Blocks are appended, never changed where a published snapshot reads.
    """

    def __init__(self, dim: int, block_cols: int = 65536, capacity: int = 1024) -> None:
        self.dim = dim
        self.block_cols = block_cols
        self.size = 0
        self.blocks: list[npt.NDArray[np.float32]] = [
            np.zeros((dim, min(max(capacity, 1), block_cols)), dtype=np.float32)
        ]

    def extend(self, vectors: npt.NDArray[np.float32]) -> int:
        """Append rows of ``vectors`` (shape [k, dim]) as columns; returns the first slot."""
        first = self.size
        rows = np.asarray(vectors, dtype=np.float32)
        done = 0
        while done < len(rows):
            slot = first + done
            index, offset = divmod(slot, self.block_cols)
            if index == len(self.blocks):
                self.blocks.append(np.zeros((self.dim, self.block_cols), dtype=np.float32))
            block = self.blocks[index]
            take = min(len(rows) - done, self.block_cols - offset)
            if offset + take > block.shape[1]:  # the first block, still growing by doubling
                capacity = block.shape[1]
                while capacity < offset + take:
                    capacity *= 2
                grown = np.zeros((self.dim, min(capacity, self.block_cols)), dtype=np.float32)
                grown[:, :offset] = block[:, :offset]
                self.blocks[index] = block = grown  # the reference swaps once the copy is complete
            block[:, offset : offset + take] = rows[done : done + take].T
            done += take
        self.size = first + len(rows)
        return first

    def view(self) -> ColumnView:
        """The blocks as they are now: what a snapshot reads."""
        return ColumnView(tuple(self.blocks), self.block_cols)

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.blocks)


class ColumnView:
    """A frozen list of a :class:`ColumnBlocks`' blocks; reads stop at the caller's ``n``."""

    __slots__ = ("block_cols", "blocks")

    def __init__(self, blocks: tuple[npt.NDArray[np.float32], ...], block_cols: int) -> None:
        self.blocks = blocks
        self.block_cols = block_cols

    def sims(self, query: npt.NDArray[np.float32], n: int) -> npt.NDArray[np.float32]:
        """``query @ vectors[:, :n]``; a sparse query reads only its nonzero rows.

        The sparse case adds the rows with numpy ufuncs, not BLAS: one gemv over a gathered
        copy of the rows cost 2-20x more here (the copy, and BLAS threads that wait for a
        busy core)."""
        nonzero = np.flatnonzero(query).tolist()
        out = np.zeros(n, dtype=np.float32)
        sparse = len(nonzero) * 2 < len(query)
        scratch = np.empty(min(n, self.block_cols), dtype=np.float32) if sparse else out
        for index, block in enumerate(self.blocks):
            first = index * self.block_cols
            if first >= n:
                break
            cols = min(n - first, self.block_cols)
            target = out[first : first + cols]
            if not sparse:
                np.matmul(query, block[:, :cols], out=target)
                continue
            part = scratch[:cols]
            for row in nonzero:
                np.multiply(block[row, :cols], query[row], out=part)
                np.add(target, part, out=target)
        return out

    def columns(self, slots: Sequence[int] | npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
        """The vectors at ``slots``, one row each."""
        slots = np.asarray(slots, dtype=np.int64)
        out = np.empty((len(slots), self.blocks[0].shape[0]), dtype=np.float32)
        index, offset = np.divmod(slots, self.block_cols)
        for b in np.unique(index).tolist():
            where = index == b
            out[where] = self.blocks[b][:, offset[where]].T
        return out
