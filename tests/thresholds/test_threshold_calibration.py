"""Threshold picking with Wilson intervals, held-out confirmation, and the isotonic map."""

from __future__ import annotations

import numpy as np
import pytest

from verityrag.errors import InvalidInputError, NotFittedError
from verityrag.thresholds.precision import (
    IsotonicCalibrator,
    ThresholdNotReachableError,
    confirm_threshold,
    pick_threshold,
    wilson_interval,
)

pytestmark = pytest.mark.unit


def synthetic(n: int, seed: int) -> tuple[list[float], list[int]]:
    """Scores where P(supported) rises with the score: P(label=1 | s) = s."""
    rng = np.random.default_rng(seed)
    scores = rng.uniform(0, 1, n)
    labels = (rng.uniform(0, 1, n) < scores).astype(int)
    return scores.tolist(), labels.tolist()


def test_wilson_interval_known_value() -> None:
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-3)
    assert high == pytest.approx(0.9433, abs=1e-3)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_pick_threshold_lowest_threshold_meeting_target() -> None:
    scores = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4]
    labels = [1, 1, 1, 0, 1, 0]
    choice = pick_threshold(scores, labels, target_precision=0.8, min_accept=0.1)
    assert choice.threshold == 0.5  # top 5: 4/5 = 0.8
    assert choice.precision == pytest.approx(0.8)
    assert choice.accept_rate == pytest.approx(5 / 6)
    assert choice.precision_low < 0.8 < choice.precision_high


def test_pick_threshold_then_held_out_confirmation() -> None:
    fit_s, fit_y = synthetic(4000, 0)
    test_s, test_y = synthetic(4000, 1)
    choice = pick_threshold(fit_s, fit_y, target_precision=0.85, min_accept=0.1)
    # With P(1|s)=s, precision above t is (1+t)/2: the target needs t near 0.7.
    assert 0.62 <= choice.threshold <= 0.78
    check = confirm_threshold(choice, test_s, test_y)
    assert check.precision_low <= 0.85 + 0.03
    assert check.precision == pytest.approx(choice.precision, abs=0.04)
    assert check.accept_rate == pytest.approx(choice.accept_rate, abs=0.04)


def test_conservative_uses_the_lower_bound() -> None:
    s, y = synthetic(1000, 2)
    loose = pick_threshold(s, y, 0.8)
    safe = pick_threshold(s, y, 0.8, conservative=True)
    assert safe.threshold >= loose.threshold
    assert safe.precision_low >= 0.8


def test_unreachable_target_raises() -> None:
    s, y = synthetic(500, 3)
    with pytest.raises(ThresholdNotReachableError, match="accept rate"):
        pick_threshold(s, y, target_precision=0.99, min_accept=0.3)
    with pytest.raises(ThresholdNotReachableError):
        pick_threshold([0.1, 0.2], [0, 0], target_precision=0.5)


@pytest.mark.parametrize(
    ("scores", "labels", "match"),
    [
        ([0.1], [1, 0], "one label per score"),
        ([], [], "empty"),
        ([0.1], [2], "0 \\(unsupported\\)"),
    ],
)
def test_bad_input_raises(scores: list[float], labels: list[int], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        pick_threshold(scores, labels, 0.9)


def test_isotonic_map_is_monotone_and_roundtrips() -> None:
    s, y = synthetic(3000, 4)
    cal = IsotonicCalibrator().fit(s, y)
    grid = np.linspace(0, 1, 11).tolist()
    out = cal.transform(grid)
    assert out == sorted(out)
    assert out[1] == pytest.approx(0.1, abs=0.1)
    assert out[9] == pytest.approx(0.9, abs=0.1)
    assert IsotonicCalibrator.from_dict(cal.to_dict()).transform(grid) == out
    with pytest.raises(NotFittedError):
        IsotonicCalibrator().transform([0.5])


def test_isotonic_from_dict_with_unsorted_x_raises_instead_of_mapping_wrongly() -> None:
    # np.interp does not check its breakpoints: this map sent 0.9 to 0.0.
    with pytest.raises(InvalidInputError, match="strictly increasing"):
        IsotonicCalibrator.from_dict({"x": [0.9, 0.1], "y": [1.0, 0.0]})


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"x": [0.1]}, '"x" and "y"'),  # was KeyError: 'y'
        ({"x": [0.1, 0.2], "y": "0.5"}, '"x" and "y"'),
        ({"x": [0.1, "a"], "y": [0.0, 1.0]}, "numbers"),
        ({"x": [0.1, float("nan")], "y": [0.0, 1.0]}, "finite"),
        ({"x": [0.1, 0.2], "y": [0.8, 0.2]}, "non-decreasing"),
        ({"x": [0.1, 0.2], "y": [0.0, 1.5]}, "within"),
        ({"x": [], "y": []}, "non-empty"),
    ],
)
def test_isotonic_from_dict_with_a_bad_map_raises_naming_it(data: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        IsotonicCalibrator.from_dict(data)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["high", [0.5]])
def test_pick_threshold_with_a_non_numeric_score_raises_naming_scores(bad: object) -> None:
    # It was numpy's ValueError from inside np.asarray, naming no field.
    with pytest.raises(InvalidInputError, match="scores: must be numbers"):
        pick_threshold([0.1, bad], [1, 0], 0.9)  # type: ignore[list-item]
