"""Ensembles of pair scorers: ``EnsembleScorer`` (an NLIScorer) and ``DualNLIVerifier`` (a Verifier).

``min`` accepts a sentence only when every member does (precision), ``max`` when any
does (recall), ``mean`` averages (optionally weighted); a member's NaN score counts as 0.
``StackedScorer`` learns the combination instead: a logistic regression over the members'
logit scores (one weight per member plus an intercept), fitted on labelled pairs (the
RAGTruth runner fits it on its fitting half; there it did not beat its best member). Members are any
:class:`~verityrag.verify.protocols.NLIScorer`: cross-encoders, ONNX scorers, baselines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, get_args

from verityrag.errors import InvalidInputError, NotFittedError
from verityrag.verify.nli_verifier import NLIVerifier
from verityrag.verify.protocols import NLIScorer

__all__ = ["AGGREGATIONS", "Aggregation", "DualNLIVerifier", "EnsembleScorer", "StackedScorer", "aggregate"]

Aggregation = Literal["min", "mean", "max"]
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)


def aggregate(values: Sequence[float], how: Aggregation, weights: Sequence[float] | None = None) -> float:
    """The members' scores of one pair combined; a NaN member score counts as 0 (unsupported)."""
    if not values:
        raise InvalidInputError("values", "cannot aggregate an empty list")
    # min() and max() keep or drop a NaN by its position (min([0.9, nan]) is 0.9, min([nan,
    # 0.9]) is nan), so a broken member could pass a "min" ensemble: read it as no support.
    values = [0.0 if math.isnan(v) else v for v in values]
    if how == "min":
        return min(values)
    if how == "max":
        return max(values)
    w = weights or [1.0] * len(values)
    return sum(v * x for v, x in zip(values, w, strict=True)) / sum(w)


class EnsembleScorer:
    """Scores each pair with every member and combines the scores with ``aggregation``."""

    def __init__(
        self,
        scorers: Sequence[NLIScorer],
        aggregation: Aggregation = "mean",
        weights: Sequence[float] | None = None,
    ) -> None:
        if not scorers:
            raise InvalidInputError("scorers", "an ensemble needs at least one scorer")
        if aggregation not in AGGREGATIONS:
            raise InvalidInputError("aggregation", f"{aggregation!r} is not one of {', '.join(AGGREGATIONS)}")
        if weights is not None:
            if len(weights) != len(scorers):
                raise InvalidInputError("weights", f"needs {len(scorers)} weights, got {len(weights)}")
            if aggregation != "mean":
                raise InvalidInputError("weights", "only apply to the 'mean' aggregation")
            if any(not math.isfinite(w) or w < 0 for w in weights) or sum(weights) <= 0:
                raise InvalidInputError("weights", "must be finite, >= 0, and not all 0")
        self.scorers = list(scorers)
        self.aggregation: Aggregation = aggregation
        self.weights = list(weights) if weights is not None else None

    def __repr__(self) -> str:
        return f"EnsembleScorer({self.scorers!r}, aggregation={self.aggregation!r})"

    def member_scores(self, pairs: Sequence[tuple[str, str]]) -> list[list[float]]:
        """One list of per-pair scores per member (for traces and for fitting weights)."""
        columns = [list(s.score_pairs(pairs)) for s in self.scorers]
        for scorer, column in zip(self.scorers, columns, strict=True):
            if len(column) != len(pairs):
                raise ValueError(f"{scorer!r} returned {len(column)} scores for {len(pairs)} pairs")
        return columns

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        columns = self.member_scores(pairs)
        return [aggregate([c[i] for c in columns], self.aggregation, self.weights) for i in range(len(pairs))]


def _logits(columns: Sequence[Sequence[float]]) -> Any:
    """Members' probabilities as logits, one row per pair (clipped: a 0 or 1 is not infinite)."""
    import numpy as np

    # A NaN member score reads as 0 (unsupported), as in ``aggregate``; scikit-learn refuses NaN.
    p = np.clip(np.nan_to_num(np.asarray(columns, dtype=float).T, nan=0.0), 1e-4, 1 - 1e-4)
    return np.log(p / (1 - p))


