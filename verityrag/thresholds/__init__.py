"""Choosing thresholds: the learned checks' on labelled questions (:mod:`verityrag.thresholds.learned`)
and a verifier's for a stated precision (:mod:`verityrag.thresholds.precision`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.thresholds.learned import ThresholdFit as ThresholdFit
    from verityrag.thresholds.learned import fit_thresholds as fit_thresholds
    from verityrag.thresholds.precision import IsotonicCalibrator as IsotonicCalibrator
    from verityrag.thresholds.precision import confirm_threshold as confirm_threshold
    from verityrag.thresholds.precision import pick_threshold as pick_threshold
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.thresholds.learned": ("ThresholdFit", "fit_thresholds"),
            "verityrag.thresholds.precision": ("IsotonicCalibrator", "confirm_threshold", "pick_threshold"),
        },
    )

__all__ = [
    "IsotonicCalibrator",
    "ThresholdFit",
    "confirm_threshold",
    "fit_thresholds",
    "pick_threshold",
]
