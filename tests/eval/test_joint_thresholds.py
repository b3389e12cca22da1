"""The joint (sufficiency, answerability) threshold rule, ``choose_joint_thresholds``, and ``sweep_row``
with a sufficiency threshold, on made-up outcomes."""

from __future__ import annotations

import pytest

from verityrag.thresholds.learned import (
    MAX_COVERAGE_LOSS,
    SWEEP_THRESHOLDS,
    GateOutcome,
    choose_joint_thresholds,
    sweep_row,
)

pytestmark = pytest.mark.unit


def _row(kind: str, sufficiency: float, answerability: float | None, correct: bool = True) -> GateOutcome:
    return GateOutcome(kind, True, correct and kind == "answerable", answerability, 1.0, sufficiency)


def test_figures_apply_both_thresholds() -> None:
    rows = [
        _row("answerable", 0.9, 0.9),
        _row("answerable", 0.2, 0.9),  # the lexical gate refuses it
        _row("answerable", 0.9, 0.1, correct=False),  # the learned gate refuses it
        _row("held_out", 0.9, 0.05),
        _row("unanswerable_in_domain", 0.9, 0.5),
    ]
    assert sweep_row(rows, 0.0, sufficiency=0.0)["coverage"] == 1.0
    f = sweep_row(rows, 0.3, sufficiency=0.5)
    assert f["coverage"] == pytest.approx(1 / 3)
    assert f["answered_and_correct"] == pytest.approx(1 / 3)
    assert f["held_out_abstention"] == 1.0
    assert f["in_domain_unanswerable_abstention"] == 0.0
    assert sweep_row(rows, 0.6, sufficiency=0.5)["in_domain_unanswerable_abstention"] == 1.0


def test_the_rule_trades_the_lexical_gate_for_the_learned_one_when_abstention_allows() -> None:
    # Answerable questions the lexical gate doubts (0.3) but the learned gate trusts (0.95);
    # unanswerable questions that either gate stops.
    rows = [_row("answerable", 0.3, 0.95) for _ in range(3)]
    rows += [_row("answerable", 0.9, 0.95) for _ in range(7)]
    rows += [_row("unanswerable", 0.1, 0.05) for _ in range(10)]
    choice = choose_joint_thresholds(rows, reference=0.8, target=0.97)
    assert choice.met
    assert choice.coverage_floor == pytest.approx(0.7 - MAX_COVERAGE_LOSS)
    assert choice.answerability == max(SWEEP_THRESHOLDS)  # the strictest learned threshold
    # Low enough to pass the doubted answerable questions (a probability >= the threshold passes)
    # and, of the sufficiency thresholds that tie on coverage, the strictest.
    assert choice.sufficiency == 0.3
    figures = sweep_row(rows, choice.answerability, sufficiency=choice.sufficiency)
    assert (figures["coverage"], figures["correct_abstention"]) == (1.0, 1.0)


def test_coverage_may_not_fall_more_than_the_allowed_loss_under_the_gate_alone() -> None:
    # A strict learned gate would refuse 2 of 10 answerable questions: too much, so it is loosened.
    rows = [_row("answerable", 0.9, 0.95) for _ in range(8)]
    rows += [_row("answerable", 0.9, 0.35) for _ in range(2)]
    rows += [_row("unanswerable", 0.1, 0.9) for _ in range(10)]
    choice = choose_joint_thresholds(rows, reference=0.5, target=0.97)
    assert choice.met
    assert choice.answerability == 0.3
    assert sweep_row(rows, choice.answerability, choice.sufficiency)["coverage"] == 1.0


def test_no_pair_meeting_the_target_falls_back_to_the_sequential_rule() -> None:
    rows = [_row("answerable", 0.9, 0.9), _row("held_out", 0.95, 0.95)]
    choice = choose_joint_thresholds(rows, reference=0.8, target=0.97)
    assert not choice.met
    assert choice.sufficiency == 0.8  # the gate's own threshold
    assert choice.answerability == 0.9  # the sequential pick: coverage stays 1.0 up to 0.9
