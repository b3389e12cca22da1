"""Thresholds with a stated precision, confirmed on held-out data, and an isotonic calibration map.

``pick_threshold`` picks the lowest score threshold (the most answers accepted) whose
precision among accepted sentences (label 1 = supported) reaches ``target_precision``,
and reports that precision with a Wilson 95% interval and the accept rate. When the
target cannot be met while accepting at least ``min_accept`` of the data, it raises
:class:`ThresholdNotReachableError` rather than return a threshold that refuses nearly everything.
``confirm_threshold`` measures the same figures on held-out data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from verityrag.errors import InvalidInputError, NotFittedError, ThresholdNotReachableError

__all__ = [
    "HeldOutCheck",
    "IsotonicCalibrator",
    "ThresholdChoice",
    "ThresholdNotReachableError",
    "confirm_threshold",
    "pick_threshold",
    "wilson_interval",
]


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (``(0, 1)`` when ``n == 0``)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


class _Record:
    """A frozen result with its fields as a dict (the JSON reports take)."""

    __slots__ = ()

    def as_dict(self) -> dict[str, Any]:
        fields: dict[str, Any] = asdict(self)  # type: ignore[call-overload]
        return fields


@dataclass(frozen=True, slots=True)
class _Accepted(_Record):
    """What a threshold accepts of ``n`` scored rows: the precision (with its Wilson interval)."""

    precision: float
    precision_low: float
    precision_high: float
    accept_rate: float
    accepted: int
    n: int


@dataclass(frozen=True, slots=True)
class ThresholdChoice(_Accepted):
    threshold: float
    target_precision: float


@dataclass(frozen=True, slots=True)
class HeldOutCheck(_Accepted):
    meets_target: bool


def _arrays(scores: Sequence[float], labels: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    try:
        s = np.asarray(scores, dtype=float)
    except (TypeError, ValueError) as exc:  # None, "high": numpy's own words name no field
        raise InvalidInputError("scores", f"must be numbers ({exc})") from None
    y = np.asarray(labels)
    if s.shape != y.shape or s.ndim != 1:
        raise InvalidInputError(
            "labels", f"need one label per score, got {s.shape} scores and {y.shape} labels"
        )
    if s.size == 0:
        raise InvalidInputError("scores", "is empty")
    if not np.isfinite(s).all():
        raise InvalidInputError("scores", "must be finite")
    if not np.isin(y, (0, 1)).all():
        raise InvalidInputError("labels", "must be 0 (unsupported) or 1 (supported)")
    return s, y.astype(int)


def pick_threshold(
    scores: Sequence[float],
    labels: Sequence[int],
    target_precision: float,
    min_accept: float = 0.1,
    conservative: bool = False,
) -> ThresholdChoice:
    """The lowest threshold with precision >= target (its Wilson lower bound when ``conservative``)."""
    if not 0.0 < target_precision <= 1.0:
        raise InvalidInputError("target_precision", f"must be within (0, 1], got {target_precision!r}")
    if not 0.0 <= min_accept <= 1.0:
        raise InvalidInputError("min_accept", f"must be within [0, 1], got {min_accept!r}")
    s, y = _arrays(scores, labels)
    order = np.argsort(-s, kind="stable")
    s_sorted, y_sorted = s[order], y[order]
    hits = np.cumsum(y_sorted)
    n = len(s)
    best: ThresholdChoice | None = None
    # Candidate cut after position k (accept the top k+1); only where the score changes.
    for k in range(n):
        if k + 1 < n and s_sorted[k + 1] == s_sorted[k]:
            continue
        accepted = k + 1
        good = int(hits[k])
        low, high = wilson_interval(good, accepted)
        precision = good / accepted
        if (low if conservative else precision) >= target_precision:
            best = ThresholdChoice(
                precision, low, high, accepted / n, accepted, n,
                threshold=float(s_sorted[k]), target_precision=target_precision,
            )  # fmt: skip
    if best is None or best.accept_rate < min_accept:
        reached = f"at most {best.accept_rate:.1%} accepted" if best else "no threshold reaches it"
        raise ThresholdNotReachableError(
            f"precision {target_precision:.2f} needs a useful accept rate (>= {min_accept:.0%}); {reached}. "
            "Lower the target, or use a stronger verifier."
        )
    return best


def confirm_threshold(
    choice: ThresholdChoice, scores: Sequence[float], labels: Sequence[int]
) -> HeldOutCheck:
    """Precision (Wilson interval) and accept rate of ``choice.threshold`` on held-out data."""
    s, y = _arrays(scores, labels)
    accept = s >= choice.threshold
    accepted = int(accept.sum())
    good = int(y[accept].sum())
    low, high = wilson_interval(good, accepted)
    precision = good / accepted if accepted else 0.0
    return HeldOutCheck(
        precision, low, high, accepted / len(s), accepted, len(s), precision >= choice.target_precision
    )


class IsotonicCalibrator:
    """A monotone map from raw scores to P(supported), fitted by isotonic regression.

    The map is stored as its breakpoints (``x_``, ``y_``), so it serialises to JSON and
    applies with ``np.interp`` (no scikit-learn at run time).
    """

    def __init__(self) -> None:
        self.x_: list[float] | None = None
        self.y_: list[float] | None = None

    def fit(self, scores: Sequence[float], labels: Sequence[int]) -> IsotonicCalibrator:
        from sklearn.isotonic import IsotonicRegression

        s, y = _arrays(scores, labels)
        iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(s, y)
        self.x_ = [float(v) for v in iso.X_thresholds_]
        self.y_ = [float(v) for v in iso.y_thresholds_]
        return self

    def transform(self, scores: Sequence[float]) -> list[float]:
        if self.x_ is None or self.y_ is None:
            raise NotFittedError("IsotonicCalibrator is not fitted: call fit(scores, labels) first")
        return [float(v) for v in np.interp(np.asarray(scores, dtype=float), self.x_, self.y_)]

    def to_dict(self) -> dict[str, list[float]]:
        if self.x_ is None or self.y_ is None:
            raise NotFittedError("IsotonicCalibrator is not fitted: call fit(scores, labels) first")
        return {"x": self.x_, "y": self.y_}

    @classmethod
    def from_dict(cls, data: dict[str, list[float]]) -> IsotonicCalibrator:
        """The map ``to_dict`` wrote (``{"x": [...], "y": [...]}``), checked: ``np.interp``
        does not check its breakpoints, and unsorted ones give wrong values silently."""
        if not isinstance(data, dict) or not all(isinstance(data.get(k), list) for k in ("x", "y")):
            raise InvalidInputError(
                "calibration map", 'needs lists "x" and "y", as IsotonicCalibrator.to_dict() writes them'
            )
        try:
            x, y = np.asarray(data["x"], dtype=float), np.asarray(data["y"], dtype=float)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError("calibration map", f"x and y must hold numbers ({exc})") from None
        if x.ndim != 1 or x.shape != y.shape or not x.size:
            raise InvalidInputError("calibration map", "x and y must be non-empty and of equal length")
        if not (np.isfinite(x).all() and np.isfinite(y).all()):
            raise InvalidInputError("calibration map", "x and y must be finite")
        if (np.diff(x) <= 0).any():
            raise InvalidInputError("calibration map.x", "must be strictly increasing (refit the map)")
        if (np.diff(y) < 0).any() or y[0] < 0.0 or y[-1] > 1.0:
            raise InvalidInputError(
                "calibration map.y", "must be non-decreasing within [0, 1] (refit the map)"
            )
        out = cls()
        out.x_, out.y_ = [float(v) for v in x], [float(v) for v in y]
        return out
