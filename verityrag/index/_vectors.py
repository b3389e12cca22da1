"""Dense vectors for exact search, stored column-major in blocks of slots.

Two stores, one interface (``extend``, ``view``; a view's ``top_k`` and ``columns``):

* :class:`ColumnBlocks`: float32 columns. Dense (model) queries multiply every row with BLAS;
  sparse ones add only their nonzero rows.
* :class:`QuantizedColumns`: for sparse vectors (the hashing embedder sets about a quarter of
  the dimensions): int8 columns with one scale per vector in RAM, 388 bytes a chunk instead of
  1,536, and the float32 rows in a :class:`~verityrag.index._arena.ByteArena` (a temporary
  file past its limit). A query scans the int8 columns, then scores exactly, from the float32
  rows, every chunk whose int8 score plus its largest rounding error reaches the k-th exact
  score: the result is the float32 exact top-k, not an approximation.

A hashed query has a few dozen nonzero dimensions, so both read only those rows: ``nnz * n``
values instead of ``dim * n``. Full blocks are never copied when the store grows (only the
first block grows, by doubling, up to ``block_cols``), so a million-chunk index never holds two
copies of its vectors. Blocks are appended, never changed where a published snapshot reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from verityrag.index import _scan_compiled
from verityrag.index._arena import ByteArena
from verityrag.index._growable import GrowableArray
from verityrag.index._visibility import VisibleSlots

F32 = npt.NDArray[np.float32]
Slots = Sequence[int] | npt.NDArray[np.int64]


def top_positions(scores: npt.NDArray[np.floating[Any]], k: int) -> list[int]:
    """Positions of the ``k`` highest scores, highest first, ties in position order.

    Ties at the k-th place go to the earliest positions too: ``argpartition`` picks among them
    by its pivots, which depend on where the dead slots sit, so after a restart or a compaction
    (same live chunks, renumbered slots) the k-th hit among equal scores changed.
    """
    n = len(scores)
    if n > k:
        part = np.partition(scores, n - k)
        if np.isnan(part[n - k :]).any():  # NaN sorts above every number: rank it below them
            scores = np.where(np.isnan(scores), -np.inf, scores)
            part = np.partition(scores, n - k)
        kth = part[n - k]  # the k-th highest score
        above = np.flatnonzero(scores > kth)
        tied = np.flatnonzero(scores == kth)[: k - len(above)]
        top = np.concatenate([above, tied])
    else:
        top = np.arange(n)
    return sorted(top.tolist(), key=lambda i: (-scores[i], i))


def _hide_dead(scores: F32, snap: VisibleSlots) -> F32:
    if snap.n_dead:
        scores[snap.died[: snap.n_slots] <= snap.version] = -np.inf
    return scores


def _add_rows(
    blocks: Sequence[npt.NDArray[Any]],
    block_cols: int,
    weights: F32,
    rows: list[int],
    n: int,
    compiled: bool | None = None,
) -> F32:
    """``sum(weights[r] * block[r, :])`` over ``rows``, per block, up to slot ``n``: compiled
    (numba) when it is there, else numpy ufuncs (no BLAS threads, no gathered copy of the rows),
    the reference the compiled scan matches bit for bit (``compiled=False``)."""
    if compiled is None:
        compiled = _scan_compiled.AVAILABLE
    add = _scan_compiled.add_rows if compiled else _add_block_rows
    out = np.zeros(n, dtype=np.float32)
    row_ids = np.asarray(rows, dtype=np.int64)
    query32 = np.asarray(weights, dtype=np.float32)
    for index, block in enumerate(blocks):
        first = index * block_cols
        if first >= n:
            break
        cols = min(n - first, block_cols)
        add(block, row_ids, query32, cols, out[first : first + cols])
    return out


def _add_block_rows(
    block: npt.NDArray[Any], rows: npt.NDArray[np.int64], weights: F32, cols: int, target: F32
) -> None:
    """One block of :func:`_add_rows` in numpy: each row's products, then their sum, in place."""
    part = np.empty(cols, dtype=np.float32)
    for row in rows.tolist():
        np.multiply(block[row, :cols], weights[row], out=part)
        np.add(target, part, out=target)


def _write_columns(
    blocks: list[npt.NDArray[Any]], block_cols: int, dim: int, dtype: Any, first: int, rows: npt.NDArray[Any]
) -> None:
    """Write ``rows`` (one vector each) as columns from slot ``first`` on, adding blocks as needed."""
    done = 0
    while done < len(rows):
        slot = first + done
        index, offset = divmod(slot, block_cols)
        if index == len(blocks):
            blocks.append(np.zeros((dim, block_cols), dtype=dtype))
        block = blocks[index]
        take = min(len(rows) - done, block_cols - offset)
        if offset + take > block.shape[1]:  # the first block, still growing by doubling
            capacity = block.shape[1]
            while capacity < offset + take:
                capacity *= 2
            grown = np.zeros((dim, min(capacity, block_cols)), dtype=dtype)
            grown[:, :offset] = block[:, :offset]
            blocks[index] = block = grown  # the reference swaps once the copy is complete
        block[:, offset : offset + take] = rows[done : done + take].T
        done += take


