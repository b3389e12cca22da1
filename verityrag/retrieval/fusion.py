"""Fusing ranked lists: reciprocal rank fusion and weighted min-max normalised scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from verityrag.errors import InvalidInputError

FusionMode = Literal["rrf", "weighted"]
FUSION_MODES: tuple[str, ...] = ("rrf", "weighted")


def check_fusion_mode(mode: str) -> FusionMode:
    if mode not in FUSION_MODES:
        raise InvalidInputError("fusion", f"{mode!r} is not one of {', '.join(FUSION_MODES)}")
    return mode  # type: ignore[return-value]


def rrf(rankings: Sequence[Sequence[str]], k: int = 60) -> dict[str, float]:
    """Reciprocal rank fusion (Cormack et al. 2009): sum of 1 / (k + rank), rank from 1."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            fused[key] = fused.get(key, 0.0) + 1.0 / (k + rank)
    return fused


def _min_max(scores: dict[str, float]) -> dict[str, float]:
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi - lo < 1e-12:
        return {key: 1.0 for key in scores}
    return {key: (value - lo) / (hi - lo) for key, value in scores.items()}


def weighted(score_lists: Sequence[dict[str, float]], weights: Sequence[float]) -> dict[str, float]:
    """Weighted sum of per-list min-max normalised scores (missing from a list = 0)."""
    if len(score_lists) != len(weights):
        raise InvalidInputError("weights", "need one weight per score list")
    fused: dict[str, float] = {}
    for scores, weight in zip(score_lists, weights, strict=True):
        for key, value in _min_max(scores).items():
            fused[key] = fused.get(key, 0.0) + weight * value
    return fused
