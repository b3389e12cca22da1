"""SufficiencyGate: calibrated probabilities, the stated threshold rules, errors and persistence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from verityrag.agent.sufficiency import GATE_FEATURES, THRESHOLD_RULES, GateDecision, SufficiencyGate
from verityrag.errors import InvalidInputError, NotFittedError

pytestmark = pytest.mark.unit

WIDTH = len(GATE_FEATURES)
Arrays = tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_], npt.NDArray[np.bool_]]


def _separable(n: int = 240, seed: int = 0) -> Arrays:
    """Feature 0 decides: above 0.3 the answer is correct, below -0.3 the question is unanswerable."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, WIDTH))
    correct = x[:, 0] > 0.3
    must_abstain = x[:, 0] < -0.3
    return x, correct, must_abstain


def _noisy(n: int = 240, seed: int = 2) -> Arrays:
    """Feature 0 only tends to decide; a share of the wrong answers are to unanswerable questions."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, WIDTH))
    correct = x[:, 0] + rng.normal(scale=0.3, size=n) > 0.3
    must_abstain = ~correct & (rng.random(n) < 0.6)
    return x, correct, must_abstain


@pytest.fixture(scope="module")
def separable() -> Arrays:
    return _separable()


@pytest.fixture(scope="module")
def gate(separable: Arrays) -> SufficiencyGate:
    return SufficiencyGate().fit(*separable)


@pytest.fixture(scope="module")
def noisy_gate() -> SufficiencyGate:
    return SufficiencyGate(abstention_target=0.95).fit(*_noisy())


def _grid(values: npt.ArrayLike) -> npt.NDArray[np.float64]:
    values = np.asarray(values, dtype=np.float64)
    rows = np.zeros((len(values), WIDTH))
    rows[:, 0] = values
    return rows


# ------------------------------------------------------------------ predictions


def test_fit_separable_features_positives_score_higher(gate: SufficiencyGate, separable: Arrays) -> None:
    x, correct, _ = separable
    p = gate.predict_proba(x)
    assert p.shape == (len(x),)
    assert p[correct].mean() > p[~correct].mean() + 0.8
    # Nearly every (positive, negative) pair is ordered right.
    pairs = p[correct][:, None] > p[~correct][None, :]
    assert pairs.mean() > 0.97


def test_predict_proba_probabilities_within_unit_interval(gate: SufficiencyGate) -> None:
    rng = np.random.default_rng(5)
    p = gate.predict_proba(rng.normal(scale=10.0, size=(500, WIDTH)))
    assert ((p >= 0.0) & (p <= 1.0)).all()


def test_predict_proba_rises_with_the_deciding_feature(gate: SufficiencyGate) -> None:
    p = gate.predict_proba(_grid(np.linspace(-3, 3, 61)))
    assert p[:20].max() < 0.2
    assert p[-20:].min() > 0.8
    assert np.diff(p).min() >= -0.05  # monotone up to small wiggles


def test_predict_proba_is_monotone_in_the_raw_booster_score(gate: SufficiencyGate) -> None:
    rng = np.random.default_rng(6)
    x = rng.normal(size=(300, WIDTH))
    order = np.argsort(gate.booster_.predict(x, num_threads=1), kind="stable")
    assert np.diff(gate.predict_proba(x)[order]).min() >= 0.0  # isotonic calibration


def test_decide_single_row_returns_probability_and_threshold(gate: SufficiencyGate) -> None:
    decision = gate.decide(_grid([2.5])[0].tolist())
    assert isinstance(decision, GateDecision)
    assert decision.threshold == gate.threshold_
    assert decision.probability == pytest.approx(float(gate.predict_proba(_grid([2.5]))[0]))
    assert decision.sufficient is (decision.probability >= gate.threshold_)


def test_gate_decision_sufficient_at_threshold_inclusive() -> None:
    assert GateDecision(0.5, 0.5).sufficient
    assert not GateDecision(0.49, 0.5).sufficient


def test_fit_summary_records_counts_and_rule(gate: SufficiencyGate, separable: Arrays) -> None:
    _, correct, must_abstain = separable
    summary: dict[str, Any] = dict(gate.fit_summary_)
    assert summary["examples"] == len(correct)
    assert summary["positives"] == int(correct.sum())
    assert summary["must_abstain"] == int(must_abstain.sum())
    assert summary["threshold"] == gate.threshold_
    assert summary["rule"] == "abstention_target"
    assert 0.0 <= summary["oof_brier"] < 0.1


# -------------------------------------------------------------- threshold rules


@pytest.mark.parametrize("target", [0.8, 0.9, 0.97])
def test_abstention_target_rule_meets_target_on_training_data(target: float) -> None:
    x, correct, must_abstain = _noisy()
    gate = SufficiencyGate(abstention_target=target).fit(x, correct, must_abstain)
    answered = gate.predict_proba(x) >= gate.threshold_
    assert answered[must_abstain].mean() <= 1.0 - target
    assert answered[~must_abstain & correct].mean() > 0.5  # not reached by refusing everything


def _rule_gate(rule: str, target: float = 0.97) -> SufficiencyGate:
    return SufficiencyGate(threshold_rule=rule, abstention_target=target)  # type: ignore[arg-type]


# The rule itself, on given probabilities (fit applies it to out-of-fold calibrated ones).
NEG_P = np.array([0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75, 0.85, 0.95])
POS_P = np.array([0.3, 0.5, 0.7, 0.8, 0.9, 0.99])
RULE_P = np.concatenate([NEG_P, POS_P])
RULE_CORRECT = np.concatenate([np.zeros(10, bool), np.ones(6, bool)])
RULE_NEG = ~RULE_CORRECT


@pytest.mark.parametrize(
    ("target", "expected"),
    [(0.85, 0.9), (0.75, 0.8), (0.5, 0.5), (1.0, 0.99), (0.0, 0.0)],
)
def test_abstention_target_rule_picks_lowest_threshold_meeting_target(target: float, expected: float) -> None:
    threshold = _rule_gate("abstention_target", target).choose_threshold(RULE_P, RULE_CORRECT, RULE_NEG)
    assert threshold == pytest.approx(expected)
    assert np.mean(RULE_P[RULE_NEG] >= threshold) <= 1.0 - target + 1e-12


def test_balanced_rule_maximises_mean_of_good_answers_and_abstentions() -> None:
    threshold = _rule_gate("balanced").choose_threshold(RULE_P, RULE_CORRECT, RULE_NEG)
    # >= 0.7: 4/6 good, 7/10 refused (0.683); >= 0.8: 3/6, 8/10 (0.65); >= 0.55: 4/6, 5/10.
    assert threshold == pytest.approx(0.7)


def test_abstention_target_higher_target_never_lowers_threshold() -> None:
    data = _noisy()
    thresholds = [SufficiencyGate(abstention_target=t).fit(*data).threshold_ for t in (0.5, 0.8, 0.99)]
    assert thresholds == sorted(thresholds)


def test_balanced_rule_gives_a_threshold_that_separates_classes(separable: Arrays) -> None:
    x, correct, must_abstain = separable
    gate = SufficiencyGate(threshold_rule="balanced").fit(x, correct, must_abstain)
    assert 0.0 < gate.threshold_ <= 1.0
    assert gate.fit_summary_["rule"] == "balanced"
    answered = gate.predict_proba(x) >= gate.threshold_
    assert answered[correct].mean() > 0.95
    assert (~answered[must_abstain]).mean() > 0.95


def test_fit_bad_threshold_rule_raises_listing_allowed(separable: Arrays) -> None:
    with pytest.raises(InvalidInputError, match="'median' is not one of abstention_target, balanced") as err:
        SufficiencyGate(threshold_rule="median").fit(*separable)  # type: ignore[arg-type]
    assert err.value.field == "threshold_rule"
    assert THRESHOLD_RULES == ("abstention_target", "balanced")


# ------------------------------------------------------------------------ errors


@pytest.mark.parametrize("rule", THRESHOLD_RULES)
def test_fit_without_unanswerable_questions_raises(separable: Arrays, rule: str) -> None:
    # Every threshold meets the abstention target on zero such questions: it would pick 0 and never refuse.
    x, correct, _ = separable
    with pytest.raises(InvalidInputError, match="questions the corpus cannot answer"):
        SufficiencyGate(threshold_rule=rule).fit(x, correct, np.zeros(len(x), dtype=bool))


def test_fit_single_class_labels_raises(separable: Arrays) -> None:
    x, _, must_abstain = separable
    with pytest.raises(InvalidInputError, match="both correct and incorrect"):
        SufficiencyGate().fit(x, np.ones(len(x), dtype=bool), must_abstain)
    with pytest.raises(InvalidInputError, match="both correct and incorrect"):
        SufficiencyGate().fit(x, np.zeros(len(x), dtype=bool), must_abstain)


@pytest.mark.parametrize("shape", [(20, WIDTH - 1), (20, WIDTH + 1), (20,)])
def test_fit_wrong_feature_width_raises_naming_expected_shape(shape: tuple[int, ...]) -> None:
    labels = np.arange(20) % 2 == 0
    with pytest.raises(InvalidInputError, match=rf"need shape \(n, {WIDTH}\)") as err:
        SufficiencyGate().fit(np.zeros(shape), labels, ~labels)
    assert err.value.field == "features"


def test_predict_proba_wrong_feature_width_raises_invalid_input(gate: SufficiencyGate) -> None:
    with pytest.raises(InvalidInputError, match=str(WIDTH)):
        gate.predict_proba(np.zeros((2, WIDTH - 1)))


@pytest.mark.parametrize("method", ["predict_proba", "decide", "to_dict"])
def test_unfitted_gate_raises_not_fitted_saying_how_to_fit(method: str) -> None:
    calls: dict[str, Any] = {
        "predict_proba": lambda g: g.predict_proba(np.zeros((1, WIDTH))),
        "decide": lambda g: g.decide([0.0] * WIDTH),
        "to_dict": lambda g: g.to_dict(),
    }
    with pytest.raises(NotFittedError, match=r"not fitted.*pipeline\.calibrate.*SufficiencyGate\.default"):
        calls[method](SufficiencyGate())


def test_fit_few_examples_calibrates_in_sample(caplog: pytest.LogCaptureFixture) -> None:
    x = _grid([-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0])
    correct = x[:, 0] > 2  # one correct example: too few for 2 folds
    gate = SufficiencyGate(min_child_samples=1).fit(x, correct, ~correct)
    assert "in-sample" in caplog.text
    assert ((gate.predict_proba(x) >= 0) & (gate.predict_proba(x) <= 1)).all()


@pytest.mark.parametrize(("cut", "field"), [("correct", "correct"), ("must_abstain", "must_abstain")])
def test_fit_lengths_disagree_raises_naming_field(separable: Arrays, cut: str, field: str) -> None:
    # They were an IndexError or scikit-learn's "inconsistent numbers of samples".
    x, correct, must_abstain = separable
    arrays = {"correct": correct, "must_abstain": must_abstain}
    arrays[cut] = arrays[cut][:-1]
    with pytest.raises(InvalidInputError, match=f"{len(x) - 1} .* {len(x)} examples") as err:
        SufficiencyGate().fit(x, arrays["correct"], arrays["must_abstain"])
    assert err.value.field == field


def test_fit_labels_not_binary_raises_naming_correct(separable: Arrays) -> None:
    x, correct, must_abstain = separable
    with pytest.raises(InvalidInputError, match="0/1") as err:
        SufficiencyGate().fit(x, correct.astype(int) * 2, must_abstain)
    assert err.value.field == "correct"


@pytest.mark.parametrize("target", [1.5, -0.1])
def test_fit_abstention_target_out_of_range_raises(separable: Arrays, target: float) -> None:
    # 1.5 fitted a gate whose threshold is above every probability, silently.
    with pytest.raises(InvalidInputError, match=r"within \[0, 1\]") as err:
        SufficiencyGate(abstention_target=target).fit(*separable)
    assert err.value.field == "abstention_target"


def test_fit_too_few_examples_to_split_warns_gate_refuses_everything(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # 12 questions: no tree can split (min_child_samples=10), every probability is the same, and
    # the rule refuses them all. The gate then refuses every question; it said nothing.
    x = _grid(np.linspace(-1.0, 1.0, 12))
    correct = x[:, 0] > 0.3
    must_abstain = x[:, 0] < -0.3
    gate = SufficiencyGate().fit(x, correct, must_abstain)
    assert not (gate.predict_proba(x) >= gate.threshold_).any()
    assert "answers none of the 12 calibration questions" in caplog.text
    assert "2 x min_child_samples = 20" in caplog.text


def test_fit_separable_gate_does_not_warn(separable: Arrays, caplog: pytest.LogCaptureFixture) -> None:
    SufficiencyGate().fit(*separable)
    assert "answers none" not in caplog.text


# ------------------------------------------------------------------- persistence


def test_to_dict_from_dict_round_trip_same_probabilities(noisy_gate: SufficiencyGate) -> None:
    gate = noisy_gate
    data = json.loads(json.dumps(gate.to_dict()))  # must survive JSON
    restored = SufficiencyGate.from_dict(data)
    assert restored.to_dict() == gate.to_dict()
    x = np.random.default_rng(7).normal(size=(200, WIDTH))
    np.testing.assert_allclose(restored.predict_proba(x), gate.predict_proba(x), rtol=0, atol=1e-12)
    assert restored.threshold_ == gate.threshold_
    assert restored.fit_summary_ == gate.fit_summary_
    assert restored.abstention_target == gate.abstention_target


def test_save_load_round_trip_same_probabilities(noisy_gate: SufficiencyGate, tmp_path: Path) -> None:
    gate = noisy_gate
    assert 0.0 < gate.threshold_ < 1.0
    path = tmp_path / "gate.json"
    gate.save(path)
    restored = SufficiencyGate.load(path)
    x = np.random.default_rng(8).normal(size=(200, WIDTH))
    np.testing.assert_allclose(restored.predict_proba(x), gate.predict_proba(x), rtol=0, atol=1e-12)
    assert restored.threshold_ == gate.threshold_


def test_from_dict_probabilities_go_through_the_stored_calibration(noisy_gate: SufficiencyGate) -> None:
    data = noisy_gate.to_dict()
    data["isotonic"]["y"] = [0.3] * len(data["isotonic"]["y"])  # a flat calibration map
    flat = SufficiencyGate.from_dict(data)
    x = np.random.default_rng(9).normal(size=(50, WIDTH))
    np.testing.assert_allclose(flat.predict_proba(x), 0.3)


def test_from_dict_other_features_raises_asking_to_refit(gate: SufficiencyGate) -> None:
    data = gate.to_dict()
    data["features"] = data["features"][:-1]
    with pytest.raises(InvalidInputError, match="other features; refit"):
        SufficiencyGate.from_dict(data)


def test_default_gate_loads_with_gate_features() -> None:
    default = SufficiencyGate.default()
    data = default.to_dict()
    assert data["features"] == list(GATE_FEATURES)
    assert 0.0 <= default.threshold_ <= 1.0 + 1e-9
    p = default.predict_proba(np.zeros((3, WIDTH)))
    assert ((p >= 0) & (p <= 1)).all()


# ------------------------------------------------------------------ repeated cross-validation


def test_cv_repeats_below_one_raises() -> None:
    with pytest.raises(InvalidInputError, match="cv_repeats") as err:
        SufficiencyGate(cv_repeats=0)
    assert err.value.field == "cv_repeats"


def test_oof_probabilities_calibrate_the_mean_over_repeated_splits() -> None:
    # The stated definition: out-of-fold scores averaged over cv_repeats splits (seeds
    # random_state, random_state + 1, ...), then the isotonic map fitted on that average.
    from sklearn.isotonic import IsotonicRegression
    from sklearn.model_selection import StratifiedKFold

    x, correct, must_abstain = _noisy()
    gate = SufficiencyGate(cv_repeats=3, random_state=4).fit(x, correct, must_abstain)
    y = correct.astype(np.int32)
    mean = np.zeros(len(y))
    for seed in (4, 5, 6):
        for train, test in StratifiedKFold(5, shuffle=True, random_state=seed).split(x, y):
            mean[test] += gate._train(x[train], y[train]).predict(x[test], num_threads=1) / 3
    expected = IsotonicRegression(out_of_bounds="clip", y_min=0.0, y_max=1.0).fit(mean, y).predict(mean)
    np.testing.assert_allclose(gate.oof_probabilities_, expected, atol=1e-12)


def test_saved_gate_without_cv_repeats_loads_as_one_repeat(noisy_gate: SufficiencyGate) -> None:
    data = json.loads(json.dumps(noisy_gate.to_dict()))
    del data["params"]["cv_repeats"]  # a file saved before the parameter existed
    restored = SufficiencyGate.from_dict(data)
    assert restored.cv_repeats == 1
    x = np.random.default_rng(3).normal(size=(50, WIDTH))
    np.testing.assert_allclose(restored.predict_proba(x), noisy_gate.predict_proba(x), atol=1e-12)
