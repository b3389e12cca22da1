"""Evaluation metrics: SQuAD answer matching, latency percentiles, risk-coverage, a binary scorer's AUROC.

Pure functions, no state. ``normalize_answer``, ``token_f1`` and ``exact_match``
follow the official SQuAD evaluation scripts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from verityrag.text.answers import answer_tokens, contains_gold, normalize_answer

__all__ = [
    "OPERATING_FALSE_FLAG_RATE",
    "RiskCoverage",
    "auroc",
    "auroc_interval",
    "contains_gold",
    "exact_match",
    "max_token_f1",
    "negatives_caught",
    "normalize_answer",
    "percentiles",
    "rate",
    "reliability",
    "risk_coverage_curve",
    "selective_accuracy_at_coverage",
    "threshold_for_false_flag_rate",
    "token_f1",
    "weighted_aurocs",
]


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD token-overlap F1; 1.0 if both normalise to nothing (as SQuAD 2.0)."""
    pred_tokens = answer_tokens(prediction)
    gold_tokens = answer_tokens(gold)
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = Counter(pred_tokens) & Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred_tokens)
    recall = num_same / len(gold_tokens)
    return 2.0 * precision * recall / (precision + recall)


def max_token_f1(prediction: str, golds: Iterable[str]) -> float:
    """Best ``token_f1`` over the gold answers; 0.0 when there are none."""
    return max((token_f1(prediction, gold) for gold in golds), default=0.0)


def exact_match(prediction: str, golds: Iterable[str]) -> bool:
    """True if the normalised prediction equals any normalised gold answer."""
    pred = normalize_answer(prediction)
    return any(pred == normalize_answer(gold) for gold in golds)


def _percentile_key(q: float) -> str:
    return f"p{q:g}"


def percentiles(
    values: Sequence[float] | npt.NDArray[np.floating[Any]],
    qs: Sequence[float] = (50, 95, 99),
) -> dict[str, float]:
    """Linear-interpolated percentiles keyed "p50", "p95", ...; 0.0 each if empty."""
    for q in qs:
        if not 0.0 <= q <= 100.0:
            raise ValueError(f"percentile must be in [0, 100], got {q}")
    if len(values) == 0:
        return {_percentile_key(q): 0.0 for q in qs}
    data = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(data)):
        raise ValueError("percentiles() needs finite values")
    return {_percentile_key(q): float(np.percentile(data, q)) for q in qs}


