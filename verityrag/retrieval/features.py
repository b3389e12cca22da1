"""Retrieval features shared by the reranker and the sufficiency gate.

Every feature is a ratio or a rank transform, never a raw corpus statistic, so a
model fitted on one corpus transfers to another of a different size (the
default gate ships with the package).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

import numpy as np
import numpy.typing as npt

from verityrag.index.protocol import AnyIndex, PrefetchesTermStatistics, SnapshotView
from verityrag.text.analyzer import Analyzer
from verityrag.text.sentences import sentence_spans
from verityrag.types import Chunk, Hit

BM25_K1_PLUS_1 = 2.5  # (k1 + 1) of the index's Okapi BM25: the most one term can add per IDF unit

CHUNK_FEATURES: tuple[str, ...] = (
    "bm25_norm",  # BM25 / the most the query's terms could score
    "dense",  # cosine of query and chunk vectors
    "fused",  # fused retrieval score (already normalised by fusion)
    "bm25_rrank",  # 1 / BM25 rank (0 when not retrieved lexically)
    "dense_rrank",  # 1 / dense rank
    "cov_w",  # IDF-weighted share of query terms in the chunk
    "cov",  # plain share of query terms in the chunk
    "title_cov",  # share of query terms in the title
    "bigram",  # share of query bigrams in the chunk
    "best_sentence_cov_w",  # best IDF-weighted coverage by one sentence of the chunk
    "max_missing_idf",  # the rarest query term the chunk lacks (IDF / max IDF)
    "chunk_words",  # chunk length in words / 128
    "query_terms",  # number of query terms
)


@dataclass(frozen=True, slots=True)
class ChunkTerms:
    """A chunk's analyzed terms, computed once per chunk and cached (chunks are immutable)."""

    terms: frozenset[str]
    title_terms: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    sentence_terms: tuple[frozenset[str], ...]
    words: int


def _bigrams(terms: Sequence[str]) -> frozenset[tuple[str, str]]:
    return frozenset(pairwise(terms))


class ChunkTermCache:
    """LRU cache of :class:`ChunkTerms` keyed by chunk (text and title included in the key)."""

    def __init__(self, analyzer: Analyzer, maxsize: int = 200_000) -> None:
        self.analyzer = analyzer
        self.get = lru_cache(maxsize=maxsize)(self._compute)

    def _compute(self, chunk: Chunk) -> ChunkTerms:
        analyze = self.analyzer.analyze
        terms = analyze(chunk.text)
        sentences = tuple(frozenset(analyze(chunk.text[s:e])) for s, e in sentence_spans(chunk.text))
        return ChunkTerms(
            terms=frozenset(terms),
            title_terms=frozenset(analyze(chunk.title)),
            bigrams=_bigrams(terms),
            sentence_terms=sentences,
            words=len(chunk.text.split()),
        )


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """A question's analyzed terms with their IDF weights at one index snapshot."""

    text: str
    terms: tuple[str, ...]
    weights: dict[str, float]
    bigrams: frozenset[tuple[str, str]]
    max_idf: float
    oov_fraction: float  # share of the terms the corpus has never seen

    @classmethod
    def build(
        cls, text: str, analyzer: Analyzer, idf: Callable[[str], float], df: Callable[[str], int]
    ) -> QueryTerms:
        ordered = analyzer.analyze(text)
        unique = tuple(dict.fromkeys(ordered))
        # Unseen terms get the largest weight present: missing them is what matters.
        raw = {t: max(idf(t), 0.0) for t in unique}
        oov = [t for t in unique if df(t) == 0]
        max_idf = max(raw.values(), default=0.0)
        unseen_weight = max(max_idf, 1.0)
        weights = {t: (unseen_weight if t in oov else raw[t]) + 1e-3 for t in unique}
        return cls(
            text=text,
            terms=unique,
            weights=weights,
            bigrams=_bigrams(ordered),
            max_idf=max(max(weights.values(), default=1.0), 1e-3),
            oov_fraction=len(oov) / len(unique) if unique else 1.0,
        )

    @classmethod
    def from_index(cls, text: str, index: AnyIndex, snapshot: SnapshotView) -> QueryTerms:
        """Terms and weights of ``text`` at one snapshot of ``index``, with its analyzer."""
        if isinstance(index, PrefetchesTermStatistics):
            # A remote index (Elasticsearch) fetches every term's statistics in one round trip.
            index.prefetch_term_statistics(index.analyzer.analyze(text), snapshot)
        return cls.build(
            text,
            index.analyzer,
            lambda term: index.idf(term, snapshot),
            lambda term: index.document_frequency(term, snapshot),
        )

    @property
    def total_weight(self) -> float:
        return sum(self.weights.values())

    def weighted_coverage(self, terms: frozenset[str]) -> float:
        total = self.total_weight
        return sum(w for t, w in self.weights.items() if t in terms) / total if total else 0.0

    def coverage(self, terms: frozenset[str]) -> float:
        return sum(1 for t in self.terms if t in terms) / len(self.terms) if self.terms else 0.0


def chunk_features(q: QueryTerms, hit: Hit, cached: ChunkTerms) -> list[float]:
    """One row of :data:`CHUNK_FEATURES` for a (query, retrieved chunk) pair."""
    best_bm25 = sum(q.weights.values()) * BM25_K1_PLUS_1
    missing = [q.weights[t] for t in q.terms if t not in cached.terms]
    return [
        hit.bm25_score / best_bm25 if best_bm25 > 0 else 0.0,
        hit.dense_score,
        hit.score,
        1.0 / hit.bm25_rank if hit.bm25_rank else 0.0,
        1.0 / hit.dense_rank if hit.dense_rank else 0.0,
        q.weighted_coverage(cached.terms),
        q.coverage(cached.terms),
        q.coverage(cached.title_terms),
        len(q.bigrams & cached.bigrams) / len(q.bigrams) if q.bigrams else 0.0,
        max((q.weighted_coverage(s) for s in cached.sentence_terms), default=0.0),
        max(missing, default=0.0) / q.max_idf,
        cached.words / 128.0,
        float(len(q.terms)),
    ]


def feature_matrix(q: QueryTerms, hits: Sequence[Hit], cache: ChunkTermCache) -> npt.NDArray[np.float64]:
    if not hits:
        return np.zeros((0, len(CHUNK_FEATURES)))
    return np.asarray([chunk_features(q, h, cache.get(h.chunk)) for h in hits], dtype=np.float64)
