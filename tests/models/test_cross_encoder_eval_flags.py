"""``python -m verityrag.eval --answerability/--guard/--reader`` without a built model: a clear startup error."""

from __future__ import annotations

from pathlib import Path

import pytest

from verityrag.eval.__main__ import main
from verityrag.eval.gate_sweep import GateOutcome, choose_threshold, sweep_row


@pytest.mark.unit
@pytest.mark.parametrize(
    ("flag", "env", "command"),
    [
        ("--answerability", "VERITYRAG_ANSWER_DIR", "make models-answerability-mpnet"),
        ("--guard", "VERITYRAG_GUARD_DIR", "make models-guard"),
        ("--reader", "VERITYRAG_READER_DIR", "make models-reader"),
    ],
)
def test_eval_learned_gate_without_model_names_missing_files_and_command(
    flag: str,
    env: str,
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(env, str(tmp_path / "empty"))
    code = main([flag, "--no-progress", "--no-plots", "--out", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert "metadata.json" in err
    assert "model.int8.onnx" in err
    assert command in err
    assert not (tmp_path / "r.json").exists()


def _outcome(kind: str, score: float | None, answered: bool = True, correct: bool = True) -> GateOutcome:
    return GateOutcome(kind, answered, correct and kind == "answerable", score, 10.0)


@pytest.mark.unit
def test_sweep_row_applies_threshold_only_to_questions_that_reached_the_gate() -> None:
    outcomes = [
        _outcome("answerable", 0.9),
        _outcome("answerable", 0.2),
        _outcome("unanswerable_in_domain", 0.1),
        _outcome("held_out", None, answered=False),
    ]
    row = sweep_row(outcomes, 0.5)
    assert row["coverage"] == 0.5
    assert row["in_domain_unanswerable_abstention"] == 1.0
    assert row["correct_abstention"] == 1.0
    assert sweep_row(outcomes, 0.0)["in_domain_unanswerable_abstention"] == 0.0


@pytest.mark.unit
def test_choose_threshold_keeps_calibration_coverage_within_the_allowed_loss() -> None:
    calibration = [
        _outcome("answerable", s) for s in (0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.12)
    ]
    calibration += [_outcome("unanswerable_in_domain", 0.01)]  # never consulted by the rule
    assert choose_threshold(calibration, max_coverage_loss=0.1) == 0.5
    assert choose_threshold(calibration, max_coverage_loss=0.2) == 0.6