def rate(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, or 0.0 when the denominator is 0."""
    if denominator == 0:
        return 0.0
    return float(numerator) / float(denominator)


@dataclass(frozen=True)
class RiskCoverage:
    """A risk-coverage curve.

    Point ``i`` is the operating point "answer when confidence >= thresholds[i]":
    it answers the fraction ``coverage[i]`` of items, and ``risk[i]`` is the error
    rate among them. Items with equal confidence are one group, so each point
    ends a group and the curve does not depend on the input order. ``aurc`` is
    the mean, over k = 1..n, of the risk of the top-k items. Inside a tie group
    this risk is its expectation under a random order of the tied items.
    """

    coverage: tuple[float, ...]
    risk: tuple[float, ...]
    thresholds: tuple[float, ...]
    aurc: float
    n: int

    def as_dict(self) -> dict[str, object]:
        """JSON-friendly view."""
        return {
            "coverage": list(self.coverage),
            "risk": list(self.risk),
            "thresholds": list(self.thresholds),
            "aurc": self.aurc,
            "n": self.n,
        }


def risk_coverage_curve(
    confidences: Sequence[float] | npt.NDArray[np.floating[Any]],
    correct: Sequence[bool] | npt.NDArray[np.bool_],
) -> RiskCoverage:
    """Risk-coverage curve and AURC from per-item confidence and correctness."""
    if len(confidences) != len(correct):
        raise ValueError(f"confidences and correct differ in length: {len(confidences)} != {len(correct)}")
    n = len(confidences)
    if n == 0:
        return RiskCoverage(coverage=(), risk=(), thresholds=(), aurc=0.0, n=0)
    conf = np.asarray(confidences, dtype=np.float64)
    if not np.all(np.isfinite(conf)):
        raise ValueError("confidences must be finite")
    errors = 1.0 - np.asarray(correct, dtype=np.float64)

    order = np.argsort(-conf, kind="stable")
    conf_sorted = conf[order]
    errors_sorted = errors[order]
    # Group boundaries: indices where a new (lower) confidence starts.
    starts = np.flatnonzero(np.r_[True, conf_sorted[1:] != conf_sorted[:-1]])
    ends = np.r_[starts[1:], n]
    cum_errors = np.r_[0.0, np.cumsum(errors_sorted)]

    coverage: list[float] = []
    risk: list[float] = []
    thresholds: list[float] = []
    expected_cum_errors = np.empty(n, dtype=np.float64)
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        before = float(cum_errors[start])
        group_errors = float(cum_errors[end]) - before
        size = end - start
        steps = np.arange(1, size + 1, dtype=np.float64)
        expected_cum_errors[start:end] = before + steps * (group_errors / size)
        coverage.append(end / n)
        risk.append((before + group_errors) / end)
        thresholds.append(float(conf_sorted[start]))

    k = np.arange(1, n + 1, dtype=np.float64)
    aurc = float(np.mean(expected_cum_errors / k))
    return RiskCoverage(
        coverage=tuple(coverage),
        risk=tuple(risk),
        thresholds=tuple(thresholds),
        aurc=aurc,
        n=n,
    )


def selective_accuracy_at_coverage(curve: RiskCoverage, coverage: float) -> float:
    """Accuracy of the top ``ceil(coverage * n)`` items (at least one).

    Within a tie group the number of errors is interpolated linearly, which is
    its expectation under a random order of the tied items. Returns 0.0 for an
    empty curve.
    """
    if not 0.0 <= coverage <= 1.0:
        raise ValueError(f"coverage must be in [0, 1], got {coverage}")
    n = curve.n
    if n == 0:
        return 0.0
    k = min(n, max(1, math.ceil(coverage * n - 1e-9)))
    prev_count = 0
    prev_errors = 0.0
    for cov, rsk in zip(curve.coverage, curve.risk, strict=True):
        count = round(cov * n)
        errors = rsk * count
        if k <= count:
            expected = prev_errors + (k - prev_count) * (errors - prev_errors) / (count - prev_count)
            return 1.0 - expected / k
        prev_count, prev_errors = count, errors
    return 1.0 - curve.risk[-1]


def reliability(confidences: Sequence[float], right: Sequence[bool], bins: int = 10) -> dict[str, Any]:
    """How far a stated confidence is from how often it is right: equal-width bins over [0, 1]
    (a confidence of 1.0 falls in the last), each with its count, mean confidence and share
    right; ``ece``, the expected calibration error, is the count-weighted mean gap |mean
    confidence - share right| over the bins (0: every stated confidence is met exactly)."""
    if len(confidences) != len(right):
        raise ValueError(f"confidences and right differ in length: {len(confidences)} != {len(right)}")
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    conf = np.clip(np.asarray(confidences, dtype=np.float64), 0.0, 1.0)
    ok = np.asarray(right, dtype=np.float64)
    which = np.minimum((conf * bins).astype(int), bins - 1)
    rows = []
    gap = 0.0
    for b in range(bins):
        inside = which == b
        n = int(inside.sum())
        mean_conf = float(conf[inside].mean()) if n else 0.0
        share = float(ok[inside].mean()) if n else 0.0
        gap += n * abs(mean_conf - share)
        rows.append(
            {"low": b / bins, "high": (b + 1) / bins, "n": n, "confidence": mean_conf, "right": share}
        )
    return {"bins": rows, "ece": gap / len(conf) if len(conf) else 0.0, "n": len(conf)}


def auroc_interval(
    labels: Sequence[int],
    scores: Sequence[float],
    groups: Sequence[str],
    draws: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the AUROC of ``scores`` for ``labels`` (1 = positive).

    Whole ``groups`` are resampled (e.g. the responses to one RAGTruth source, or the right and
    the hallucinated answer of one HaluEval item), because examples of one group are not
    independent: resampling single examples would make the interval too narrow. Draws that
    leave one class empty are skipped.
    """
    if not len(labels) == len(scores) == len(groups):
        raise ValueError("labels, scores and groups must have one entry per example")
    if draws < 1 or not 0.0 < level < 1.0:
        raise ValueError(f"need draws >= 1 and 0 < level < 1, got {draws} and {level}")
    y = np.asarray(labels, dtype=np.int_)
    x = np.asarray(scores, dtype=np.float64)
    group_ids, example_group = np.unique(np.asarray(groups), return_inverse=True)
    rng = np.random.default_rng(seed)
    found: list[npt.NDArray[np.float64]] = []
    for block in range(0, draws, 250):  # 250 draws at a time bounds the (draws x examples) matrix
        n = min(250, draws - block)
        picks = rng.integers(0, len(group_ids), size=(n, len(group_ids)))
        counts = np.stack([np.bincount(row, minlength=len(group_ids)) for row in picks]).astype(np.float64)
        found.append(weighted_aurocs(y, x, counts[:, example_group]))
    values = np.concatenate(found)
    values = values[np.isfinite(values)]
    if values.size == 0:
        raise ValueError("every bootstrap draw left one class empty: too few groups of one class")
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


# ------------------------------------------------ a binary scorer (higher = positive): threshold-free and at an operating point


def weighted_aurocs(
    labels: npt.NDArray[np.int_],
    scores: npt.NDArray[np.floating[Any]],
    weights: npt.NDArray[np.floating[Any]],
) -> npt.NDArray[np.float64]:
    """AUROC (ties count one half) under each row of ``weights`` (draws x examples); NaN where a class is empty.

    Rows of bootstrap counts give bootstrap AUROCs in one pass (:func:`auroc_interval`).
    """
    order = np.argsort(scores, kind="stable")
    starts = np.unique(scores[order], return_index=True)[1]  # first index of each run of equal scores
    w = weights[:, order]
    pos = np.add.reduceat(w * labels[order], starts, axis=1)
    neg = np.add.reduceat(w * (1 - labels[order]), starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray((pos * (below + 0.5 * neg)).sum(axis=1) / (pos.sum(axis=1) * neg.sum(axis=1)))


def auroc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve (Mann-Whitney U, ties count one half); labels are 0/1."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int_)
    if y.sum() == 0 or y.sum() == len(y):
        raise ValueError("auroc needs both classes")
    return float(weighted_aurocs(y, s, np.ones((1, len(s))))[0])


#: The operating point every cross-encoder threshold is fitted at: at most this share of the
#: positives (answerable questions, supported answers, right answers) flagged wrongly, the
#: "<= 10% answerable wrongly flagged" of the cross-encoders issue.
OPERATING_FALSE_FLAG_RATE = 0.10


def threshold_for_false_flag_rate(positive_scores: Sequence[float], rate: float) -> float:
    """Largest threshold t with at most ``rate`` of the positives below t (flagged wrongly)."""
    s = np.sort(np.asarray(positive_scores, dtype=np.float64))
    k = int(np.floor(rate * len(s)))  # how many positives may fall below t
    return float(s[k]) if k < len(s) else float(s[-1]) + 1e-9


def negatives_caught(negative_scores: Sequence[float], threshold: float) -> float:
    """Share of negatives scored below ``threshold`` (caught)."""
    s = np.asarray(negative_scores, dtype=np.float64)
    return float((s < threshold).mean()) if len(s) else float("nan")
