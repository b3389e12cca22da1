"""``LiveIndex``: incremental BM25 + dense vectors over one slot space, read through snapshots.

How concurrency works (multi-version, single writer):

* Every chunk gets a *slot*, an integer that only grows. Its postings, length
  and vector are written at that slot before anything is published.
* A write (add, replace, delete) takes the writer lock, appends, marks deleted
  slots with the new version number in ``died``, then publishes a new frozen
  :class:`IndexSnapshot` by one reference assignment.
* A reader takes the current snapshot (no lock) and sees exactly the slots
  ``< n_slots`` whose ``died`` is greater than its version: never half a write,
  and it never waits for a writer.

Adding or deleting a document touches only its own postings and the collection
statistics (N, total length, and the death versions of its terms); document frequencies
at any snapshot are binary searches (:mod:`verityrag.index.bm25`). BM25 top-k is exact
with block-max pruning. Dense search is exact below ``ann_threshold`` slots and on an
hnswlib graph above it (``dense_backend="auto"``, the default). When more than half of the
slots (and over 1,024 of them) are dead the writer compacts: it rebuilds the postings
without dead entries into a new segment (readers keep the old one).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt

import verityrag.index._bm25_compiled as _bm25_compiled
import verityrag.index._postings as _postings
import verityrag.index.bm25 as bm25
from verityrag.errors import InvalidInputError
from verityrag.index._arena import ByteArena
from verityrag.index._chunks import TEXT_MEMORY_LIMIT, ChunkTable, TextArena
from verityrag.index._hnsw import HnswIndex
from verityrag.index._vectors import ColumnBlocks, ColumnView, QuantizedColumns, QuantizedView, top_positions
from verityrag.index.protocol import IndexBackend, Scored, check_upserts
from verityrag.index.snapshot import ALIVE, IndexSnapshot, Segment, holds
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.types import Chunk

__all__ = ["ANN_THRESHOLD", "DENSE_BACKENDS", "DenseBackend", "IndexSnapshot", "LiveIndex", "Scored"]

logger = logging.getLogger(__name__)

# Batches with at least this many chunks build postings with numpy grouping (bulk ingest, restore).
_BULK_POSTINGS_MIN = 64
DenseBackend = Literal["auto", "exact", "hnsw"]
DENSE_BACKENDS: tuple[str, ...] = ("auto", "exact", "hnsw")
#: ``dense_backend="auto"`` searches exactly below this many slots and on the hnswlib graph above
#: (docs/decisions/0043-dense-exact-for-hashed-ann-for-model-vectors.md has the measurements).
ANN_THRESHOLD = 20_000


#: Slots scored at a time by a filtered dense search (their float32 rows are read in one block).
FILTER_BLOCK = 32_768


class FrozenImageState(NamedTuple):
    """An index's state taken for an image (:meth:`LiveIndex.frozen_image_state`), and how many
    bytes of each of its arenas (by ``id``) the image keeps."""

    state: dict[str, Any]
    arena_sizes: dict[int, int]


class ChunklessDocuments(NamedTuple):
    """In an image's state, in place of the index's slots by document and its document
    frequencies: it derives them when it opens the image, from the chunk table's live slots and
    from the postings less their deaths (unpickled, a million chunks' took half a second). What
    the chunk table cannot give is kept: the documents that hold no chunk."""

    doc_ids: list[str]


def _slots_by_document(snap: IndexSnapshot, chunkless: Sequence[str]) -> dict[str, Sequence[int]]:
    """Each document's slots (a range) as ``snap`` holds them: its live slots are one run of one
    chunk-table entry, the newest of its document (a replaced document's older entry is dead)."""
    live = snap.live_slots()
    entries = snap.segment.chunks.entry.buf[live]
    runs = np.flatnonzero(np.diff(entries, prepend=-1))
    firsts = live[runs]
    ends = firsts + np.diff(np.append(runs, len(live)))
    doc_ids = snap.segment.chunks.doc_ids
    ids = map(doc_ids.__getitem__, entries[runs].tolist())
    slots: dict[str, Sequence[int]] = dict(zip(ids, map(range, firsts.tolist(), ends.tolist()), strict=True))
    slots.update(dict.fromkeys(chunkless, range(0)))
    return slots


def completed_image_state(state: Mapping[str, Any]) -> Mapping[str, Any]:
    """An image's state with what it leaves out derived (:class:`ChunklessDocuments`): what
    :meth:`LiveIndex.load_image_state` does first, and what an image's reader may do sooner
    (while the image's checksums are read). A state that has them is returned as it is."""
    chunkless = state["_doc_slots"]
    if not isinstance(chunkless, ChunklessDocuments):  # derived already, or an older image's
        return state
    snap = state["_snapshot"]
    return {
        **state,
        "_doc_slots": _slots_by_document(snap, chunkless.doc_ids),
        "_df": _postings.live_frequencies(snap.segment),
    }


class LiveIndex:
    """Incremental Okapi BM25 and dense vectors over the same chunks, with snapshot reads.

    BM25 follows ``rank_bm25.BM25Okapi`` exactly (k1, b, and the epsilon floor
    for negative IDF), so scores can be checked against it.

    ``dense_backend``: ``"auto"`` (exact search, then an hnswlib graph from ``ann_threshold``
    slots on, for dense vectors: hashed ones stay exact), ``"exact"`` or ``"hnsw"`` (the graph
    from the first chunk). Chunk texts are kept
    in memory up to ``text_memory_limit`` bytes, then in an unlinked file in ``text_spill_dir``
    (default: the system's temporary folder).
    """

    def __init__(
        self,
        dim: int,
        analyzer: Analyzer = DEFAULT_ANALYZER,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        dense_backend: DenseBackend = "auto",
        compact_dead_fraction: float = 0.5,
        ann_threshold: int = ANN_THRESHOLD,
        text_spill_dir: str | Path | None = None,
        text_memory_limit: int = TEXT_MEMORY_LIMIT,
    ) -> None:
        if dense_backend not in DENSE_BACKENDS:
            raise InvalidInputError(
                "dense_backend", f"{dense_backend!r} is not one of {', '.join(DENSE_BACKENDS)}"
            )
        self.dim = dim
        self.analyzer = analyzer
        self.k1 = k1
        self.b = b
        self.epsilon = epsilon
        self.dense_backend = dense_backend
        self.compact_dead_fraction = compact_dead_fraction
        self.ann_threshold = ann_threshold
        self._texts = TextArena(text_spill_dir, text_memory_limit)
        self._write_lock = threading.Lock()
        self._df: Counter[str] = Counter()  # the newest version's document frequencies
        self._doc_slots: dict[str, Sequence[int]] = {}  # a document's slots: a range
        self._odd_slots: dict[str, int] = {}  # chunk ids that are not "<doc id>#<position>"
        self._avg_idf_cache: tuple[int, float] | None = None
        # Whether the vectors are sparse (hashed), seen in the first batch: it picks their store.
        self._sparse_vectors: bool | None = None
        self._stays_exact_logged = False
        segment = self._new_segment(ChunkTable(self._texts), use_ann=dense_backend == "hnsw")
        self._snapshot = IndexSnapshot(
            segment, 0, 0, 0, 0, 0, segment.died.buf, segment.doc_len.buf, _columns(segment)
        )

    def _new_segment(self, chunks: ChunkTable, use_ann: bool) -> Segment:
        segment = Segment(self.dim, chunks=chunks, block=_postings.BLOCK)
        if use_ann:
            segment.ann = HnswIndex(self.dim)
        elif self._sparse_vectors is not None:
            segment.vectors = self._new_vector_store()
        return segment

    def _new_vector_store(self) -> ColumnBlocks | QuantizedColumns:
        """Sparse (hashed) vectors: int8 columns with float32 rows for exact rescoring; else float32."""
        if self._sparse_vectors:
            return QuantizedColumns(self.dim, ByteArena(self._texts.spill_dir, self._texts.memory_limit))
        return ColumnBlocks(self.dim)

    def indexed_terms(self, chunk: Chunk) -> list[str]:
        """The terms BM25 indexes for a chunk: its document title and its text. The same as
        analysing ``title + "\n" + text`` (the newline separates tokens, and folding is per
        character), in two parts the analyzer has usually seen already (the title for every
        chunk of the document, the text when the chunk was embedded)."""
        return self.analyzer.analyze(chunk.title) + self.analyzer.analyze(chunk.text)

    # ------------------------------------------------------------------ images
    def image_settings(self) -> dict[str, Any]:
        """What an image of this index must have been made with to be opened by it."""
        return {
            "dim": self.dim,
            "analyzer": self.analyzer.fingerprint(),
            "k1": self.k1,
            "b": self.b,
            "epsilon": self.epsilon,
            "dense_backend": self.dense_backend,
            "compact_dead_fraction": self.compact_dead_fraction,
            "ann_threshold": self.ann_threshold,
        }

    @contextmanager
    def writes_held(self) -> Iterator[dict[str, Any]]:
        """Writers held off (readers go on) while an image is made of the state it yields: every
        attribute but the analyzer, which whoever opens the image gives (:mod:`verityrag.index.image`),
        and those :meth:`load_image_state` derives (:class:`ChunklessDocuments`)."""
        with self._write_lock:
            yield self._image_state()

    def _image_state(self) -> dict[str, Any]:
        state = {name: value for name, value in vars(self).items() if name != "analyzer"}
        state["_doc_slots"] = ChunklessDocuments([d for d, slots in self._doc_slots.items() if not slots])
        state["_df"] = None
        return state

    def frozen_image_state(self) -> FrozenImageState | None:
        """The state :meth:`writes_held` yields as it stands now, for an image written while
        writers go on: they are held off only while it is taken (copies of what they change in
        place: the deaths, the dicts; at a million chunks about a tenth of a second), and the
        arenas' sizes now, as much of them as the image keeps. None for an index with an hnsw
        graph, which a writer changes in place: its image is written with writes held."""
        with self._write_lock:
            snap = self._snapshot
            seg = snap.segment
            if seg.ann is not None:
                return None
            frozen = seg.frozen()
            state = self._image_state()
            state.update(
                _odd_slots=self._odd_slots.copy(),
                _snapshot=dataclasses.replace(
                    snap,
                    segment=frozen,
                    died=frozen.died.buf,
                    doc_len=frozen.doc_len.buf,
                    vectors=_columns(frozen),
                ),
            )
            arenas: list[ByteArena] = [self._texts, seg.chunks.texts]
            if isinstance(seg.vectors, QuantizedColumns):
                arenas.append(seg.vectors.rows)
            return FrozenImageState(state, {id(arena): arena.size for arena in arenas})

    def load_image_state(self, state: Mapping[str, Any]) -> None:
        """Become the index an image kept; the caller checked it was made with
        :meth:`image_settings` equal to this index's."""
        state = completed_image_state(state)
        with self._write_lock:
            kept = {"analyzer": self.analyzer, "_write_lock": self._write_lock}
            self.__dict__.update(state)
            self.__dict__.update(kept)
        _bm25_compiled.warm_up()  # a restart: the first queries need not wait for numba

    # ------------------------------------------------------------------ reads
    def snapshot(self) -> IndexSnapshot:
        return self._snapshot

    def __len__(self) -> int:
        """Number of live chunks."""
        return self._snapshot.n_live

    @property
    def n_documents(self) -> int:
        return len(self._doc_slots)

    def doc_ids(self) -> list[str]:
        return list(self._doc_slots)

    def has_document(self, doc_id: str) -> bool:
        return doc_id in self._doc_slots

    def chunks_of(self, doc_id: str, snapshot: IndexSnapshot | None = None) -> list[Chunk]:
        snap = snapshot or self._snapshot
        slots = self._doc_slots.get(doc_id)
        # Fast path: the document's latest slots, when this snapshot sees all of them in
        # the current segment (then every earlier version of the document is dead in it). The
        # slot map and the published snapshot are read without a lock, and compaction renumbers
        # the map just before it publishes the new segment: slots read in that gap index the
        # old segment, so each chunk must also belong to the document.
        if slots and snap.segment is self._snapshot.segment and all(snap.is_visible(s) for s in slots):
            chunks = [snap.chunk(s) for s in slots]
            if all(c.doc_id == doc_id and c.position == i for i, c in enumerate(chunks)):
                return chunks
        # A snapshot from before a replace, delete or compaction (or a write in flight):
        # the slot map is newer than the snapshot, so look in what the snapshot holds.
        return [snap.chunk(s) for s in self._held_slots_of(snap, doc_id)]

    @staticmethod
    def _held_slots_of(snap: IndexSnapshot, doc_id: str) -> list[int]:
        table = snap.segment.chunks
        entries = table.entries_of(doc_id)
        if not entries:
            return []
        live = snap.live_slots()
        held: list[int] = live[np.isin(table.entry.buf[live], entries)].tolist()
        return held

    def _slot_of(self, chunk_id: str, snap: IndexSnapshot) -> int | None:
        """The slot ``snap`` holds ``chunk_id`` at, found through the newest maps (None: not there)."""
        slot = self._odd_slots.get(chunk_id)
        if slot is not None:
            return slot if holds(snap, slot, chunk_id) else None
        doc_id, sep, position = chunk_id.rpartition("#")
        slots = self._doc_slots.get(doc_id) if sep else None
        if not slots:
            return None
        guess = int(position) if position.isdecimal() else -1
        first = [slots[guess]] if 0 <= guess < len(slots) else []
        return next((s for s in chain(first, slots) if holds(snap, s, chunk_id)), None)

    def _held_slot(self, chunk_id: str, snap: IndexSnapshot) -> int | None:
        """Like ``_slot_of``, also for a snapshot older than the maps (a scan of its document)."""
        slot = self._slot_of(chunk_id, snap)
        if slot is not None:
            return slot
        odd = [s for s, cid in snap.segment.chunks.odd_ids.items() if cid == chunk_id]
        candidates = odd or self._held_slots_of(snap, chunk_id.rpartition("#")[0])
        return next((s for s in candidates if holds(snap, s, chunk_id)), None)

    def get_chunk(self, chunk_id: str) -> Chunk | None:
        snap = self._snapshot
        slot = self._slot_of(chunk_id, snap)
        if slot is not None:
            return snap.chunk(slot)
        if snap is self._snapshot and not self._write_lock.locked():
            return None  # the slot maps and the published version agree: no such chunk
        # A write in flight (or just published): the maps may already point at slots the
        # snapshot read above does not show, so look the chunk up in what that snapshot holds.
        slot = self._held_slot(chunk_id, snap)
        return None if slot is None else snap.chunk(slot)

    def live_chunks(self, snapshot: IndexSnapshot | None = None) -> list[Chunk]:
        snap = snapshot or self._snapshot
        return snap.chunks(snap.live_slots().tolist())

    def document_frequency(self, term: str, snapshot: IndexSnapshot | None = None) -> int:
        snap = snapshot or self._snapshot
        return bm25.document_frequency(snap.segment, term, snap)[0]

    def idf(self, term: str, snapshot: IndexSnapshot | None = None) -> float:
        """BM25Okapi IDF of ``term`` at the snapshot (0 for unseen terms)."""
        snap = snapshot or self._snapshot
        df = self.document_frequency(term, snap)
        return self._idf_from_df(df, snap) if df else 0.0

    def _idf_from_df(self, df: int, snap: IndexSnapshot) -> float:
        idf = math.log(snap.n_live - df + 0.5) - math.log(df + 0.5)
        if idf < 0:
            return self.epsilon * self._average_idf(snap)
        return idf

    def _average_idf(self, snap: IndexSnapshot) -> float:
        # Needed only for terms in more than half the chunks (rare once stopwords
        # are gone). It averages over the whole vocabulary, whose document
        # frequencies we keep only for the latest version. N and the frequencies are
        # read together under the writer lock, so they always come from one version:
        # exact for the latest snapshot; an older snapshot read during later writes
        # gets the average of a newer version (never a mix, which can give NaN).
        cached = self._avg_idf_cache
        if cached is not None and cached[0] >= snap.version:
            return cached[1]
        with self._write_lock:
            latest = self._snapshot
            dfs = np.fromiter((v for v in self._df.values() if v > 0), dtype=np.float64)
        if len(dfs) == 0:
            return 0.0
        n = float(latest.n_live)
        value = float(np.mean(np.log(n - dfs + 0.5) - np.log(dfs + 0.5)))
        self._avg_idf_cache = (latest.version, value)
        return value

    def _query_terms(self, snap: IndexSnapshot, terms: Sequence[str]) -> list[bm25.QueryTerm]:
        return bm25.query_terms(snap, terms, lambda df: self._idf_from_df(df, snap))

    def bm25_scores(
        self, terms: Sequence[str], snapshot: IndexSnapshot | None = None
    ) -> tuple[list[str], npt.NDArray[np.float64]]:
        """BM25 score of every live chunk (chunk ids in ingest order), as ``rank_bm25.get_scores``."""
        snap = snapshot or self._snapshot
        scores, _ = bm25.score_all(snap, self._query_terms(snap, terms), self.k1, self.b)
        live = snap.live_slots()
        return [snap.chunk_id(int(s)) for s in live], scores[live]

    def search_lexical(
        self,
        query: str | Sequence[str],
        k: int = 10,
        snapshot: IndexSnapshot | None = None,
        doc_ids: Collection[str] | None = None,
    ) -> list[Scored]:
        """Top-``k`` chunks by BM25, exact: MaxScore in compiled code (numba), else (no numba, or
        while it is readied after a restart) the vectorised block-max scorer, the same ranking.
        ``query``: text or analyzed terms.

        ``doc_ids``: only these documents' chunks (a metadata filter's documents); scored
        exhaustively over them, with the whole snapshot's statistics (IDF, average length).
        """
        snap = snapshot or self._snapshot
        terms = self.analyzer.analyze(query) if isinstance(query, str) else query
        if doc_ids is not None:
            allowed = self._slots_of_documents(snap, doc_ids)
            scores, touched = bm25.score_all(snap, self._query_terms(snap, terms), self.k1, self.b)
            touched = touched[np.isin(touched, allowed, assume_unique=True)]
            if len(touched) == 0 or k <= 0:
                return []
            cand = scores[touched]
            top = top_positions(cand, k)
            return list(map(Scored, snap.chunks(touched[top].tolist()), cand[top].tolist()))
        query_terms = self._query_terms(snap, terms)
        if k <= 0 or not query_terms:
            return []
        compiled = _bm25_compiled.AVAILABLE and _bm25_compiled.ready()
        top_k = _bm25_compiled.top_k if compiled else bm25.top_k
        slots, scores = top_k(snap, query_terms, k, self.k1, self.b)
        return list(map(Scored, snap.chunks(slots.tolist()), scores.tolist()))

    def search_lexical_exhaustive(
        self, query: str | Sequence[str], k: int = 10, snapshot: IndexSnapshot | None = None
    ) -> list[Scored]:
        """``search_lexical`` without pruning: every posting scored (the reference it is tested against)."""
        snap = snapshot or self._snapshot
        terms = self.analyzer.analyze(query) if isinstance(query, str) else query
        scores, touched = bm25.score_all(snap, self._query_terms(snap, terms), self.k1, self.b)
        if len(touched) == 0 or k <= 0:
            return []
        cand = scores[touched]
        # touched is ascending, so an earlier position is an earlier slot.
        top = top_positions(cand, k)
        return list(map(Scored, snap.chunks(touched[top].tolist()), cand[top].tolist()))

    def search_dense(
        self,
        vector: npt.ArrayLike,
        k: int = 10,
        snapshot: IndexSnapshot | None = None,
        doc_ids: Collection[str] | None = None,
    ) -> list[Scored]:
        """Top-``k`` chunks by cosine similarity (vectors are unit length).

        ``doc_ids``: only these documents' chunks, scored exactly (also where the index uses
        the ANN graph), :data:`FILTER_BLOCK` slots at a time.
        """
        snap = snapshot or self._snapshot
        if snap.n_live == 0 or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            raise InvalidInputError("vector", f"has dimension {query.shape[0]}, index has {self.dim}")
        if doc_ids is not None:
            return self._search_dense_in(snap, query, k, self._slots_of_documents(snap, doc_ids))
        k = min(k, snap.n_live)
        if snap.vectors is not None:
            slots, values = snap.vectors.top_k(query, k, snap)
            return list(map(Scored, snap.chunks(slots), values))
        ann = snap.segment.ann
        assert ann is not None  # a segment with live chunks holds vectors, in columns or in the graph
        found = ann.query(query, k, snap)
        if found is not None:
            return list(map(Scored, snap.chunks(found[0]), found[1]))
        sims = ann.exact_scan(query, snap)  # the graph cannot fill k from what snap sees
        top = top_positions(sims, k)
        return list(map(Scored, snap.chunks(top), sims[top].tolist()))

    def _search_dense_in(
        self, snap: IndexSnapshot, query: npt.NDArray[np.float32], k: int, slots: npt.NDArray[np.int64]
    ) -> list[Scored]:
        if len(slots) == 0:
            return []
        parts = []
        for first in range(0, len(slots), FILTER_BLOCK):
            block = slots[first : first + FILTER_BLOCK].tolist()
            if snap.vectors is not None:
                parts.append((snap.vectors.columns(block) * query).sum(axis=1))
            else:
                assert snap.segment.ann is not None
                parts.append(snap.segment.ann.vectors(block) @ query)
        sims = np.concatenate(parts)
        top = top_positions(sims, min(k, len(slots)))
        return list(map(Scored, snap.chunks(slots[top].tolist()), sims[top].tolist()))

    def _slots_of_documents(self, snap: IndexSnapshot, doc_ids: Collection[str]) -> npt.NDArray[np.int64]:
        """The slots ``snap`` holds for ``doc_ids``, ascending: a scan of the live slots' document
        entries, right for any snapshot (older than a replace, a delete or a compaction too)."""
        wanted = doc_ids if isinstance(doc_ids, set | frozenset) else set(doc_ids)
        if not wanted:
            return np.empty(0, dtype=np.int64)
        table = snap.segment.chunks
        entries = [i for i, d in enumerate(table.doc_ids) if d in wanted]
        live = snap.live_slots()
        if not entries:
            return np.empty(0, dtype=np.int64)
        return live[np.isin(table.entry.buf[live], entries)]

    def cosines(
        self, vector: npt.ArrayLike, chunk_ids: Sequence[str], snapshot: IndexSnapshot | None = None
    ) -> list[float]:
        """Cosine of ``vector`` with each chunk (0.0 for a chunk the snapshot does not hold)."""
        snap = snapshot or self._snapshot
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        # The maps are the newest version's: a snapshot from before a replace, a delete or a
        # compaction holds the chunk at another slot (or not at all); _held_slot looks there.
        slots = [self._held_slot(cid, snap) for cid in chunk_ids]
        found = [s for s in slots if s is not None]
        if not found:
            return [0.0] * len(slots)
        if snap.vectors is not None:
            sims = (snap.vectors.columns(found) * query).sum(axis=1)
        else:
            assert snap.segment.ann is not None
            sims = snap.segment.ann.vectors(found) @ query
        by_slot = dict(zip(found, sims.tolist(), strict=True))
        return [0.0 if s is None else float(by_slot[s]) for s in slots]

    # ----------------------------------------------------------------- writes
    def upsert(
        self,
        doc_id: str,
        chunks: Sequence[Chunk],
        vectors: npt.NDArray[np.float32],
    ) -> None:
        """Add a document's chunks, replacing any earlier version of the document atomically."""
        self.apply([(doc_id, chunks, vectors)], deletes=())

    def delete(self, doc_id: str) -> bool:
        """Remove a document's chunks. Returns False if the document was not indexed."""
        if doc_id not in self._doc_slots:
            return False
        self.apply([], deletes=(doc_id,))
        return True

    def apply(
        self,
        upserts: Sequence[tuple[str, Sequence[Chunk], npt.NDArray[np.float32]]],
        deletes: Iterable[str] = (),
        term_counts: Sequence[Sequence[Mapping[str, int]]] | None = None,
    ) -> None:
        """Apply many upserts and deletes as ONE new version (bulk ingest, restore)."""
        check_upserts(upserts, self.dim)
        # term_counts lets a caller that already analyzed the chunks (ingest, restore) skip it.
        analyzed = term_counts if term_counts is not None else self.term_counts(upserts)
        with self._write_lock:
            old = self._snapshot
            version = old.version + 1
            seg = old.segment
            n_live, total_len, n_dead = old.n_live, old.total_len, old.n_dead
            to_delete = [d for d in deletes] + [doc_id for doc_id, _, _ in upserts]
            for doc_id in to_delete:
                for slot in self._doc_slots.pop(doc_id, ()):
                    if seg.died.buf[slot] != ALIVE:
                        continue
                    seg.died.buf[slot] = version
                    chunk = seg.chunks.get(slot)
                    self._odd_slots.pop(chunk.chunk_id, None)
                    n_live -= 1
                    n_dead += 1
                    total_len -= int(seg.doc_len.buf[slot])
                    terms = set(self.indexed_terms(chunk))
                    self._df.subtract(terms)
                    _postings.mark_dead(seg, terms, version)
            added = sum(len(chunks) for _, chunks, _ in upserts)
            added_len = sum(sum(c.values()) for counts in analyzed for c in counts)
            # The average length of the version being written: block maxima are computed at it.
            avgdl = (total_len + added_len) / (n_live + added) if n_live + added else 1.0
            slots_by_doc = self._append(seg, upserts, analyzed, max(avgdl, 1.0))
            for (doc_id, _, _), slots in zip(upserts, slots_by_doc, strict=True):
                self._doc_slots[doc_id] = slots
            self._publish(seg, version, n_live + added, total_len + added_len, n_dead)
            if n_dead > 1024 and n_dead > self.compact_dead_fraction * seg.died.size:
                self._compact()
            elif self.dense_backend == "auto" and seg.ann is None and len(seg.chunks) >= self.ann_threshold:
                self._maybe_move_to_ann()

    def term_counts(
        self, upserts: Sequence[tuple[str, Sequence[Chunk], npt.NDArray[np.float32]]]
    ) -> list[list[dict[str, int]]]:
        """Indexed term frequencies of every chunk of ``upserts`` (what ``apply`` indexes)."""
        return [[dict(Counter(self.indexed_terms(c))) for c in chunks] for _, chunks, _ in upserts]

    def _append(
        self,
        seg: Segment,
        upserts: Sequence[tuple[str, Sequence[Chunk], npt.NDArray[np.float32]]],
        counts: Sequence[Sequence[Mapping[str, int]]],
        avgdl: float,
    ) -> list[range]:
        """Write every chunk of the batch at new slots (not yet visible). Returns slots per document."""
        chunks = [c for _, doc_chunks, _ in upserts for c in doc_chunks]
        flat_counts = [tf for doc_counts in counts for tf in doc_counts]
        first = len(seg.chunks)
        if chunks:
            vectors = np.concatenate([v for _, _, v in upserts]) if len(upserts) > 1 else upserts[0][2]
            if seg.vectors is None and seg.ann is None:  # the first vectors: which store they need
                if self._sparse_vectors is None:
                    self._sparse_vectors = bool(np.count_nonzero(vectors) < 0.5 * vectors.size)
                seg.vectors = self._new_vector_store()
            if seg.vectors is not None:
                seg.vectors.extend(vectors)
            if seg.ann is not None:
                seg.ann.add(vectors, first)
            seg.died.reserve(len(chunks))
            seg.died.size += len(chunks)
            seg.doc_len.extend([sum(tf.values()) for tf in flat_counts])
            seg.chunks.append(chunks)
            self._odd_slots.update(
                (c.chunk_id, first + i)
                for i, c in enumerate(chunks)
                if c.chunk_id != f"{c.doc_id}#{c.position}"
            )
            if len(chunks) >= _BULK_POSTINGS_MIN:
                items = list(enumerate(flat_counts, start=first))
                self._df.update(_postings.add_postings_bulk(seg, items, self.k1, self.b, avgdl))
            else:
                for offset, tf in enumerate(flat_counts):
                    _postings.add_postings(seg, first + offset, tf, self.k1, self.b, avgdl)
                    self._df.update(tf.keys())
        slots_by_doc = []
        slot = first
        for _, doc_chunks, _ in upserts:
            slots_by_doc.append(range(slot, slot + len(doc_chunks)))
            slot += len(doc_chunks)
        return slots_by_doc

    def _publish(self, seg: Segment, version: int, n_live: int, total_len: int, n_dead: int) -> None:
        self._snapshot = IndexSnapshot(
            segment=seg,
            version=version,
            n_slots=len(seg.chunks),
            n_live=n_live,
            total_len=total_len,
            n_dead=n_dead,
            died=seg.died.buf,
            doc_len=seg.doc_len.buf,
            vectors=_columns(seg),
        )

    def _maybe_move_to_ann(self) -> None:
        """``dense_backend="auto"`` past the threshold: the vectors move into an hnswlib graph
        (writer lock held), unless they are sparse. Hashed vectors (``HashingEmbedder``: about a
        quarter of the dimensions set) make sparse queries, which exact search answers by reading
        only their rows and on which the graph's recall@10 was 0.57-0.83 (decision 0043)."""
        snap = self._snapshot
        seg = snap.segment
        assert seg.vectors is not None
        if self._sparse_vectors:
            if not self._stays_exact_logged:
                logger.info(
                    "dense search stays exact at %d slots: the vectors are sparse (hashed)", snap.n_slots
                )
                self._stays_exact_logged = True
            return
        logger.info("dense search moves to an hnswlib graph at %d slots", snap.n_slots)
        ann = HnswIndex(self.dim, capacity=snap.n_slots)
        ann.add_columns(seg.vectors, snap.n_slots)
        seg.ann = ann
        seg.vectors = None  # older snapshots keep their reference to the columns
        self._publish(seg, snap.version, snap.n_live, snap.total_len, snap.n_dead)

    def _compact(self) -> None:
        """Rebuild without dead slots (writer lock held). Readers keep their old segment."""
        old = self._snapshot
        live = old.live_slots()
        logger.info("compacting index: %d live of %d slots", len(live), old.n_slots)
        remap = np.full(old.n_slots, -1, dtype=np.int64)
        remap[live] = np.arange(len(live))
        use_ann = self.dense_backend == "hnsw" or (
            self.dense_backend == "auto" and old.segment.ann is not None and len(live) >= self.ann_threshold
        )
        seg = self._new_segment(old.segment.chunks.compacted(live), use_ann)
        if not use_ann and seg.vectors is None:
            seg.vectors = self._new_vector_store()
        seg.doc_len.extend(old.doc_len[live])
        seg.died.reserve(len(live))
        seg.died.size = len(live)
        avgdl = max(old.avgdl, 1.0)
        _postings.rebuild_postings(old.segment, seg, remap, self.k1, self.b, avgdl)
        for first in range(0, len(live), 50_000):  # vectors in batches: no second full copy
            part = live[first : first + 50_000]
            if old.vectors is not None:
                rows = old.vectors.columns(part)
            else:
                assert old.segment.ann is not None
                rows = old.segment.ann.vectors(part.tolist())
            if seg.vectors is not None:
                seg.vectors.extend(rows)
            if seg.ann is not None:
                seg.ann.add(rows, first)
        self._doc_slots = {
            d: range(int(remap[s[0]]), int(remap[s[0]]) + len(s)) for d, s in self._doc_slots.items()
        }
        self._odd_slots = {cid: s for s, cid in seg.chunks.odd_ids.items()}
        self._df = +self._df  # drop zero counts
        self._publish(seg, old.version + 1, old.n_live, old.total_len, 0)

    # ---------------------------------------------------------------- memory
    def memory_bytes(self) -> dict[str, int]:
        """Bytes of RAM held by each part of the index (measured from its buffers; ``make bench-scale``)."""
        seg = self._snapshot.segment
        post = sum(p.slots.nbytes + p.tfs.nbytes for p in seg.postings.values())
        blocks = sum(p.blocks.ids.nbytes + p.blocks.maxes.nbytes for p in seg.postings.values() if p.blocks)
        # Python objects per term: the dict entry, the key, the tuple and two or four array headers.
        per_term = sum(200 + len(t) + (224 if p.blocks else 0) for t, p in seg.postings.items())
        dead = sum(log.buffer_info()[1] * log.itemsize for log in seg.dead.values())
        out = {
            "postings": post,
            "postings_objects": per_term,
            "block_maxima": blocks,
            "dead_log": dead,
            "slot_columns": seg.died.buf.nbytes + seg.doc_len.buf.nbytes,
            "vectors_exact": seg.vectors.nbytes if seg.vectors is not None else 0,
            "vectors_ann": seg.ann.nbytes() if seg.ann is not None else 0,
            "doc_map": sum(len(d) + 120 for d in self._doc_slots),
        }
        out.update({f"chunks_{k}": v for k, v in seg.chunks.nbytes().items()})
        return out


def _columns(seg: Segment) -> ColumnView | QuantizedView | None:
    return seg.vectors.view() if seg.vectors is not None else None


if TYPE_CHECKING:
    # mypy proves here that the embedded index satisfies the contract.
    def _live_index_is_a_backend(index: LiveIndex) -> IndexBackend[IndexSnapshot]:
        return index
