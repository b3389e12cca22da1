"""Ensembles of pair scorers: ``EnsembleScorer`` (an NLIScorer) and ``DualNLIVerifier`` (a Verifier).

``min`` accepts a sentence only when every member does (precision), ``max`` when any
does (recall), ``mean`` averages (optionally weighted). Members are any
:class:`~verityrag.verify.protocols.NLIScorer`: cross-encoders, ONNX scorers, baselines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal, get_args

from verityrag.errors import InvalidInputError
from verityrag.verify.nli import NLIVerifier
from verityrag.verify.protocols import NLIScorer

__all__ = ["AGGREGATIONS", "Aggregation", "DualNLIVerifier", "EnsembleScorer", "aggregate"]

Aggregation = Literal["min", "mean", "max"]
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)


def aggregate(values: Sequence[float], how: Aggregation, weights: Sequence[float] | None = None) -> float:
    if not values:
        raise InvalidInputError("values", "cannot aggregate an empty list")
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
            details.append({"aggregation": ensemble.aggregation, "members": [round(v, 4) for v in row]})
        return scores, details
