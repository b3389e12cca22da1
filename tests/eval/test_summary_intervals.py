"""The eval summary's 95% intervals, and how the headline rows print them."""

from __future__ import annotations

import pytest

from verityrag.eval.report import headline_rows
from verityrag.eval.runner import QuestionOutcome, summarise
from verityrag.thresholds.precision import wilson_interval

pytestmark = pytest.mark.unit


def _outcome(i: int, kind: str, answered: bool, correct: bool = False) -> QuestionOutcome:
    return QuestionOutcome(
        id=f"{kind}-{i}",
        kind=kind,
        answerable=kind == "answerable",
        answered=answered,
        correct=correct,
        f1=1.0 if correct else 0.0,
        confidence=0.9 if answered else 0.1,
        abstain_reason=None if answered else "sufficiency",
        latency_ms=1.0,
        stage_ms={"retrieve": 0.5},
        answer="a" if answered else None,
        gold_rank=1 if kind == "answerable" else None,
    )


def _outcomes() -> list[QuestionOutcome]:
    # 40 answerable: 30 answered (24 right), 10 abstained; 20 held out: 19 abstained.
    answerable = [_outcome(i, "answerable", answered=i < 30, correct=i < 24) for i in range(40)]
    held_out = [_outcome(i, "held_out", answered=i == 0) for i in range(20)]
    return answerable + held_out


def test_summary_intervals_are_wilson_intervals_of_the_counts() -> None:
    m = summarise(_outcomes())
    ci = m["intervals_95"]
    assert m["coverage"] == 0.75
    assert ci["coverage"] == pytest.approx(wilson_interval(30, 40))
    assert ci["answered_and_correct"] == pytest.approx(wilson_interval(24, 40))
    assert ci["accuracy_of_answered"] == pytest.approx(wilson_interval(24, 30))
    assert ci["correct_abstention"]["held_out"] == pytest.approx(wilson_interval(19, 20))
    low, high = ci["coverage"]
    assert low < 0.75 < high


def test_headline_rows_print_the_interval_and_tolerate_old_reports() -> None:
    m = summarise(_outcomes())
    rows = dict(headline_rows({"metrics": m}))
    low, high = wilson_interval(30, 40)
    assert rows["coverage (answered share of answerable)"] == f"75.0% ({100 * low:.1f}-{100 * high:.1f})"
    assert rows["correct abstention: held out"].startswith("95.0% (")
    del m["intervals_95"]
    assert dict(headline_rows({"metrics": m}))["coverage (answered share of answerable)"] == "75.0%"


def test_accuracy_of_all_answers_counts_answers_to_unanswerable_questions_as_wrong() -> None:
    # "accuracy of answered" is over answerable questions only (24 / 30 here); the one answer to a
    # held-out question is wrong too, and a reader of "accuracy" expects it counted.
    m = summarise(_outcomes())
    assert m["accuracy_of_answered"] == pytest.approx(24 / 30)
    assert m["accuracy_of_all_answers"] == pytest.approx(24 / 31)
    assert m["intervals_95"]["accuracy_of_all_answers"] == pytest.approx(wilson_interval(24, 31))
    rows = dict(headline_rows({"metrics": m}))
    assert rows["accuracy of answered (answerable questions)"].startswith("80.0% (")
    assert rows["accuracy of all answers (to any question; one to an unanswerable is wrong)"].startswith(
        "77.4% ("
    )
    del m["accuracy_of_all_answers"]  # a report from before it existed still renders
    assert "accuracy of all answers" not in " ".join(dict(headline_rows({"metrics": m})))
