"""A stateless hashed bag of word n-grams: the default embedder, no model to load."""

from __future__ import annotations

import math
import zlib
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from verityrag.embed import _hashing_compiled
from verityrag.embed.embedder import FloatMatrix, l2_normalise
from verityrag.errors import InvalidInputError
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer


@lru_cache(maxsize=500_000)
def _hash(feature: str) -> int:
    # crc32 is stable across processes (Python's hash() is salted), so vectors
    # stored on disk stay valid after a restart.
    return zlib.crc32(feature.encode("utf-8"))


@lru_cache(maxsize=4096)
def _weight(tf: int) -> float:
    """Sublinear term frequency, ``1 + ln tf`` (math.log: numpy's log may differ in the last bit)."""
    return 1.0 + math.log(tf)


class HashingEmbedder:
    """Hashed, signed bag of analyzed word n-grams (stopwords removed), sublinear tf, L2-normalised.

    Stateless: nothing to fit, identical output in every process. It is a
    lexical signal with some robustness (stemming, bigrams), not a semantic one.
    """

    def __init__(
        self,
        dim: int = 384,
        ngram_range: tuple[int, int] = (1, 2),
        analyzer: Analyzer = DEFAULT_ANALYZER,
    ) -> None:
        if dim < 8:
            raise ValueError("dim must be >= 8")
        lo, hi = ngram_range
        if not 1 <= lo <= hi:
            raise ValueError("ngram_range must satisfy 1 <= min <= max")
        self._dim = dim
        self.ngram_range = ngram_range
        self.analyzer = analyzer

    @property
    def dim(self) -> int:
        return self._dim

    def fingerprint(self) -> str:
        lo, hi = self.ngram_range
        return f"hashing:v1:dim={self._dim}:ngrams={lo}-{hi}:{self.analyzer.fingerprint()}"

    def _features(self, text: str) -> Counter[str]:
        terms = self.analyzer.analyze(text)
        lo, hi = self.ngram_range
        feats: Counter[str] = Counter()
        for n in range(lo, hi + 1):
            if n == 1:
                feats.update(terms)
            else:
                feats.update(map(" ".join, zip(*(terms[i:] for i in range(n)), strict=False)))
        return feats

    def encode(self, texts: Sequence[str]) -> FloatMatrix:
        # A str is a Sequence[str] too: encoded, it gave one row per character.
        if isinstance(texts, str):
            raise InvalidInputError("texts", "expected a sequence of strings, got one str")
        if _hashing_compiled.AVAILABLE and self.ngram_range[1] <= 2:
            term_lists = [self.analyzer.analyze(text) for text in texts]
            return l2_normalise(
                _hashing_compiled.hashed_counts(term_lists, self._dim, self.ngram_range, _hash)
            )
        return self.encode_reference(texts)

    def encode_reference(self, texts: Sequence[str]) -> FloatMatrix:
        """:meth:`encode` in Python, feature string by feature string: what the compiled path
        must match bit for bit, and what serves without numba or for n-grams past two."""
        dim = self._dim
        out = np.zeros((len(texts), dim), dtype=np.float32)
        # Every feature of every text, then one scatter-add: the same float32 additions, in the
        # same order per cell, as adding feature by feature (np.add.at goes in index order).
        counts: list[int] = []
        hashes: list[int] = []
        tfs: list[int] = []
        for text in texts:
            feats = self._features(text)
            counts.append(len(feats))
            hashes.extend(map(_hash, feats))
            tfs.extend(feats.values())
        if hashes:
            h = np.fromiter(hashes, dtype=np.int64, count=len(hashes))
            weights = np.fromiter(map(_weight, tfs), dtype=np.float64, count=len(tfs))
            values = np.where((h // dim) & 1, weights, -weights).astype(np.float32)
            rows = np.repeat(np.arange(len(texts)), counts)
            np.add.at(out, (rows, h % dim), values)
        return l2_normalise(out)

    def __repr__(self) -> str:
        return f"HashingEmbedder(dim={self._dim}, ngram_range={self.ngram_range})"