class StackedScorer:
    """P(supported) from a logistic regression over the members' scores (an NLIScorer once fitted).

    ``fit(pairs, supported)`` scores the pairs with every member and fits the regression;
    ``fit_scores`` does the same from scores already computed (one list per member).
    ``out_of_fold`` gives cross-fitted scores for the fitting pairs themselves, so a
    decision threshold can be chosen on them without reusing the fitted model's own data.
    """

    def __init__(self, scorers: Sequence[NLIScorer], c: float = 1.0) -> None:
        if not scorers:
            raise InvalidInputError("scorers", "a stack needs at least one scorer")
        if not c > 0:
            raise InvalidInputError("c", f"must be > 0, got {c!r}")
        self.scorers = list(scorers)
        self.c = c
        self.model_: Any = None

    def __repr__(self) -> str:
        return f"StackedScorer({self.scorers!r}, c={self.c})"

    def _new_model(self) -> Any:
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(C=self.c, max_iter=1000)

    def _check_columns(self, columns: Sequence[Sequence[float]], rows: int | None = None) -> None:
        """One score list per member, each of ``rows`` scores (the first list's length if None)."""
        if len(columns) != len(self.scorers):
            raise InvalidInputError("columns", f"needs {len(self.scorers)} score lists, got {len(columns)}")
        want = len(columns[0]) if rows is None else rows
        for k, column in enumerate(columns):
            if len(column) != want:
                raise InvalidInputError(
                    f"columns[{k}]", f"has {len(column)} scores; expected {want}, one per pair"
                )

    def _check_labels(self, columns: Sequence[Sequence[float]], supported: Sequence[int]) -> None:
        self._check_columns(columns, len(supported))
        if not set(supported) <= {0, 1}:
            raise InvalidInputError("supported", "labels must be 1 (supported) or 0 (unsupported)")
        if len(set(supported)) < 2:
            raise InvalidInputError("supported", "needs both supported (1) and unsupported (0) labels")

    def fit_scores(self, columns: Sequence[Sequence[float]], supported: Sequence[int]) -> StackedScorer:
        self._check_labels(columns, supported)
        self.model_ = self._new_model().fit(_logits(columns), list(supported))
        return self

    def fit(self, pairs: Sequence[tuple[str, str]], supported: Sequence[int]) -> StackedScorer:
        return self.fit_scores(EnsembleScorer(self.scorers).member_scores(pairs), supported)

    def combine(self, columns: Sequence[Sequence[float]]) -> list[float]:
        """P(supported) for pairs whose member scores are ``columns`` (one list per member)."""
        if self.model_ is None:
            raise NotFittedError("StackedScorer is not fitted: call fit(pairs, supported) first")
        self._check_columns(columns)
        return [float(p) for p in self.model_.predict_proba(_logits(columns))[:, 1]]

    def out_of_fold(
        self, columns: Sequence[Sequence[float]], supported: Sequence[int], folds: int = 5
    ) -> list[float]:
        """Cross-fitted P(supported) for the fitting pairs (each scored by a model that never saw it)."""
        import numpy as np
        from sklearn.model_selection import StratifiedKFold

        self._check_labels(columns, supported)
        if folds < 2:
            raise InvalidInputError("folds", f"must be >= 2, got {folds!r}")
        fewest = min(list(supported).count(label) for label in (0, 1))
        if fewest < folds:
            # Every fold needs both labels to fit on: scikit-learn would fail with its own words.
            raise InvalidInputError(
                "supported",
                f"the rarer label has {fewest} pairs, fewer than folds={folds}: "
                "label more pairs or pass fewer folds",
            )
        x, y = _logits(columns), np.asarray(supported)
        out = np.zeros(len(y))
        for train_idx, held_idx in StratifiedKFold(folds, shuffle=True, random_state=0).split(x, y):
            out[held_idx] = self._new_model().fit(x[train_idx], y[train_idx]).predict_proba(x[held_idx])[:, 1]
        return [float(v) for v in out]

    def coefficients(self) -> dict[str, float]:
        """The fitted weight of each member's logit (by repr) and the intercept: what the stack trusts."""
        if self.model_ is None:
            raise NotFittedError("StackedScorer is not fitted")
        out = {repr(s): float(w) for s, w in zip(self.scorers, self.model_.coef_[0], strict=True)}
        return {**out, "intercept": float(self.model_.intercept_[0])}

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        return self.combine(EnsembleScorer(self.scorers).member_scores(pairs))


class DualNLIVerifier(NLIVerifier):
    """A verifier over several NLI scorers (classically two cross-encoders), combined per sentence.

    Each result's ``details["members"]`` keeps every member's score, so the trace shows
    which model objected.
    """

    stage = "dual_nli"

    def __init__(
        self,
        scorers: Sequence[NLIScorer],
        aggregation: Aggregation = "min",
        threshold: float = 0.5,
        weights: Sequence[float] | None = None,
    ) -> None:
        super().__init__(EnsembleScorer(scorers, aggregation, weights), threshold)

    def _scores(self, pairs: Sequence[tuple[str, str]]) -> tuple[list[float], list[dict[str, Any]]]:
        ensemble = self.scorer
        assert isinstance(ensemble, EnsembleScorer)
        columns = ensemble.member_scores(pairs)
        scores, details = [], []
        for i in range(len(pairs)):
            row = [c[i] for c in columns]
            scores.append(aggregate(row, ensemble.aggregation, ensemble.weights))
            # A NaN member shows as None: it names the broken member and keeps the trace valid JSON.
            members = [None if math.isnan(v) else round(v, 4) for v in row]
            details.append({"aggregation": ensemble.aggregation, "members": members})
        return scores, details
