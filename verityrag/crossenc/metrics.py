"""Threshold-free and operating-point metrics for a binary scorer (higher = positive)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt


def weighted_aurocs(
    labels: npt.NDArray[np.int_],
    scores: npt.NDArray[np.floating[Any]],
    weights: npt.NDArray[np.floating[Any]],
) -> npt.NDArray[np.float64]:
    """AUROC (ties count one half) under each row of ``weights`` (draws x examples); NaN where a class is empty.

    Rows of bootstrap counts give bootstrap AUROCs in one pass (``verityrag.eval.metrics.auroc_interval``).
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
