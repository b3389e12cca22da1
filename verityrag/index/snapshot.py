"""``IndexSnapshot``: the frozen, published view of a ``LiveIndex`` at one version, and its storage.

A :class:`Segment` holds one generation of slots (chunks, postings, death versions,
lengths, vectors); only the writer appends to it, past what it has published.
An :class:`IndexSnapshot` fixes how much of a segment a reader sees: the slots
``< n_slots`` whose ``died`` is greater than its version. See
:mod:`verityrag.index.live` for how writes publish snapshots.
"""

from __future__ import annotations

import pickle
import threading
from array import array
from collections.abc import ItemsView, Iterator, KeysView, Sequence, ValuesView
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import numpy as np
import numpy.typing as npt

from verityrag.index._chunks import ChunkTable
from verityrag.index._growable import GrowableArray
from verityrag.index._hnsw import HnswIndex
from verityrag.index._vectors import ColumnBlocks, ColumnView, QuantizedColumns, QuantizedView
from verityrag.types import Chunk

#: ``died`` of a slot no version has deleted.
ALIVE = np.iinfo(np.int64).max


class BlockMax(NamedTuple):
    """Block maxima of one term's postings (see :mod:`verityrag.index.bm25`).

    For each block of slots (``slot // block``) that holds the term, ascending: an upper
    bound of the term's tf part, ``tf (k1 + 1) / (tf + k1 (1 - b + b dl / a0))``, over the
    term's postings in that block, computed at the average length ``a0`` and rounded up.
    """

    ids: npt.NDArray[np.int32]
    maxes: npt.NDArray[np.float32]
    n: int
    a0: float


class Posting(NamedTuple):
    """One term's postings as published: slots (ascending) and term frequencies (uint16, uint32
    for a term with a frequency past 65,535), their length, and block maxima once the list is
    long enough to be worth pruning."""

    slots: npt.NDArray[np.int32]
    tfs: npt.NDArray[np.uint16] | npt.NDArray[np.uint32]
    n: int
    blocks: BlockMax | None = None


@dataclass(eq=False)
class Segment:
    """Storage for one generation of slots. Replaced wholesale only by compaction."""

    dim: int
    chunks: ChunkTable = field(default_factory=ChunkTable)
    postings: dict[str, Posting] = field(default_factory=dict)
    # Per term, the versions at which its postings died, ascending: the document frequency at
    # any snapshot is a binary search, not a count over the postings.
    dead: dict[str, array[int]] = field(default_factory=dict)
    died: GrowableArray = field(default_factory=lambda: GrowableArray(np.int64, fill=ALIVE))
    doc_len: GrowableArray = field(default_factory=lambda: GrowableArray(np.int32))
    # Exact search (made at the first write: float32, or int8 for sparse vectors); None in the graph.
    vectors: ColumnBlocks | QuantizedColumns | None = None
    ann: HnswIndex | None = None
    block: int = 128  # slots per block of the BM25 block maxima

    def frozen(self) -> Segment:
        """The segment as it stands, for an image written while writers go on (they hold off
        while this runs): what they change in place is copied (deaths, the death logs, the
        dicts of postings), what they only append to is kept up to its length. Not for a segment
        with an hnsw graph, which a writer changes in place."""
        if self.ann is not None:
            raise ValueError("a segment with an hnsw graph cannot be frozen")
        return Segment(
            dim=self.dim,
            chunks=self.chunks.frozen(),
            postings=self.postings.copy(),
            dead={term: log[:] for term, log in self.dead.items()},
            died=self.died.frozen(copy=True),
            doc_len=self.doc_len.frozen(),
            vectors=None if self.vectors is None else self.vectors.frozen(),
            block=self.block,
        )

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["postings"] = PackedPostings.pack(self.postings)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        packed = state["postings"]
        if not isinstance(packed, PackedPostings):
            raise pickle.UnpicklingError("a segment pickled without its postings packed")
        self.__dict__.update(state, postings=packed.unpack())


