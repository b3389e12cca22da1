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
statistics (N, total length); document frequencies are counted from the
postings at query time, so they are always those of the reader's snapshot.
When more than half of the slots (and over 1,024 of them) are dead the writer compacts: it rebuilds
the postings without dead entries into a new segment (readers keep the old one).
"""

from __future__ import annotations

import logging
import math
import threading
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from itertools import chain
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from verityrag.errors import InvalidInputError
from verityrag.index._hnsw import HnswIndex
from verityrag.index.protocol import Scored, check_upserts
from verityrag.index.snapshot import ALIVE, IndexSnapshot, Segment, holds, slots_held
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.types import Chunk

__all__ = ["DENSE_BACKENDS", "DenseBackend", "IndexSnapshot", "LiveIndex", "Scored"]

logger = logging.getLogger(__name__)

# Batches with at least this many chunks build postings with numpy grouping (bulk ingest, restore).
_BULK_POSTINGS_MIN = 64
DenseBackend = Literal["exact", "hnsw"]
DENSE_BACKENDS: tuple[str, ...] = ("exact", "hnsw")


def _top_k(scores: npt.NDArray[np.floating[Any]], k: int) -> list[int]:
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


class LiveIndex:
    """Incremental Okapi BM25 and dense vectors over the same chunks, with snapshot reads.

    BM25 follows ``rank_bm25.BM25Okapi`` exactly (k1, b, and the epsilon floor
    for negative IDF), so scores can be checked against it.
    """

    def __init__(
        self,
        dim: int,
        analyzer: Analyzer = DEFAULT_ANALYZER,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        dense_backend: DenseBackend = "exact",
        compact_dead_fraction: float = 0.5,
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
        self._write_lock = threading.Lock()
        self._df: Counter[str] = Counter()
        self._doc_slots: dict[str, list[int]] = {}
        self._slot_of_chunk: dict[str, int] = {}
        self._avg_idf_cache: tuple[int, float] | None = None
        segment = self._new_segment()
        self._snapshot = IndexSnapshot(
            segment, 0, 0, 0, 0, 0, segment.died.buf, segment.doc_len.buf, segment.vectors.buf
        )

    def _new_segment(self) -> Segment:
        segment = Segment(self.dim)
        if self.dense_backend == "hnsw":
            segment.ann = HnswIndex(self.dim)
        return segment

    def indexed_terms(self, chunk: Chunk) -> list[str]:
        """The terms BM25 indexes for a chunk: its text and its document title."""
        return self.analyzer.analyze(f"{chunk.title}\n{chunk.text}")

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
        # the slot map is newer than the snapshot, so scan what the snapshot sees.
        return [c for c in (snap.chunk(int(s)) for s in snap.live_slots()) if c.doc_id == doc_id]

    def get_chunk(self, chunk_id: str) -> Chunk | None:
        snap = self._snapshot
        slot = self._slot_of_chunk.get(chunk_id)
        if slot is not None and holds(snap, slot, chunk_id):
            return snap.chunk(slot)
        if snap is self._snapshot and not self._write_lock.locked():
            return None  # the slot map and the published version agree: no such chunk
        # A write in flight (or just published): the slot map may already point at slots the
        # snapshot read above does not show, so look the chunk up in what that snapshot holds.
        slot = slots_held(snap).get(chunk_id)
        return None if slot is None else snap.chunk(slot)

    def live_chunks(self, snapshot: IndexSnapshot | None = None) -> list[Chunk]:
        snap = snapshot or self._snapshot
        return [snap.chunk(int(s)) for s in snap.live_slots()]

    def document_frequency(self, term: str, snapshot: IndexSnapshot | None = None) -> int:
        snap = snapshot or self._snapshot
        entry = snap.segment.postings.get(term)
        if entry is None:
            return 0
        slots, _, n = entry
        return int(np.count_nonzero(snap.visible_mask(slots[:n])))

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

    def _accumulate_bm25(
        self, snap: IndexSnapshot, terms: Sequence[str]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]:
        """Scores over all slots of the snapshot, and the slots that any term touched."""
        scores = np.zeros(snap.n_slots, dtype=np.float64)
        touched: list[npt.NDArray[np.int32]] = []
        if snap.n_live == 0:
            return scores, np.empty(0, dtype=np.int64)
        k1, b, avgdl = self.k1, self.b, snap.avgdl
        postings = snap.segment.postings
        for term, count in Counter(terms).items():
            entry = postings.get(term)
            if entry is None:
                continue
            slots_buf, tfs_buf, n = entry
            slots, tfs = slots_buf[:n], tfs_buf[:n]
            mask = snap.visible_mask(slots)
            if not mask.all():
                slots, tfs = slots[mask], tfs[mask]
            if len(slots) == 0:
                continue
            idf = self._idf_from_df(len(slots), snap)
            dl = snap.doc_len[slots]
            denom = tfs + k1 * (1.0 - b + b * dl / avgdl)
            # rank_bm25 adds a query term's contribution once per occurrence.
            scores[slots] += count * idf * (tfs * (k1 + 1.0) / denom)
            touched.append(slots)
        if not touched:
            return scores, np.empty(0, dtype=np.int64)
        return scores, np.unique(np.concatenate(touched)).astype(np.int64)

    def bm25_scores(
        self, terms: Sequence[str], snapshot: IndexSnapshot | None = None
    ) -> tuple[list[str], npt.NDArray[np.float64]]:
        """BM25 score of every live chunk (chunk ids in ingest order), as ``rank_bm25.get_scores``."""
        snap = snapshot or self._snapshot
        scores, _ = self._accumulate_bm25(snap, terms)
        live = snap.live_slots()
        return [snap.chunk(int(s)).chunk_id for s in live], scores[live]

    def search_lexical(
        self, query: str | Sequence[str], k: int = 10, snapshot: IndexSnapshot | None = None
    ) -> list[Scored]:
        """Top-``k`` chunks by BM25. ``query`` is text (analyzed here) or analyzed terms."""
        snap = snapshot or self._snapshot
        terms = self.analyzer.analyze(query) if isinstance(query, str) else query
        scores, touched = self._accumulate_bm25(snap, terms)
        if len(touched) == 0 or k <= 0:
            return []
        cand = scores[touched]
        # touched is ascending, so an earlier position is an earlier slot.
        return [Scored(snap.chunk(int(touched[i])), float(cand[i])) for i in _top_k(cand, k)]

    def search_dense(
        self, vector: npt.ArrayLike, k: int = 10, snapshot: IndexSnapshot | None = None
    ) -> list[Scored]:
        """Top-``k`` chunks by cosine similarity (vectors are unit length)."""
        snap = snapshot or self._snapshot
        if snap.n_live == 0 or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            raise InvalidInputError("vector", f"has dimension {query.shape[0]}, index has {self.dim}")
        ann = snap.segment.ann
        if ann is not None:
            hits = self._search_ann(ann, snap, query, k)
            if hits is not None:
                return hits
        nonzero = np.flatnonzero(query)
        if len(nonzero) * 2 < self.dim:
            # Sparse (hashed) query: only its nonzero rows of the column matrix matter.
            sims = query[nonzero] @ snap.vectors[nonzero, : snap.n_slots]
        else:
            sims = query @ snap.vectors[:, : snap.n_slots]
        if snap.n_dead:
            sims[snap.died[: snap.n_slots] <= snap.version] = -np.inf
        return [Scored(snap.chunk(int(i)), float(sims[i])) for i in _top_k(sims, min(k, snap.n_live))]

    def cosines(
        self, vector: npt.ArrayLike, chunk_ids: Sequence[str], snapshot: IndexSnapshot | None = None
    ) -> list[float]:
        """Cosine of ``vector`` with each chunk (0.0 for a chunk the snapshot does not hold)."""
        snap = snapshot or self._snapshot
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        out = []
        held: dict[str, int] | None = None  # the snapshot's own chunk-id -> slot map, built if needed
        for chunk_id in chunk_ids:
            slot = self._slot_of_chunk.get(chunk_id)
            if slot is None or not holds(snap, slot, chunk_id):
                # The map is the newest version's: a snapshot from before a replace, a delete or
                # a compaction holds the chunk at another slot (or not at all).
                if held is None:
                    held = slots_held(snap)
                slot = held.get(chunk_id)
            out.append(float(query @ snap.vectors[:, slot]) if slot is not None else 0.0)
        return out

    def _search_ann(
        self, ann: HnswIndex, snap: IndexSnapshot, query: npt.NDArray[np.float32], k: int
    ) -> list[Scored] | None:
        found = ann.query(query, min(k, snap.n_live), snap.is_visible)
        if found is None:
            return None
        return [Scored(snap.chunk(int(slot)), float(sim)) for slot, sim in zip(*found, strict=True)]

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
                    chunk = seg.chunks[slot]
                    self._slot_of_chunk.pop(chunk.chunk_id, None)
                    n_live -= 1
                    n_dead += 1
                    total_len -= int(seg.doc_len.buf[slot])
                    self._df.subtract(set(self.indexed_terms(chunk)))
            slots_by_doc = self._append(seg, upserts, analyzed)
            for (doc_id, _, _), counts, slots in zip(upserts, analyzed, slots_by_doc, strict=True):
                self._doc_slots[doc_id] = slots
                n_live += len(slots)
                total_len += sum(sum(c.values()) for c in counts)
            self._publish(seg, version, n_live, total_len, n_dead)
            if n_dead > 1024 and n_dead > self.compact_dead_fraction * seg.died.size:
                self._compact()

    def term_counts(
        self, upserts: Sequence[tuple[str, Sequence[Chunk], npt.NDArray[np.float32]]]
    ) -> list[list[dict[str, int]]]:
        """Indexed term frequencies of every chunk of ``upserts`` (what ``apply`` indexes)."""
        return [[dict(Counter(self.indexed_terms(c))) for c in chunks] for _, chunks, _ in upserts]

    def _add_postings_bulk(self, seg: Segment, items: Sequence[tuple[int, Mapping[str, int]]]) -> None:
        """Append many chunks' postings at once: group by term with numpy, one merge per term."""
        if not items:
            return
        # Everything below runs in C-level loops (chain, map, fromiter): restoring 100k
        # chunks is dominated by this function.
        keys = list(chain.from_iterable(tf.keys() for _, tf in items))
        if not keys:
            return
        lengths = np.fromiter((len(tf) for _, tf in items), dtype=np.int64, count=len(items))
        slot_ids = np.fromiter((slot for slot, _ in items), dtype=np.int32, count=len(items))
        freqs = np.fromiter(chain.from_iterable(tf.values() for _, tf in items), np.float32, len(keys))
        vocab: defaultdict[str, int] = defaultdict()
        vocab.default_factory = vocab.__len__  # first sight of a term gives it the next id
        term_ids = np.fromiter(map(vocab.__getitem__, keys), dtype=np.int64, count=len(keys))
        self._df.update(dict(zip(vocab, np.bincount(term_ids).tolist(), strict=True)))
        order = np.argsort(term_ids, kind="stable")  # stable keeps slots ascending within a term
        ids = term_ids[order]
        slot_arr = np.repeat(slot_ids, lengths)[order]
        tf_arr = freqs[order]
        bounds = np.flatnonzero(np.diff(ids)) + 1
        starts = np.concatenate([[0], bounds])
        ends = np.concatenate([bounds, [len(ids)]])
        terms = list(vocab)
        postings = seg.postings
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            term = terms[ids[start]]
            entry = postings.get(term)
            if entry is None:
                postings[term] = (slot_arr[start:end].copy(), tf_arr[start:end].copy(), end - start)
                continue
            sbuf, tbuf, n = entry
            total = n + end - start
            if total > len(sbuf):
                # Grown by doubling into new buffers: copying the term's whole postings on every
                # batch made a bulk batch (or a 64-chunk document) cost O(corpus), not O(batch).
                new_s = np.empty(max(total, 2 * n), dtype=np.int32)
                new_t = np.empty(max(total, 2 * n), dtype=np.float32)
                new_s[:n], new_t[:n] = sbuf[:n], tbuf[:n]
                sbuf, tbuf = new_s, new_t
            # Written past n only, as _add_postings does: readers of the old entry read [:n].
            sbuf[n:total], tbuf[n:total] = slot_arr[start:end], tf_arr[start:end]
            postings[term] = (sbuf, tbuf, total)

    def _append(
        self,
        seg: Segment,
        upserts: Sequence[tuple[str, Sequence[Chunk], npt.NDArray[np.float32]]],
        counts: Sequence[Sequence[Mapping[str, int]]],
    ) -> list[list[int]]:
        """Write every chunk of the batch at new slots (not yet visible). Returns slots per document."""
        chunks = [c for _, doc_chunks, _ in upserts for c in doc_chunks]
        flat_counts = [tf for doc_counts in counts for tf in doc_counts]
        if not chunks:
            return [[] for _ in upserts]
        vectors = np.concatenate([v for _, _, v in upserts]) if len(upserts) > 1 else upserts[0][2]
        first = seg.vectors.extend(vectors)
        seg.died.reserve(len(chunks))
        seg.died.size += len(chunks)
        seg.doc_len.extend([sum(tf.values()) for tf in flat_counts])
        seg.chunks.extend(chunks)
        self._slot_of_chunk.update((c.chunk_id, first + i) for i, c in enumerate(chunks))
        if len(chunks) >= _BULK_POSTINGS_MIN:
            self._add_postings_bulk(seg, list(enumerate(flat_counts, start=first)))
        else:
            for offset, tf in enumerate(flat_counts):
                self._add_postings(seg, first + offset, tf)
        if seg.ann is not None:
            seg.ann.add(vectors, first)
        slots_by_doc = []
        slot = first
        for _, doc_chunks, _ in upserts:
            slots_by_doc.append(list(range(slot, slot + len(doc_chunks))))
            slot += len(doc_chunks)
        return slots_by_doc

    def _add_postings(self, seg: Segment, slot: int, tf: Mapping[str, int]) -> None:
        postings = seg.postings
        for term, freq in tf.items():
            entry = postings.get(term)
            if entry is None:
                sbuf = np.empty(4, dtype=np.int32)
                tbuf = np.empty(4, dtype=np.float32)
                n = 0
            else:
                sbuf, tbuf, n = entry
                if n == len(sbuf):
                    sbuf = np.concatenate([sbuf, np.empty(n, dtype=np.int32)])
                    tbuf = np.concatenate([tbuf, np.empty(n, dtype=np.float32)])
            sbuf[n] = slot
            tbuf[n] = freq
            postings[term] = (sbuf, tbuf, n + 1)
        self._df.update(tf.keys())

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
            vectors=seg.vectors.buf,
        )

    def _compact(self) -> None:
        """Rebuild without dead slots (writer lock held). Readers keep their old segment."""
        old = self._snapshot
        live = old.live_slots()
        logger.info("compacting index: %d live of %d slots", len(live), old.n_slots)
        remap = np.full(old.n_slots, -1, dtype=np.int64)
        remap[live] = np.arange(len(live))
        seg = self._new_segment()
        seg.chunks = [old.segment.chunks[int(s)] for s in live]
        seg.vectors.extend(old.vectors[:, live].T)
        seg.doc_len.extend(old.doc_len[live])
        seg.died.reserve(len(live))
        seg.died.size = len(live)
        for term, (sbuf, tbuf, n) in old.segment.postings.items():
            new_slots = remap[sbuf[:n]]
            keep = new_slots >= 0
            if keep.any():
                postings_slots = new_slots[keep].astype(np.int32)
                seg.postings[term] = (postings_slots, tbuf[:n][keep].copy(), len(postings_slots))
        if seg.ann is not None and len(live):
            seg.ann.add(np.ascontiguousarray(seg.vectors.buf[:, : len(live)].T), 0)
        self._doc_slots = {d: [int(remap[s]) for s in slots] for d, slots in self._doc_slots.items()}
        self._slot_of_chunk = {c.chunk_id: i for i, c in enumerate(seg.chunks)}
        self._df = +self._df  # drop zero counts
        self._publish(seg, old.version + 1, old.n_live, old.total_len, 0)
