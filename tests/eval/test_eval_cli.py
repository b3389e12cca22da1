"""End to end: ``python -m verityrag.eval`` on a small slice writes a complete, consistent report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verityrag.eval.__main__ import main


@pytest.fixture(scope="module")
def report_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval")
    code = main(["--max-test-questions", "45", "--no-progress", "--out", str(out / "eval_report.json")])
    assert code == 0
    return out


@pytest.fixture(scope="module")
def report(report_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((report_dir / "eval_report.json").read_text())
    return data


def _in_unit_interval(x: float) -> bool:
    return 0.0 <= x <= 1.0


@pytest.mark.integration
def test_eval_report_small_slice_has_schema_and_partial_flag(report: dict[str, Any]) -> None:
    for key in (
        "config",
        "versions",
        "seed",
        "corpus",
        "calibration",
        "test",
        "metrics",
        "outcomes",
        "plots",
    ):
        assert key in report
    assert report["partial_sample"] is True
    assert report["seed"] == 13
    assert report["corpus"]["documents"] == 605
    assert report["corpus"]["chunks"] > report["corpus"]["documents"]


@pytest.mark.integration
def test_eval_report_counts_add_up(report: dict[str, Any]) -> None:
    outcomes = report["outcomes"]
    by_kind = report["test"]["by_kind"]
    assert sum(by_kind.values()) == report["test"]["questions"] == len(outcomes)
    assert set(by_kind) == {"answerable", "held_out", "unanswerable_in_domain"}
    abstained = [o for o in outcomes if not o["answered"]]
    reasons = report["metrics"]["abstain_reasons"]
    assert sum(sum(c.values()) for c in reasons.values()) == len(abstained)
    answerable = [o for o in outcomes if o["kind"] == "answerable"]
    coverage = sum(o["answered"] for o in answerable) / len(answerable)
    assert report["metrics"]["coverage"] == pytest.approx(coverage)
    assert all(not o["correct"] for o in outcomes if o["kind"] != "answerable")
    assert all(o["answered"] for o in outcomes if o["correct"])


@pytest.mark.integration
def test_eval_report_every_figure_in_range(report: dict[str, Any]) -> None:
    m = report["metrics"]
    for key in ("coverage", "answered_and_correct", "accuracy_of_answered", "f1_answerable", "f1_answered"):
        assert _in_unit_interval(m[key]), key
    assert m["answered_and_correct"] <= m["coverage"]
    assert all(_in_unit_interval(v) for v in m["correct_abstention"].values())
    assert all(_in_unit_interval(v) for v in m["aurc"].values())
    for curve in m["risk_coverage"].values():
        assert all(_in_unit_interval(v) for v in curve["coverage"] + curve["risk"])
    lat = m["latency_ms"]["per_question"]
    assert 0 < lat["p50"] <= lat["p95"] <= lat["p99"]
    assert "retrieve" in m["latency_ms"]["per_stage"]


@pytest.mark.integration
def test_eval_report_intervals_bracket_their_rates(report: dict[str, Any]) -> None:
    m = report["metrics"]
    ci = m["intervals_95"]
    for key in ("coverage", "answered_and_correct", "accuracy_of_answered"):
        low, high = ci[key]
        assert 0.0 <= low <= m[key] <= high <= 1.0, key
        assert high - low > 0.05, key  # a 45-question slice cannot pin a rate to 5 points
    assert set(ci["correct_abstention"]) == set(m["correct_abstention"])
    for kind, (low, high) in ci["correct_abstention"].items():
        assert low <= m["correct_abstention"][kind] <= high, kind


@pytest.mark.integration
def test_eval_writes_markdown_and_plots(report_dir: Path, report: dict[str, Any]) -> None:
    md = (report_dir / "eval_report.md").read_text()
    assert "coverage" in md
    assert "partial sample" in md
    assert len(report["plots"]) == 3
    for rel in report["plots"].values():
        png = report_dir / rel
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.integration
def test_eval_plots_default_to_a_folder_beside_the_report_named_after_it(
    report_dir: Path, report: dict[str, Any]
) -> None:
    assert sorted(report["plots"].values()) == [
        "eval_report_plots/confidence_by_kind.png",
        "eval_report_plots/latency_by_stage.png",
        "eval_report_plots/risk_coverage.png",
    ]
    assert not (report_dir / "docs").exists()


@pytest.mark.integration
def test_eval_external_questions_file_is_evaluated_on_same_corpus(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    rows = [
        {
            "id": "a",
            "question": "What BBC radio station will carry the game in the United Kingdom?",
            "answers": ["BBC Radio 5 Live"],
        },
        {"id": "b", "question": "What is the airspeed velocity of an unladen swallow?", "answers": []},
    ]
    questions.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "r.json"
    assert main(["--questions", str(questions), "--no-progress", "--no-plots", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["test"]["by_kind"] == {"answerable": 1, "unanswerable": 1}
    assert data["config"]["questions_file"].endswith("q.jsonl")


# --guard / --answerability without their models: tests/models/test_cross_encoder_eval_flags.py;
# --real-llm: tests/llm/test_llm_eval_cli.py.


@pytest.mark.unit
def test_eval_missing_questions_file_reports_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["--questions", str(tmp_path / "nope.jsonl"), "--no-progress", "--out", str(tmp_path / "r.json")]
    )
    assert code == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.unit
@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (
            b'{"id": "a", "question": "Q?", "answers": []}\n[1, 2, 3]\n',
            "q.jsonl:2: a row must be a JSON object",
        ),
        (
            b'{"id": "a", "question": "Q?", "answers": []}\n{"id": "b", "answers": []}\n',
            "q.jsonl:2: question: is missing",
        ),
        (b'{"id": "a", "question": 7, "answers": []}\n', "q.jsonl:1: question: must be a string"),
        (b'{"id": "a", "question": "Q?", "answers": []}\n\xff\xfe\n', "q.jsonl:2: not UTF-8"),
        (b'{"id": "a", "question": "Q?"\n', "q.jsonl:1: not JSON"),
        (b"\n\n", "holds no questions"),
    ],
)
def test_eval_bad_questions_file_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, expected: str
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_bytes(content)
    code = main(["--questions", str(questions), "--no-progress", "--out", str(tmp_path / "r.json")])
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: questions: ")
    assert expected in err


@pytest.mark.unit
def test_eval_questions_path_that_is_a_folder_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--questions", str(tmp_path), "--no-progress", "--out", str(tmp_path / "r.json")]) == 2
    assert "is not a file" in capsys.readouterr().err


@pytest.mark.unit
@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--verifier", "lexical"], "--verifier only applies with --ragtruth"),
        (["--ragtruth", "--questions", "q.jsonl"], "--ragtruth does not take --questions"),
        (["--ragtruth", "--max-test-questions", "5", "--guard"], "--max-test-questions, --guard"),
        (["--out", "."], "is a folder"),
    ],
)
def test_eval_options_that_do_not_fit_stop_before_the_run(
    capsys: pytest.CaptureFixture[str], argv: list[str], expected: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    assert expected in capsys.readouterr().err


@pytest.mark.unit
def test_eval_out_folder_is_created_before_the_run(tmp_path: Path) -> None:
    # A missing parent folder of --out is made up front (it used to fail after the whole run).
    out = tmp_path / "new" / "deeper" / "r.json"
    questions = tmp_path / "q.jsonl"
    questions.write_text("")
    assert main(["--questions", str(questions), "--no-progress", "--out", str(out)]) == 2  # no questions
    assert out.parent.is_dir()


@pytest.mark.unit
def test_eval_default_plots_dir_is_made_beside_out_before_the_run(tmp_path: Path) -> None:
    # Without --plots-dir the plots go beside --out, named after it (not into <out's folder>/docs/eval).
    questions = tmp_path / "q.jsonl"
    questions.write_text("")
    assert main(["--questions", str(questions), "--no-progress", "--out", str(tmp_path / "x.json")]) == 2
    assert (tmp_path / "x_plots").is_dir()
    assert not (tmp_path / "docs").exists()


@pytest.mark.unit
def test_eval_named_ragtruth_verifier_that_cannot_load_fails_before_scoring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no_model"
    code = main(
        ["--ragtruth", "--verifier", f"nli:{missing}", "--no-progress", "--out", str(tmp_path / "r.json")]
    )
    assert code == 2
    assert str(missing) in capsys.readouterr().err
    assert not (tmp_path / "r.json").exists()


@pytest.mark.unit
def test_eval_pipeline_ignores_the_users_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A user's VERITYRAG_DATA_DIR would restore their documents into the eval's index (moving
    # every figure) and store the eval corpus in it: the eval runs in memory.
    from verityrag.eval.runner import EvalOptions, build_pipeline

    monkeypatch.setenv("VERITYRAG_DATA_DIR", str(tmp_path / "store"))
    pipeline = build_pipeline(EvalOptions())
    assert pipeline.store is None
    assert pipeline.data_dir is None
    assert not (tmp_path / "store").exists()