class PackedPostings(NamedTuple):
    """A segment's postings as a pickle (the index image) holds them: every term's slots in one
    array, its frequencies in another (per width), the terms in order and their lengths.

    A million chunks have over a million terms: pickled one by one, each of their two arrays
    came back as a view on a memoryview of its own, about 150 bytes per array more than the
    postings themselves (over 300 MiB). Unpacked, each is a plain slice of the one array."""

    terms: list[str]
    lengths: npt.NDArray[np.int64]
    wide: npt.NDArray[np.bool_]  # the terms whose frequencies are uint32
    slots: npt.NDArray[np.int32]
    narrow_tfs: npt.NDArray[np.uint16]
    wide_tfs: npt.NDArray[np.uint32]
    blocks: list[BlockMax | None]

    @classmethod
    def pack(cls, postings: dict[str, Posting]) -> PackedPostings:
        entries = list(postings.values())
        lengths = np.fromiter((p.n for p in entries), dtype=np.int64, count=len(entries))
        wide = np.fromiter((p.tfs.dtype == np.uint32 for p in entries), dtype=np.bool_, count=len(entries))

        def joined(arrays: list[npt.NDArray[Any]], dtype: Any) -> npt.NDArray[Any]:
            return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)

        return cls(
            terms=list(postings),
            lengths=lengths,
            wide=wide,
            slots=joined([p.slots[: p.n] for p in entries], np.int32),
            narrow_tfs=joined([p.tfs[: p.n] for p in entries if p.tfs.dtype != np.uint32], np.uint16),
            wide_tfs=joined([p.tfs[: p.n] for p in entries if p.tfs.dtype == np.uint32], np.uint32),
            blocks=[p.blocks for p in entries],
        )

    def unpack(self) -> OpenedPostings:
        """The postings, each made when first asked for (:class:`OpenedPostings`)."""
        return OpenedPostings(self)


