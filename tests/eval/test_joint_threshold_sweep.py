"""The joint (sufficiency, answerability) threshold rule of scripts/joint_threshold_sweep.py, and
``sweep_row`` with a sufficiency threshold, on made-up outcomes."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest

from verityrag.learned_checks import GateOutcome, sweep_row

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def jt(load_script: Callable[[str], ModuleType]) -> ModuleType:
    return load_script("joint_threshold_sweep")


def _row(kind: str, sufficiency: float, answerability: float | None, correct: bool = True) -> GateOutcome:
    return GateOutcome(kind, True, correct and kind == "answerable", answerability, 1.0, sufficiency)


def test_figures_apply_both_thresholds(jt: ModuleType) -> None:
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


def test_the_rule_trades_the_lexical_gate_for_the_learned_one_when_held_out_allows(jt: ModuleType) -> None:
    # Answerable questions the lexical gate doubts (0.3) but the learned gate trusts (0.9); held-out
    # questions that either gate stops.
    rows = [_row("answerable", 0.3, 0.9) for _ in range(3)] + [_row("answerable", 0.9, 0.9) for _ in range(7)]
    rows += [_row("held_out", 0.1, 0.05) for _ in range(10)]
    (s, a), floor = jt.choose(rows, reference=0.8, target=0.97)
    assert floor == pytest.approx(0.7 - jt.MAX_COVERAGE_LOSS)
    assert a == max(jt.SWEEP_THRESHOLDS)  # the strictest learned threshold that keeps coverage
    assert sweep_row(rows, a, sufficiency=s)["coverage"] == 1.0
    assert sweep_row(rows, a, sufficiency=s)["held_out_abstention"] == 1.0


def test_no_pair_meeting_the_target_keeps_the_lexical_gate_alone(jt: ModuleType) -> None:
    rows = [_row("answerable", 0.9, 0.9), _row("held_out", 0.95, 0.95)]
    assert jt.choose(rows, reference=0.8, target=0.97)[0] == (0.8, 0.0)