class ColumnBlocks:
    """float32 vectors as columns, ``block[:, slot - first]``, in blocks of ``block_cols`` slots."""

    def __init__(self, dim: int, block_cols: int = 65536, capacity: int = 1024) -> None:
        self.dim = dim
        self.block_cols = block_cols
        self.size = 0
        self.blocks: list[F32] = [np.zeros((dim, min(max(capacity, 1), block_cols)), dtype=np.float32)]

    def extend(self, vectors: F32) -> int:
        """Append rows of ``vectors`` (shape [k, dim]) as columns; returns the first slot."""
        first = self.size
        _write_columns(
            self.blocks, self.block_cols, self.dim, np.float32, first, np.asarray(vectors, np.float32)
        )
        self.size = first + len(vectors)
        return first

    def frozen(self) -> ColumnBlocks:
        """The vectors as they stand, for an image written while writers go on: the same blocks
        (appends write past ``size``, or swap a grown block in)."""
        twin = ColumnBlocks.__new__(ColumnBlocks)
        twin.dim, twin.block_cols, twin.size, twin.blocks = (
            self.dim,
            self.block_cols,
            self.size,
            list(self.blocks),
        )
        return twin

    def view(self) -> ColumnView:
        """The blocks as they are now: what a snapshot reads."""
        return ColumnView(tuple(self.blocks), self.block_cols)

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.blocks)


@dataclass(slots=True, eq=False, repr=False)
class ColumnView:
    """A frozen list of a :class:`ColumnBlocks`' blocks; reads stop at the caller's ``n``."""

    blocks: tuple[F32, ...]
    block_cols: int

    def sims(self, query: F32, n: int) -> F32:
        """``query @ vectors[:, :n]``; a sparse query reads only its nonzero rows (ufuncs: one BLAS
        gemv over a gathered copy of the rows cost 2-20x more here)."""
        nonzero = np.flatnonzero(query).tolist()
        if len(nonzero) * 2 < len(query):
            return _add_rows(self.blocks, self.block_cols, query, nonzero, n)
        out = np.empty(n, dtype=np.float32)
        for index, block in enumerate(self.blocks):
            first = index * self.block_cols
            if first >= n:
                break
            cols = min(n - first, self.block_cols)
            np.matmul(query, block[:, :cols], out=out[first : first + cols])
        return out

    def top_k(self, query: F32, k: int, snap: VisibleSlots) -> tuple[list[int], list[float]]:
        sims = _hide_dead(self.sims(query, snap.n_slots), snap)
        top = top_positions(sims, k)
        return top, sims[top].tolist()

    def columns(self, slots: Slots) -> F32:
        """The vectors at ``slots``, one row each."""
        slots = np.asarray(slots, dtype=np.int64)
        out = np.empty((len(slots), self.blocks[0].shape[0]), dtype=np.float32)
        index, offset = np.divmod(slots, self.block_cols)
        for b in np.unique(index).tolist():
            where = index == b
            out[where] = self.blocks[b][:, offset[where]].T
        return out


class QuantizedColumns:
    """int8 columns with a scale per vector (RAM), float32 rows in an arena (rescoring)."""

    def __init__(self, dim: int, rows: ByteArena, block_cols: int = 65536, capacity: int = 1024) -> None:
        self.dim = dim
        self.block_cols = block_cols
        self.size = 0
        self.blocks: list[npt.NDArray[np.int8]] = [
            np.zeros((dim, min(max(capacity, 1), block_cols)), dtype=np.int8)
        ]
        self.scales = GrowableArray(np.float32)  # per slot: its largest |component| / 127
        self.rows = rows  # float32 rows in slot order: slot s at s * dim * 4
        self.max_scale = 0.0

    def extend(self, vectors: F32) -> int:
        first = self.size
        rows = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.rows.append(rows.tobytes()) != first * self.dim * 4:  # pragma: no cover - invariant
            raise RuntimeError("the vector rows are out of step with the slots")
        scale = np.abs(rows).max(axis=1) / 127.0 if len(rows) else np.zeros(0, np.float32)
        scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
        codes = np.rint(rows / scale[:, None]).astype(np.int8)
        _write_columns(self.blocks, self.block_cols, self.dim, np.int8, first, codes)
        self.scales.extend(scale)
        if len(scale):
            self.max_scale = max(self.max_scale, float(scale.max()))
        self.size = first + len(rows)
        return first

    def frozen(self) -> QuantizedColumns:
        """The vectors as they stand, for an image written while writers go on (the rows' arena
        is shared: the image keeps its first ``size`` rows)."""
        twin = QuantizedColumns.__new__(QuantizedColumns)
        twin.dim, twin.block_cols, twin.size = self.dim, self.block_cols, self.size
        twin.blocks, twin.scales, twin.rows = list(self.blocks), self.scales.frozen(), self.rows
        twin.max_scale = self.max_scale
        return twin

    def view(self) -> QuantizedView:
        return QuantizedView(
            tuple(self.blocks), self.block_cols, self.scales.buf, self.rows, self.dim, self.max_scale
        )

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.blocks) + self.scales.buf.nbytes + self.rows.ram_bytes


