"""Detector metrics of the RAGTruth runner: the F1-best threshold on the fitting half, figures on the report half.

Positive class = unsupported; a detector score is ``1 - P(supported)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from verityrag.eval.metrics import auroc_interval


def _binary_metrics(flag: np.ndarray, y: np.ndarray) -> dict[str, float]:
    tp = int((flag & (y == 1)).sum())
    fp = int((flag & (y == 0)).sum())
    fn = int((~flag & (y == 1)).sum())
    tn = int((~flag & (y == 0)).sum())
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    specificity = tn / (tn + fp) if tn + fp else 0.0
    return {
        "f1": f1,
        "precision": precision,
        "recall": recall,
        "balanced_accuracy": (recall + specificity) / 2,
    }


def best_f1_threshold(detector: Sequence[float] | np.ndarray, unsupported: Sequence[int]) -> float:
    """The detector threshold (flag when score >= t) with the best F1 for the unsupported class.

    The cut is placed midway between the best score and the next lower one, so it does not
    sit on a fitting example.
    """
    d, y = np.asarray(detector, dtype=float), np.asarray(unsupported)
    values = np.unique(d)
    best_i, best_f1 = len(values) - 1, -1.0
    for i, t in enumerate(values):
        f1 = _binary_metrics(d >= t, y)["f1"]
        if f1 > best_f1:
            best_i, best_f1 = i, f1
    if best_i == 0:
        return float(values[0])
    return float((values[best_i] + values[best_i - 1]) / 2)


def evaluate_scores(
    fit_support: Sequence[float],
    fit_labels: Sequence[int],
    test_support: Sequence[float],
    test_labels: Sequence[int],
    test_groups: Sequence[str] | None = None,
) -> dict[str, float]:
    """Threshold from the fitting half, figures on the report half (positive = unsupported).

    With ``test_groups`` (the report half's sources or items) the AUROC also gets its 95%
    bootstrap interval over those groups (``auroc_low``, ``auroc_high``).
    """
    from sklearn.metrics import roc_auc_score

    fit_d = 1.0 - np.asarray(fit_support, dtype=float)
    test_d = 1.0 - np.asarray(test_support, dtype=float)
    y = np.asarray(test_labels)
    threshold = best_f1_threshold(fit_d, fit_labels)
    metrics = _binary_metrics(test_d >= threshold, y)
    interval: dict[str, float] = {}
    if test_groups is not None:
        low, high = auroc_interval(test_labels, test_d.tolist(), test_groups)
        interval = {"auroc_low": low, "auroc_high": high}
    return {
        "auroc": float(roc_auc_score(y, test_d)),
        **interval,
        **metrics,
        "threshold_p_supported": float(1.0 - threshold),
    }
