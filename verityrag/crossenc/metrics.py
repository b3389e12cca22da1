"""Threshold-free and operating-point metrics for a binary scorer (higher = positive)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def auroc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve (Mann-Whitney U with tie correction); labels are 0/1."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.int64)
    pos, neg = int(y.sum()), int(len(y) - y.sum())
    if pos == 0 or neg == 0:
        raise ValueError("auroc needs both classes")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[y == 1].sum() - pos * (pos + 1) / 2) / (pos * neg))


def threshold_for_false_flag_rate(positive_scores: Sequence[float], rate: float) -> float:
    """Largest threshold t with at most ``rate`` of the positives below t (flagged wrongly)."""
    s = np.sort(np.asarray(positive_scores, dtype=np.float64))
    k = int(np.floor(rate * len(s)))  # how many positives may fall below t
    return float(s[k]) if k < len(s) else float(s[-1]) + 1e-9


def negatives_caught(negative_scores: Sequence[float], threshold: float) -> float:
    """Share of negatives scored below ``threshold`` (caught)."""
    s = np.asarray(negative_scores, dtype=np.float64)
    return float((s < threshold).mean()) if len(s) else float("nan")