@dataclass(slots=True, eq=False, repr=False)
class QuantizedView:
    """What a snapshot reads of a :class:`QuantizedColumns`."""

    blocks: tuple[npt.NDArray[np.int8], ...]
    block_cols: int
    scales: F32
    rows: ByteArena
    dim: int
    max_scale: float

    def columns(self, slots: Slots) -> F32:
        """The exact float32 vectors at ``slots``, one row each (contiguous runs read at once)."""
        wanted = np.asarray(slots, dtype=np.int64).tolist()
        if not wanted:
            return np.empty((0, self.dim), dtype=np.float32)
        width = self.dim * 4
        order = sorted(range(len(wanted)), key=wanted.__getitem__)
        parts = []
        run_first = previous = wanted[order[0]]
        for i in order[1:]:
            slot = wanted[i]
            if slot != previous + 1 and slot != previous:
                parts.append(self.rows.read(run_first * width, (previous - run_first + 1) * width))
                run_first = slot
            previous = slot
        parts.append(self.rows.read(run_first * width, (previous - run_first + 1) * width))
        distinct = np.frombuffer(b"".join(parts), dtype=np.float32).reshape(-1, self.dim)
        # Row i of ``distinct`` is the i-th distinct slot in ascending order.
        ordered = np.asarray([wanted[i] for i in order])
        rank = np.cumsum(np.concatenate([[0], np.diff(ordered) != 0]))
        out = np.empty((len(wanted), self.dim), dtype=np.float32)
        out[order] = distinct[rank]
        return out

    def exact(self, slots: Slots, query: F32) -> F32:
        """float32 inner products, each row summed alone (equal rows give equal scores)."""
        rows = self.columns(slots)
        return (rows * query).sum(axis=1, dtype=np.float32)  # type: ignore[no-any-return]

    def top_k(self, query: F32, k: int, snap: VisibleSlots) -> tuple[list[int], list[float]]:
        """The float32 exact top-``k`` (ties: earliest slot), found through the int8 columns."""
        n = snap.n_slots
        nonzero = np.flatnonzero(query).tolist()
        approx = _add_rows(self.blocks, self.block_cols, query, nonzero, n)
        approx *= self.scales[:n]
        approx = _hide_dead(approx, snap)
        # |exact - approx| <= sum |q_j| * scale / 2 per vector, plus float32 rounding of the sums.
        half_l1 = float(np.abs(query).sum()) / 2.0
        slack = 1e-5 * (1.0 + half_l1)
        cand = np.flatnonzero(approx >= _cutoff(approx, max(4 * k, 64)))
        cand = cand[approx[cand] > -np.inf]  # not the dead
        if len(cand) < k:
            cand = np.flatnonzero(approx > -np.inf)
        # The sampled cutoff lets in 200-600 chunks at 1M; each exact score reads a float32 row
        # from the arena, so only the best 2k by int8 score are rescored first. The bound below
        # still brings in every other chunk that could reach the k-th exact score.
        if 0 < 2 * k < len(cand):
            cand = cand[np.argpartition(-approx[cand], 2 * k - 1)[: 2 * k]]
        slots, sims = self._ranked(cand, query, k)
        if len(sims) < k:  # every live chunk was a candidate
            return slots.tolist(), sims.tolist()
        theta = float(sims[-1])
        # Every other chunk that could still reach theta: a coarse bound, then its own.
        more = np.flatnonzero(approx >= theta - half_l1 * self.max_scale - slack)
        more = more[approx[more] + self.scales[more] * half_l1 + slack >= theta]
        more = more[~np.isin(more, cand, assume_unique=True)]
        if len(more):
            both = np.concatenate([slots, more])
            slots, sims = self._ranked(both, query, k)
        return slots.tolist(), sims.tolist()

    def _ranked(self, slots: npt.NDArray[np.int64], query: F32, k: int) -> tuple[npt.NDArray[np.int64], F32]:
        slots = np.sort(slots)
        sims = self.exact(slots, query)
        top = top_positions(sims, k)
        return slots[top], sims[top]


def _cutoff(scores: F32, want: int) -> float:
    """A score that about ``want`` of ``scores`` reach: from a sample when there are many."""
    n = len(scores)
    if n <= want:
        return -np.inf
    if n <= 65536:
        return float(np.partition(scores, n - want)[n - want])
    step = n // 8192
    sample = scores[::step]
    m = min(len(sample) - 1, want * len(sample) // n + 2)
    return float(np.partition(sample, len(sample) - m)[len(sample) - m])
