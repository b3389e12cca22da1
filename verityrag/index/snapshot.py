"""``IndexSnapshot``: the frozen, published view of a ``LiveIndex`` at one version, and its storage.

A :class:`Segment` holds one generation of slots (chunks, postings, death versions,
lengths, vectors); only the writer appends to it, past what it has published.
An :class:`IndexSnapshot` fixes how much of a segment a reader sees: the slots
``< n_slots`` whose ``died`` is greater than its version. See
:mod:`verityrag.index.live` for how writes publish snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from verityrag.index._growable import ColumnMatrix, GrowableArray
from verityrag.index._hnsw import HnswIndex
from verityrag.types import Chunk

#: ``died`` of a slot no version has deleted.
ALIVE = np.iinfo(np.int64).max

# One term's postings as published: (slots buffer, term-frequency buffer, length).
Posting = tuple[npt.NDArray[np.int32], npt.NDArray[np.float32], int]


@dataclass(eq=False)
class Segment:
    """Storage for one generation of slots. Replaced wholesale only by compaction."""

    dim: int
    chunks: list[Chunk] = field(default_factory=list)
    postings: dict[str, Posting] = field(default_factory=dict)
    died: GrowableArray = field(default_factory=lambda: GrowableArray(np.int64, fill=ALIVE))
    doc_len: GrowableArray = field(default_factory=lambda: GrowableArray(np.int32))
    vectors: ColumnMatrix = field(init=False)
    ann: HnswIndex | None = None

    def __post_init__(self) -> None:
        self.vectors = ColumnMatrix(self.dim)


@dataclass(frozen=True, eq=False)
class IndexSnapshot:
    """An immutable view of the index at one version. Obtain with ``LiveIndex.snapshot()``."""

    segment: Segment
    version: int
    n_slots: int
    n_live: int
    total_len: int
    n_dead: int
    died: npt.NDArray[np.int64]
    doc_len: npt.NDArray[np.int32]
    vectors: npt.NDArray[np.float32]  # column-major: vectors[:, slot]

    @property
    def avgdl(self) -> float:
        return self.total_len / self.n_live if self.n_live else 0.0

    def is_visible(self, slot: int) -> bool:
        return slot < self.n_slots and int(self.died[slot]) > self.version

    def visible_mask(self, slots: npt.NDArray[np.int32]) -> npt.NDArray[np.bool_]:
        inside = slots < self.n_slots
        if self.n_dead == 0:
            return inside
        return inside & (self.died[np.minimum(slots, self.n_slots - 1)] > self.version)

    def live_slots(self) -> npt.NDArray[np.int64]:
        return np.flatnonzero(self.died[: self.n_slots] > self.version)

    def chunk(self, slot: int) -> Chunk:
        return self.segment.chunks[slot]


def holds(snap: IndexSnapshot, slot: int, chunk_id: str) -> bool:
    """Whether ``snap`` shows ``chunk_id`` at ``slot`` (a slot from the newest version's map)."""
    return snap.is_visible(slot) and snap.chunk(slot).chunk_id == chunk_id


def slots_held(snap: IndexSnapshot) -> dict[str, int]:
    """Chunk id -> slot as ``snap`` holds them: a scan, for when the newest map is ahead of it."""
    return {snap.chunk(int(s)).chunk_id: int(s) for s in snap.live_slots()}