class OpenedPostings(dict[str, Posting]):
    """A segment's postings opened from an index image: a term's :class:`Posting` is made when
    it is first asked for (a query, a write), each array a slice of the packed ones, exactly as
    long as the list, so the next posting a writer appends to the term goes to a new buffer.

    A million chunks hold ~500k terms: making every posting at the start took 0.8 s and ~150 MB
    that the terms no query asks for never needed. Reading and writing go through ``get`` (a
    Python call, ~0.2 us more than a dict's) and ``[term] = posting``; anything that walks every
    term (``items``, ``values``, ``len``, iterating: an image written, compaction, memory figures)
    makes the rest first, so the first image written after a restart pays what the start did not."""

    def __init__(self, packed: PackedPostings) -> None:
        super().__init__()
        self._packed: PackedPostings | None = packed
        self._where = dict(zip(packed.terms, range(len(packed.terms)), strict=True))
        ends = np.cumsum(packed.lengths)
        self._ends = ends.tolist()
        self._narrow_ends = np.cumsum(np.where(packed.wide, 0, packed.lengths)).tolist()
        self._wide_ends = np.cumsum(np.where(packed.wide, packed.lengths, 0)).tolist()
        self._lengths = packed.lengths.tolist()
        self._wide = packed.wide.tolist()
        self._lock = threading.Lock()  # making the rest: once

    def copy(self) -> OpenedPostings:
        """A twin as the postings stand, for an image written while writers go on: the postings
        made so far (one loop in C over the dict's own items, which readers making a term
        meanwhile cannot tear) and the same packed ones for the rest, made when the twin is
        walked. (``dict.copy`` of a subclass that overrides iteration goes through ``keys``:
        every term made.)"""
        with self._lock:
            twin = OpenedPostings.__new__(OpenedPostings)
            dict.update(twin, dict.items(self))
            twin.__dict__.update(self.__dict__)  # the packed lists and places, read only: shared
            twin._lock = threading.Lock()
        return twin

    def lengths(self) -> tuple[list[str], npt.NDArray[np.int64], dict[str, int] | None]:
        """Every term, the length of its postings and (when at hand) each term's place in the
        list, without making a posting: an opened image's document frequencies are derived from
        them."""
        with self._lock:
            packed = self._packed
            made = dict(dict.items(self))
            if packed is None:
                terms = list(made)
                return terms, np.fromiter((p.n for p in made.values()), np.int64, len(terms)), None
            terms, lengths, where = list(packed.terms), packed.lengths.astype(np.int64), self._where
            added: list[tuple[str, int]] = []
            for term, posting in made.items():  # made since, and perhaps written to
                i = where.get(term)
                if i is None:
                    added.append((term, posting.n))
                else:
                    lengths[i] = posting.n
            if not added:
                return terms, lengths, where
            terms += [term for term, _ in added]
            return terms, np.concatenate([lengths, [n for _, n in added]]).astype(np.int64), None

    def _made(self, packed: PackedPostings, i: int) -> Posting:
        n, end = self._lengths[i], self._ends[i]
        if self._wide[i]:
            tfs: npt.NDArray[np.uint16] | npt.NDArray[np.uint32] = packed.wide_tfs[
                self._wide_ends[i] - n : self._wide_ends[i]
            ]
        else:
            tfs = packed.narrow_tfs[self._narrow_ends[i] - n : self._narrow_ends[i]]
        return Posting(packed.slots[end - n : end], tfs, n, packed.blocks[i])

    def get(self, term: str, default: Any = None) -> Any:
        posting = dict.get(self, term)
        if posting is not None:
            return posting
        packed, where = self._packed, self._where
        i = None if packed is None else where.get(term)
        if packed is None or i is None:  # (or every term was made meanwhile)
            return dict.get(self, term, default)
        # Readers and the writer may make it at once: the first one stored is every one's (a
        # writer's newer posting, set after its own get, is never replaced).
        return dict.setdefault(self, term, self._made(packed, i))

    def __getitem__(self, term: str) -> Posting:
        posting = self.get(term)
        if posting is None:
            raise KeyError(term)
        return cast(Posting, posting)

    def __contains__(self, term: object) -> bool:
        return dict.__contains__(self, term) or (self._packed is not None and term in self._where)

    def _make_all(self) -> None:
        with self._lock:
            packed = self._packed
            if packed is None:
                return
            for term, i in self._where.items():
                if not dict.__contains__(self, term):
                    dict.setdefault(self, term, self._made(packed, i))
            self._packed = None  # (before the terms' places go: a reader checks it first)
            self._where = {}

    def __len__(self) -> int:
        self._make_all()
        return dict.__len__(self)

    def __iter__(self) -> Iterator[str]:
        self._make_all()
        return dict.__iter__(self)

    def keys(self) -> KeysView[str]:  # type: ignore[override]
        self._make_all()
        return dict.keys(self)

    def values(self) -> ValuesView[Posting]:  # type: ignore[override]
        self._make_all()
        return dict.values(self)

    def items(self) -> ItemsView[str, Posting]:  # type: ignore[override]
        self._make_all()
        return dict.items(self)

    def __reduce__(self) -> Any:
        # pickled as the plain dict it stands for (a segment pickles its postings packed anyway)
        return dict, (dict(self.items()),)


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
    vectors: ColumnView | QuantizedView | None  # column-major vectors; None: in the ANN graph (or none yet)

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
        return self.segment.chunks.get(slot)

    def chunks(self, slots: Sequence[int]) -> list[Chunk]:
        return self.segment.chunks.get_many(slots)

    def chunk_id(self, slot: int) -> str:
        return self.segment.chunks.chunk_id(slot)


def holds(snap: IndexSnapshot, slot: int, chunk_id: str) -> bool:
    """Whether ``snap`` shows ``chunk_id`` at ``slot`` (a slot from the newest version's map)."""
    return snap.is_visible(slot) and snap.chunk_id(slot) == chunk_id


def slots_held(snap: IndexSnapshot) -> dict[str, int]:
    """Chunk id -> slot as ``snap`` holds them: a scan, for when the newest map is ahead of it."""
    return {snap.chunk_id(int(s)): int(s) for s in snap.live_slots()}
