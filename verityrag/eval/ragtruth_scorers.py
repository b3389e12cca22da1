"""The RAGTruth runner's baseline pair scorers: lexical coverage, TF-IDF + logistic regression, grounding.

Each has ``score_pairs(pairs) -> P(supported)`` (:class:`~verityrag.verify.protocols.NLIScorer`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from verityrag.errors import NotFittedError
from verityrag.text.analyzer import DEFAULT_ANALYZER
from verityrag.text.sentences import split_sentences
from verityrag.types import Chunk, Citation, CitedSentence
from verityrag.verify.grounding import GroundingChecker

_NUMBER_RE = re.compile(r"\d+(?:[.,]\d+)*")
_NAME_RE = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-zA-Z'\-]+")


def lexical_features(premise: str, hypothesis: str) -> dict[str, float]:
    """Coverage figures of the hypothesis by the premise (content terms, numbers, names)."""
    analyze = DEFAULT_ANALYZER.analyze
    p_terms = set(analyze(premise))
    h_terms = analyze(hypothesis)
    coverage = sum(t in p_terms for t in set(h_terms)) / len(set(h_terms)) if h_terms else 1.0
    sentence_cov = []
    for sentence in split_sentences(hypothesis):
        terms = set(analyze(sentence))
        if terms:
            sentence_cov.append(sum(t in p_terms for t in terms) / len(terms))
    p_numbers = {n.replace(",", "") for n in _NUMBER_RE.findall(premise)}
    h_numbers = {n.replace(",", "") for n in _NUMBER_RE.findall(hypothesis)}
    numbers = len(h_numbers & p_numbers) / len(h_numbers) if h_numbers else 1.0
    p_lower = premise.lower()
    names = {m.lower() for m in _NAME_RE.findall(hypothesis)}
    name_share = sum(n in p_lower for n in names) / len(names) if names else 1.0
    return {
        "coverage": coverage,
        "min_sentence_coverage": min(sentence_cov, default=1.0),
        "numbers": numbers,
        "names": name_share,
        "novel_terms": float(len(set(h_terms) - p_terms)),
        "log_length": math.log1p(len(h_terms)),
    }


class LexicalEntityScorer:
    """P(supported) ~ coverage x numbers share x names share. No learning, ~1 ms per pair."""

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        out = []
        for premise, hypothesis in pairs:
            f = lexical_features(premise, hypothesis)
            out.append(f["coverage"] * f["numbers"] * f["names"])
        return out


def _novel_words(premise: str, hypothesis: str) -> str:
    p_terms = set(DEFAULT_ANALYZER.analyze(premise))
    return " ".join(t for t in DEFAULT_ANALYZER.analyze(hypothesis) if t not in p_terms)


_LEXICAL_COLUMNS = ("coverage", "min_sentence_coverage", "numbers", "names", "novel_terms", "log_length")


class TfidfLogisticScorer:
    """Logistic regression on TF-IDF of the hypothesis words absent from the premise + lexical figures."""

    def __init__(self, c: float = 1.0) -> None:
        self.c = c
        self.vectorizer_: Any = None
        self.scaler_: Any = None
        self.model_: Any = None

    @staticmethod
    def _raw(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], np.ndarray]:
        novel, dense = [], []
        for premise, hypothesis in pairs:
            f = lexical_features(premise, hypothesis)
            dense.append([f[c] for c in _LEXICAL_COLUMNS])
            novel.append(_novel_words(premise, hypothesis))
        return novel, np.asarray(dense, dtype=float)

    def _fit_raw(self, novel: Sequence[str], dense: np.ndarray, y: np.ndarray) -> TfidfLogisticScorer:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.preprocessing import StandardScaler

        self.vectorizer_ = TfidfVectorizer(min_df=2, sublinear_tf=True, token_pattern=r"\S+")
        self.scaler_ = StandardScaler()
        x = self._stack(self.vectorizer_.fit_transform(novel), self.scaler_.fit_transform(dense))
        self.model_ = LogisticRegression(C=self.c, max_iter=2000, class_weight="balanced").fit(x, y)
        return self

    @staticmethod
    def _stack(sparse: Any, dense: np.ndarray) -> Any:
        from scipy import sparse as sp  # type: ignore[import-untyped]

        return sp.hstack([sparse, sp.csr_matrix(dense)]).tocsr()

    def _predict_raw(self, novel: Sequence[str], dense: np.ndarray) -> list[float]:
        x = self._stack(self.vectorizer_.transform(novel), self.scaler_.transform(dense))
        return [float(p) for p in self.model_.predict_proba(x)[:, 1]]

    def fit(self, pairs: Sequence[tuple[str, str]], supported: Sequence[int]) -> TfidfLogisticScorer:
        novel, dense = self._raw(pairs)
        return self._fit_raw(novel, dense, np.asarray(supported))

    def out_of_fold(
        self, pairs: Sequence[tuple[str, str]], supported: Sequence[int], folds: int = 5
    ) -> list[float]:
        """Cross-fitted P(supported) for the training pairs themselves (to fit a threshold honestly)."""
        from sklearn.model_selection import StratifiedKFold

        novel, dense = self._raw(pairs)
        y = np.asarray(supported)
        out = np.zeros(len(pairs))
        for train_idx, held_idx in StratifiedKFold(folds, shuffle=True, random_state=0).split(dense, y):
            part = TfidfLogisticScorer(self.c)._fit_raw(
                [novel[i] for i in train_idx], dense[train_idx], y[train_idx]
            )
            out[held_idx] = part._predict_raw([novel[i] for i in held_idx], dense[held_idx])
        return [float(v) for v in out]

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if self.model_ is None:
            raise NotFittedError("TfidfLogisticScorer is not fitted: call fit(pairs, supported) first")
        novel, dense = self._raw(pairs)
        return self._predict_raw(novel, dense)


class GroundingScorer:
    """The project's GroundingChecker as a pair scorer: the response's weakest claim."""

    def __init__(self, checker: GroundingChecker | None = None) -> None:
        self.checker = checker or GroundingChecker(evidence_cache_size=0)

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        out = []
        for premise, hypothesis in pairs:
            chunk = Chunk("ev", "ev", "", premise, 0, 0, len(premise))
            cite = (Citation("ev", "ev", "", 0, len(premise)),)
            sentences = [CitedSentence(s, cite) for s in split_sentences(hypothesis)] or [
                CitedSentence(hypothesis, cite)
            ]
            out.append(self.checker.check(sentences, {"ev": chunk}).overall_score)
        return out
