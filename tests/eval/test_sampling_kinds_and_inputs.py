"""The eval's question sampling, the kinds its abstention rates are over, and inputs it refuses."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from verityrag.errors import InvalidInputError
from verityrag.eval import __main__ as cli
from verityrag.eval.report import headline_rows
from verityrag.eval.runner import QuestionOutcome, sample_splits, summarise
from verityrag.eval.sampling import stratified_sample
from verityrag.serve.bundled_corpus import DEFAULT_DATA_DIR, EvalQuestion, load_questions

pytestmark = pytest.mark.unit


def _questions(counts: dict[str, int]) -> list[EvalQuestion]:
    return [
        EvalQuestion(f"{kind}-{i}", "Q?", ("a",) if kind == "answerable" else (), kind)
        for kind, n in counts.items()
        for i in range(n)
    ]


@pytest.mark.parametrize("n", [10, 20, 40, 45, 60, 100, 549])
def test_stratified_sample_of_the_test_split_any_size_returns_exactly_n(n: int) -> None:
    # Rounding each kind's share on its own returned 11 for 10, 19 for 20, 99 for 100.
    test = load_questions(DEFAULT_DATA_DIR / "questions" / "test.jsonl")
    picked = stratified_sample(test, n, seed=13)
    assert len(picked) == n
    assert len({q.id for q in picked}) == n
    totals = Counter(q.kind for q in test)
    for kind, count in Counter(q.kind for q in picked).items():
        assert abs(count - n * totals[kind] / len(test)) < 1


def test_stratified_sample_tiny_kind_keeps_one_and_still_returns_n() -> None:
    picked = stratified_sample(_questions({"answerable": 96, "held_out": 2, "unanswerable": 2}), 10, seed=0)
    assert Counter(q.kind for q in picked) == {"answerable": 8, "held_out": 1, "unanswerable": 1}


def test_sample_splits_short_questions_file_with_sampled_calibration_is_partial() -> None:
    # --questions with 30 questions and --max-test-questions 50: the test file stays whole, but
    # the gates are fitted on 50 of 100 calibration questions. That run was reported as full.
    test = _questions({"answerable": 20, "held_out": 10})
    calibration = _questions({"answerable": 60, "held_out": 40})
    sampled_test, sampled_calibration, partial = sample_splits(test, calibration, 50, seed=13)
    assert len(sampled_test) == 30
    assert len(sampled_calibration) == 50
    assert partial is True
    assert sample_splits(test, calibration, None, seed=13)[2] is False
    assert sample_splits(test, calibration, 100, seed=13)[2] is False


def _outcome(i: int, kind: str, answerable: bool, answered: bool) -> QuestionOutcome:
    return QuestionOutcome(
        id=f"{kind}-{i}",
        kind=kind,
        answerable=answerable,
        answered=answered,
        correct=answerable and answered,
        f1=0.0,
        confidence=0.9 if answered else 0.1,
        abstain_reason=None if answered else "sufficiency",
        latency_ms=1.0,
        stage_ms={},
        answer="a" if answered else None,
        gold_rank=None,
    )


def test_summarise_external_kind_of_answerable_questions_is_not_a_correct_abstention_row() -> None:
    # An external file names its answerable kind "factoid": abstaining on those is not correct,
    # yet the table printed "correct abstention: factoid 20.0%".
    outcomes = [_outcome(i, "factoid", True, i < 8) for i in range(10)]
    outcomes += [_outcome(i, "unanswerable", False, i < 1) for i in range(10)]
    m = summarise(outcomes)
    assert m["correct_abstention"] == {"unanswerable": 0.9}
    assert set(m["intervals_95"]["correct_abstention"]) == {"unanswerable"}
    assert m["coverage"] == 0.8
    assert not any("factoid" in name for name, _ in headline_rows({"metrics": m}))


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        ({"kind": "answerable", "answers": []}, "kind 'answerable' needs at least one answer"),
        ({"kind": "held_out", "answers": ["Paris"]}, "kind 'held_out' must have none"),
        ({"kind": 5, "answers": []}, "kind: must be a string"),
    ],
)
def test_load_questions_kind_contradicting_answers_is_an_error_naming_the_line(
    tmp_path: Path, row: dict[str, Any], expected: str
) -> None:
    # Each was silently taken: an answerable kind without answers was counted nowhere, a
    # held-out question with answers was scored as answerable, a numeric kind crashed the
    # summary (sorted() over str and int) after the whole run.
    path = tmp_path / "q.jsonl"
    good = {"id": "a", "question": "Q?", "answers": ["x"], "kind": "answerable"}
    path.write_text(json.dumps(good) + "\n" + json.dumps({"id": "b", "question": "Q?", **row}) + "\n")
    with pytest.raises(InvalidInputError, match=r"q\.jsonl:2: ") as raised:
        load_questions(path)
    assert expected in str(raised.value)


def _no_run(*_: object) -> None:
    raise AssertionError("the eval ran")


def test_eval_plots_dir_that_is_a_file_stops_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The plots are written before the JSON: a file named as --plots-dir was a FileExistsError
    # traceback after the whole run, and no report was written.
    monkeypatch.setattr(cli, "run_eval", _no_run)
    taken = tmp_path / "plots"
    taken.write_text("")
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--no-progress", "--out", str(tmp_path / "r.json"), "--plots-dir", str(taken)])
    assert stopped.value.code == 2
    assert "--plots-dir" in capsys.readouterr().err


def test_eval_out_with_md_suffix_stops_before_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # eval_report.md is written at --out's name with .md: --out r.md overwrote the JSON with it.
    monkeypatch.setattr(cli, "run_eval", _no_run)
    with pytest.raises(SystemExit) as stopped:
        cli.main(["--no-progress", "--no-plots", "--out", str(tmp_path / "r.md")])
    assert stopped.value.code == 2
    assert "JSON report's path" in capsys.readouterr().err


def test_readme_eval_section_second_report_partial_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, load_script: Callable[[str], ModuleType]
) -> None:
    # The sentence under the table described the first report only: a partial second column
    # (or another seed) was published under "550 questions ... seed 13".
    module = load_script("update_readme_results")
    full = json.loads((module.ROOT / "eval_report.json").read_text())
    partial = {
        **full,
        "partial_sample": True,
        "seed": 7,
        "test": {"questions": 60, "by_kind": {"answerable": 22}},
    }
    paths = {"full": tmp_path / "a.json", "sampled": tmp_path / "b.json"}
    paths["full"].write_text(json.dumps(full))
    paths["sampled"].write_text(json.dumps(partial))
    monkeypatch.setattr(module, "REPORTS", paths)
    # The sentence that describes the runs (the reader's sweep table may follow it).
    last = next(line for line in module.eval_section().splitlines() if line.startswith("Test split"))
    assert "Test split, sampled: 60 questions (22 answerable)" in last
    assert "seed 7; thresholds chosen on the calibration split only. **Partial sample.**" in last
    assert "Test split, full: 550 questions" in last
    monkeypatch.setattr(module, "REPORTS", {"full": paths["full"], "again": paths["full"]})
    last = next(line for line in module.eval_section().splitlines() if line.startswith("Test split"))
    assert last.startswith("Test split: 550 questions")
    assert "Partial" not in last
