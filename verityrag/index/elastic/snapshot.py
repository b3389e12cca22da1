"""``ElasticsearchSnapshot``: one query's consistent view of an ``ElasticsearchIndex``.

Elasticsearch has no multi-document snapshot for free: this one fixes the collection
statistics (N, total length, document frequencies) at first read and caches every result
it returns, so one query's BM25 scores, IDF features and repeated searches agree.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from verityrag.index.protocol import Scored
from verityrag.types import Chunk

#: The stored fields a read fetches to rebuild a chunk (and its BM25 terms).
CHUNK_SOURCE = ["chunk_id", "doc_id", "title", "text", "position", "start", "end", "seq", "terms"]


def chunk_of(source: Mapping[str, Any]) -> Chunk:
    """The chunk a stored ``_source`` describes."""
    return Chunk(
        source["chunk_id"],
        source["doc_id"],
        source.get("title", ""),
        source["text"],
        int(source["position"]),
        int(source["start"]),
        int(source["end"]),
    )


class CollectionStatistics(Protocol):
    """What a snapshot asks of its index: BM25's parameters and the collection's statistics."""

    k1: float
    b: float
    epsilon: float

    def fetch_statistics(self, snap: ElasticsearchSnapshot, terms: Sequence[str]) -> None:
        """Set ``snap``'s N and total length (once) and the document frequencies of ``terms``."""

    def average_idf(self, n: int) -> float:
        """The mean IDF over the vocabulary of ``n`` live chunks (BM25Okapi's epsilon floor)."""


class ElasticsearchSnapshot:
    """One query's consistent view: collection statistics fixed at first use, results cached.

    Obtain with ``ElasticsearchIndex.snapshot()`` (it costs nothing until read).
    """

    def __init__(self, index: CollectionStatistics, version: int) -> None:
        self._index = index
        self.version = version
        self.created = time.monotonic()
        self._stats: tuple[int, int] | None = None  # (n_live, total_len)
        self.df: dict[str, int] = {}
        self._avg_idf: float | None = None
        self.chunks: dict[str, Chunk] = {}
        self.seq: dict[str, int] = {}
        self.chunk_terms: dict[str, Counter[str]] = {}
        self.vectors: dict[str, npt.NDArray[np.float32] | None] = {}
        self.results: dict[tuple[Any, ...], list[Scored]] = {}
        self._lock = threading.Lock()

    @property
    def n_live(self) -> int:
        return self._load_stats()[0]

    @property
    def total_len(self) -> int:
        return self._load_stats()[1]

    @property
    def avgdl(self) -> float:
        n, total = self._load_stats()
        return total / n if n else 0.0

    def _load_stats(self, terms: Sequence[str] = ()) -> tuple[int, int]:
        if self._stats is None:
            self._index.fetch_statistics(self, terms)
        assert self._stats is not None
        return self._stats

    def set_stats(self, n_live: int, total_len: int) -> None:
        if self._stats is None:
            self._stats = (n_live, total_len)

    def ensure_df(self, terms: Iterable[str]) -> None:
        """Document frequencies of ``terms`` (and N, total length) fetched in one request if missing."""
        missing = sorted({t for t in terms if t not in self.df})
        if self._stats is None or missing:
            with self._lock:
                missing = [t for t in missing if t not in self.df]
                if self._stats is None or missing:
                    self._index.fetch_statistics(self, missing)

    def document_frequency(self, term: str) -> int:
        if term not in self.df:
            # An IDF lookup for a term of a chunk we returned (query expansion reads a whole
            # chunk's terms): fetch all of that chunk's terms at once, not one request each.
            related: set[str] = {term}
            for counts in self.chunk_terms.values():
                if term in counts:
                    related.update(counts)
                    break
            self.ensure_df(related)
        return self.df.get(term, 0)

    def idf(self, term: str) -> float:
        df = self.document_frequency(term)
        return self.idf_from_df(df) if df else 0.0

    def idf_from_df(self, df: int) -> float:
        """``rank_bm25.BM25Okapi`` IDF, with its epsilon floor for terms in over half the chunks."""
        n = self.n_live
        idf = math.log(n - df + 0.5) - math.log(df + 0.5)
        if idf < 0:
            if self._avg_idf is None:
                self._avg_idf = self._index.average_idf(n)
            return self._index.epsilon * self._avg_idf
        return idf

    def remember(self, hit: Mapping[str, Any]) -> Chunk:
        source = hit["_source"]
        chunk_id = source["chunk_id"]
        chunk = self.chunks.get(chunk_id)
        if chunk is None:
            chunk = self.chunks[chunk_id] = chunk_of(source)
            self.seq[chunk_id] = int(source.get("seq", 0))
        if "terms" in source and chunk_id not in self.chunk_terms:
            self.chunk_terms[chunk_id] = Counter(source["terms"].split())
        return chunk

    def bm25(self, query_counts: Mapping[str, int], chunk_id: str) -> float:
        """The contract's Okapi BM25 of one chunk (as ``LiveIndex``), from this snapshot's statistics."""
        tf = self.chunk_terms[chunk_id]
        k1, b = self._index.k1, self._index.b
        dl = sum(tf.values())
        norm = k1 * (1.0 - b + b * dl / self.avgdl)
        score = 0.0
        for term, count in query_counts.items():
            freq = tf.get(term, 0)
            if freq and self.df.get(term, 0):
                score += count * self.idf_from_df(self.df[term]) * (freq * (k1 + 1.0) / (freq + norm))
        return score
