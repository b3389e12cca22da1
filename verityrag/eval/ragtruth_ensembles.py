"""Scored runs of the RAGTruth runner and the runs built from several of them.

A :class:`ScoredRun` is one verifier's scores on the fitting and report halves; the
ensembles (isotonic-calibrated min / mean / max, a stacked logistic regression), the
cross-fitted ``folds:`` run and the choice of the best members combine such runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from verityrag.thresholds.precision import IsotonicCalibrator
from verityrag.verify.ensemble import AGGREGATIONS, aggregate


@dataclass
class ScoredRun:
    name: str
    fit: list[float]
    test: list[float]
    ms_per_pair: float
    note: str = ""
    #: Fitting-half examples whose scores may fit a threshold (None: all). A model trained on
    #: part of the fitting half must not pick its threshold on what it was trained on.
    fit_keep: list[bool] | None = None


def ensemble_runs(
    runs: Sequence[ScoredRun], fit_labels: Sequence[int], prefix: str = "ens"
) -> list[ScoredRun]:
    """min / mean / max of the members' isotonic-calibrated scores (maps fitted on the fitting half)."""
    if len(runs) < 2:
        return []
    supported = [1 - y for y in fit_labels]
    calibrated = []
    for run in runs:
        cal = IsotonicCalibrator().fit(run.fit, supported)
        calibrated.append((cal.transform(run.fit), cal.transform(run.test)))
    members = "+".join(r.name for r in runs)
    out = []
    for how in AGGREGATIONS:
        fit = [aggregate([c[0][i] for c in calibrated], how) for i in range(len(supported))]  # type: ignore[arg-type]
        test = [aggregate([c[1][i] for c in calibrated], how) for i in range(len(runs[0].test))]  # type: ignore[arg-type]
        out.append(
            ScoredRun(
                f"{prefix}-{how}",
                fit,
                test,
                sum(r.ms_per_pair for r in runs),
                f"isotonic-calibrated {members}",
            )
        )
    return out


def stacked_run(runs: Sequence[ScoredRun], fit_labels: Sequence[int]) -> ScoredRun | None:
    """``ens-lr``: a logistic regression over every member's scores, fitted on the fitting half.

    Its fitting-half scores are 5-fold out-of-fold, so the threshold chosen on them is
    not chosen on scores the model was fitted to.
    """
    from verityrag.verify.ensemble import StackedScorer

    if len(runs) < 2:
        return None
    supported = [1 - y for y in fit_labels]
    stack = StackedScorer([_Named(r.name) for r in runs]).fit_scores([r.fit for r in runs], supported)
    weights = ", ".join(f"{k} {v:+.2f}" for k, v in stack.coefficients().items())
    return ScoredRun(
        "ens-lr",
        stack.out_of_fold([r.fit for r in runs], supported),
        stack.combine([r.test for r in runs]),
        sum(r.ms_per_pair for r in runs),
        f"logistic regression on the logit scores, fitted on the fitting half (threshold from 5-fold "
        f"out-of-fold scores); weights: {weights}",
    )


@dataclass(frozen=True)
class _Named:
    """A member of a stack fitted from precomputed scores: only its name is needed."""

    name: str

    def __repr__(self) -> str:
        return self.name

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        raise NotImplementedError("scores of this member were precomputed")


def cross_fitted_run(runs: Sequence[ScoredRun]) -> ScoredRun | None:
    """``folds``: models each trained on part of the fitting half, used as one cross-fitted verifier.

    A fitting-half example is scored by the mean of the members that were *not* trained on
    it (its out-of-fold score), a report-half example by the mean of all members. When the
    members' held-out parts cover the whole fitting half, its threshold is fitted on every
    fitting-half example and the run can join the ensembles like any untrained verifier.
    """
    adapted = [r for r in runs if r.fit_keep is not None]
    if len(adapted) < 2:
        return None
    fit, keep = [], []
    for i in range(len(adapted[0].fit)):
        held_out = [r.fit[i] for r in adapted if r.fit_keep is not None and r.fit_keep[i]]
        keep.append(bool(held_out))
        fit.append(float(np.mean(held_out)) if held_out else 0.0)
    test = np.mean([r.test for r in adapted], axis=0).tolist()
    names = "+".join(r.name.rsplit("/", 1)[-1] for r in adapted)
    return ScoredRun(
        f"folds:{names}",
        fit,
        test,
        sum(r.ms_per_pair for r in adapted),
        f"mean of {len(adapted)} models trained on parts of the fitting half; each fitting-half response "
        f"scored by the members not trained on it ({sum(keep)} of {len(keep)} covered), the report half by all",
        None if all(keep) else keep,
    )


def top_members(runs: Sequence[ScoredRun], fit_labels: Sequence[int], k: int = 2) -> list[ScoredRun]:
    """The ``k`` runs with the best AUROC on the *fitting* half (never the report half)."""
    from sklearn.metrics import roc_auc_score

    y = [1 - v for v in fit_labels]
    return sorted(runs, key=lambda r: -float(roc_auc_score(y, r.fit)))[:k]
