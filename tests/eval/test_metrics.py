"""Hand-computed checks for verityrag.eval.metrics."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from verityrag.eval.metrics import (
    RiskCoverage,
    auroc_interval,
    contains_gold,
    exact_match,
    max_token_f1,
    normalize_answer,
    percentiles,
    rate,
    risk_coverage_curve,
    selective_accuracy_at_coverage,
    token_f1,
)

pytestmark = pytest.mark.unit


# --- normalisation (cases as in the official SQuAD evaluate script) -------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("The Denver Broncos", "denver broncos"),
        ("Denver Broncos!", "denver broncos"),
        ("  the   cat  sat ", "cat sat"),
        ("A an THE apple", "apple"),
        ("theatre", "theatre"),  # articles only as whole words
        ("Saint-Denis, France.", "saintdenis france"),  # punctuation removed, not split
        ("an", ""),
        ("", ""),
        ("1,000 (approx.)", "1000 approx"),
    ],
)
def test_normalize_answer(raw: str, expected: str) -> None:
    assert normalize_answer(raw) == expected


# --- F1 and exact match ----------------------------------------------------------


def test_token_f1_identical_after_normalisation() -> None:
    assert token_f1("The Denver Broncos.", "denver broncos") == 1.0


def test_token_f1_partial_overlap() -> None:
    # pred {denver, broncos}, gold {denver, broncos, won}: P=1, R=2/3, F1=0.8
    assert token_f1("the Denver Broncos", "Denver Broncos won") == pytest.approx(0.8)
    # pred {in, 1990, paris}, gold {paris}: P=1/3, R=1, F1=0.5
    assert token_f1("in 1990 Paris", "Paris") == pytest.approx(0.5)


def test_token_f1_counts_repeated_tokens_once_per_match() -> None:
    # pred [cat, cat, dog], gold [cat, dog, dog]
    # common = cat:1 + dog:1 = 2; P=2/3, R=2/3, F1=2/3
    assert token_f1("cat cat dog", "cat dog dog") == pytest.approx(2 / 3)


def test_token_f1_no_overlap_and_empty() -> None:
    assert token_f1("Paris", "London") == 0.0
    assert token_f1("", "London") == 0.0
    assert token_f1("London", "the") == 0.0
    assert token_f1("the", "a") == 1.0  # both empty after normalisation (SQuAD 2.0)


def test_max_token_f1() -> None:
    golds = ["Denver Broncos won", "Broncos"]
    assert max_token_f1("the Denver Broncos", golds) == pytest.approx(0.8)
    assert max_token_f1("Broncos", golds) == 1.0
    assert max_token_f1("anything", []) == 0.0


def test_exact_match() -> None:
    assert exact_match("The Broncos!", ["broncos", "Denver"])
    assert not exact_match("Denver Broncos", ["Broncos"])
    assert not exact_match("Broncos", [])


# --- contains_gold -----------------------------------------------------------------


def test_contains_gold_whole_tokens_only() -> None:
    assert contains_gold("It was founded in 1990 by Smith.", ["1990"])
    assert not contains_gold("It was founded in 1990 by Smith.", ["1"])
    assert not contains_gold("The catalogue lists it.", ["cat"])


def test_contains_gold_multi_token_and_normalisation() -> None:
    pred = "In the end, the Denver Broncos won Super Bowl 50."
    assert contains_gold(pred, ["London", "Denver Broncos"])
    assert contains_gold(pred, ["super bowl 50!"])
    assert not contains_gold(pred, ["Broncos Denver"])  # order matters
    assert not contains_gold(pred, ["the"])  # normalises to nothing
    assert not contains_gold(pred, [])
    assert not contains_gold("", ["Denver"])


# --- percentiles and rate -------------------------------------------------------------


def test_percentiles_linear_interpolation() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    got = percentiles(values)
    assert set(got) == {"p50", "p95", "p99"}
    assert got["p50"] == pytest.approx(50.5)
    assert got["p95"] == pytest.approx(95.05)
    assert got["p99"] == pytest.approx(99.01)


def test_percentiles_custom_and_empty() -> None:
    assert percentiles([3.0], qs=(50, 99.9)) == {"p50": 3.0, "p99.9": 3.0}
    empty = percentiles([])
    assert empty == {"p50": 0.0, "p95": 0.0, "p99": 0.0}
    assert not any(math.isnan(v) for v in empty.values())
    assert percentiles(np.array([1.0, 3.0]), qs=(50,)) == {"p50": 2.0}


def test_percentiles_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="percentile must be in"):
        percentiles([1.0], qs=(101,))
    with pytest.raises(ValueError, match="finite"):
        percentiles([1.0, float("nan")])


def test_rate() -> None:
    assert rate(1, 4) == 0.25
    assert rate(0, 0) == 0.0
    assert rate(3, 0) == 0.0


# --- risk-coverage ---------------------------------------------------------------------


def test_risk_coverage_perfect_ranking() -> None:
    curve = risk_coverage_curve([0.9, 0.8, 0.7, 0.6], [True, True, False, False])
    assert curve.coverage == pytest.approx((0.25, 0.5, 0.75, 1.0))
    assert curve.risk == pytest.approx((0.0, 0.0, 1 / 3, 0.5))
    assert curve.thresholds == pytest.approx((0.9, 0.8, 0.7, 0.6))
    # mean of (0, 0, 1/3, 1/2) = 5/24
    assert curve.aurc == pytest.approx(5 / 24)
    assert curve.n == 4


def test_risk_coverage_worst_ranking() -> None:
    curve = risk_coverage_curve([0.9, 0.8, 0.7, 0.6], [False, False, True, True])
    assert curve.risk == pytest.approx((1.0, 1.0, 2 / 3, 0.5))
    # mean of (1, 1, 2/3, 1/2) = 19/24
    assert curve.aurc == pytest.approx(19 / 24)


def test_risk_coverage_sorts_by_confidence() -> None:
    shuffled = risk_coverage_curve([0.6, 0.9, 0.7, 0.8], [False, True, False, True])
    assert shuffled.aurc == pytest.approx(5 / 24)
    assert shuffled.thresholds == pytest.approx((0.9, 0.8, 0.7, 0.6))


def test_risk_coverage_all_tied() -> None:
    curve = risk_coverage_curve([0.5] * 4, [True, False, True, False])
    assert curve.coverage == (1.0,)
    assert curve.risk == (0.5,)
    assert curve.thresholds == (0.5,)
    assert curve.aurc == pytest.approx(0.5)  # expected risk is 1/2 at every k


def test_risk_coverage_ties_do_not_depend_on_input_order() -> None:
    # 0.9 -> correct; tie at 0.5 of one correct and one wrong.
    # k=1: 0; k=2: (0 + 1/2)/2 = 1/4; k=3: 1/3 -> AURC = (0 + 1/4 + 1/3)/3 = 7/36
    conf = [0.9, 0.5, 0.5, 0.2]
    corr = [True, True, False, False]
    # k=4: 2/4 -> AURC = (0 + 1/4 + 1/3 + 1/2)/4 = 13/48
    curves: list[RiskCoverage] = []
    for perm in itertools.permutations(range(4)):
        curves.append(risk_coverage_curve([conf[i] for i in perm], [corr[i] for i in perm]))
    for curve in curves:
        assert curve == curves[0]
    assert curves[0].aurc == pytest.approx(13 / 48)
    assert curves[0].coverage == pytest.approx((0.25, 0.75, 1.0))
    assert curves[0].risk == pytest.approx((0.0, 1 / 3, 0.5))
    three = risk_coverage_curve([0.9, 0.5, 0.5], [True, False, True])
    assert three.aurc == pytest.approx(7 / 36)


def test_risk_coverage_numpy_inputs_and_empty() -> None:
    curve = risk_coverage_curve(np.array([0.2, 0.1]), np.array([True, False]))
    assert curve.aurc == pytest.approx((0.0 + 0.5) / 2)
    empty = risk_coverage_curve([], [])
    assert empty.n == 0
    assert empty.aurc == 0.0
    assert empty.coverage == ()
    assert selective_accuracy_at_coverage(empty, 0.5) == 0.0
    assert empty.as_dict()["coverage"] == []


def test_risk_coverage_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        risk_coverage_curve([0.1, 0.2], [True])
    with pytest.raises(ValueError, match="finite"):
        risk_coverage_curve([float("nan")], [True])


def test_selective_accuracy_at_coverage() -> None:
    curve = risk_coverage_curve([0.9, 0.8, 0.7, 0.6], [True, True, False, False])
    assert selective_accuracy_at_coverage(curve, 0.5) == pytest.approx(1.0)
    assert selective_accuracy_at_coverage(curve, 0.75) == pytest.approx(2 / 3)
    assert selective_accuracy_at_coverage(curve, 0.6) == pytest.approx(2 / 3)  # top 3
    assert selective_accuracy_at_coverage(curve, 1.0) == pytest.approx(0.5)
    assert selective_accuracy_at_coverage(curve, 0.0) == pytest.approx(1.0)  # top 1
    with pytest.raises(ValueError, match="coverage must be in"):
        selective_accuracy_at_coverage(curve, 1.5)


def test_selective_accuracy_inside_a_tie_group() -> None:
    # 0.9 correct, then a tie of 1 correct + 1 wrong: top-2 expects 0.5 errors.
    curve = risk_coverage_curve([0.9, 0.5, 0.5], [True, False, True])
    assert selective_accuracy_at_coverage(curve, 2 / 3) == pytest.approx(0.75)
    assert selective_accuracy_at_coverage(curve, 1.0) == pytest.approx(2 / 3)
    # 0.3 * 10 is 3.0000000000000004 in floating point: still the top 3.
    ten = risk_coverage_curve([1.0 - i / 10 for i in range(10)], [True] * 3 + [False] * 7)
    assert selective_accuracy_at_coverage(ten, 0.3) == pytest.approx(1.0)


def test_weighted_auroc_with_unit_weights_is_sklearns_auroc_ties_included() -> None:
    from sklearn.metrics import roc_auc_score

    from verityrag.eval.metrics import auroc, weighted_aurocs

    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 300)
    scores = np.round(rng.random(300) + 0.3 * labels, 1)  # rounded: many ties
    [auc] = weighted_aurocs(labels, scores, np.ones((1, 300)))
    assert auc == pytest.approx(roc_auc_score(labels, scores))
    assert auroc(scores.tolist(), labels.tolist()) == pytest.approx(auc)  # the cross-encoder figures' AUROC
    with pytest.raises(ValueError, match="both classes"):
        auroc([0.1, 0.2], [1, 1])


def test_auroc_interval_brackets_the_estimate_and_resamples_whole_groups() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(5)
    labels = rng.integers(0, 2, 120)
    scores = rng.random(120) + 0.6 * labels
    ids = [f"g{i:03d}" for i in range(120)]
    low, high = auroc_interval(labels, scores, ids, draws=1000)
    assert low < roc_auc_score(labels, scores) < high
    assert auroc_interval(labels, scores, ids, draws=1000) == (low, high)  # seeded
    # Each example copied 5 times into its own group: resampling groups gives the same
    # interval as the originals; resampling the copies one by one would be too narrow.
    copies = np.repeat(np.arange(120), 5)
    grouped = auroc_interval(labels[copies], scores[copies], [ids[i] for i in copies], draws=1000)
    assert grouped == pytest.approx((low, high))
    naive = auroc_interval(labels[copies], scores[copies], [str(i) for i in range(600)], draws=1000)
    assert naive[1] - naive[0] < 0.6 * (high - low)


def test_auroc_interval_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="one entry per example"):
        auroc_interval([0, 1], [0.1], ["a", "b"])
    with pytest.raises(ValueError, match="draws"):
        auroc_interval([0, 1], [0.1, 0.2], ["a", "b"], draws=0)
    with pytest.raises(ValueError, match="one class empty"):
        auroc_interval([1, 1], [0.1, 0.2], ["a", "b"], draws=10)
