"""scripts/calibrate_verifier.py end to end, as a process, on labelled JSONL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "calibrate_verifier.py"

pytestmark = pytest.mark.integration


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_scores_jsonl_fits_threshold_and_confirms_on_held_out(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    data = tmp_path / "scores.jsonl"
    with data.open("w") as fh:
        for _ in range(2000):
            s = float(rng.uniform())
            fh.write(json.dumps({"score": s, "label": int(rng.uniform() < s)}) + "\n")
    out = tmp_path / "cal.json"
    done = run(str(data), "--target-precision", "0.85", "--out", str(out))
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert 0.6 < result["threshold"]["threshold"] < 0.8
    assert result["held_out"]["n"] == 1000
    assert result["held_out"]["precision"] == pytest.approx(result["threshold"]["precision"], abs=0.05)
    assert result["fitted_for"]["verifier"] == "precomputed scores"
    assert len(result["data"]["sha256"]) == 64
    assert result["isotonic"]["x"] == sorted(result["isotonic"]["x"])


def test_pairs_are_scored_with_the_named_verifier_and_versions_recorded(tmp_path: Path) -> None:
    data = tmp_path / "pairs.jsonl"
    premise = "James Watt improved the steam engine in 1769 in Glasgow."
    with data.open("w") as fh:
        for i in range(60):
            fh.write(
                json.dumps(
                    {
                        "premise": premise,
                        "hypothesis": f"Watt improved the steam engine in 1769 ({i}).",
                        "label": 1,
                    }
                )
                + "\n"
            )
            fh.write(
                json.dumps(
                    {"premise": premise, "hypothesis": f"Edison built a lamp in Paris ({i}).", "label": 0}
                )
                + "\n"
            )
    out = tmp_path / "cal.json"
    done = run(str(data), "--verifier", "lexical", "--target-precision", "0.9", "--out", str(out))
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["fitted_for"]["verifier"] == "lexical"
    assert "model_version" in result["fitted_for"]
    assert result["held_out"]["meets_target"] is True


def test_unreachable_target_exits_nonzero_with_reason(tmp_path: Path) -> None:
    data = tmp_path / "noise.jsonl"
    rng = np.random.default_rng(1)
    data.write_text(
        "".join(
            json.dumps({"score": float(rng.uniform()), "label": int(rng.uniform() < 0.3)}) + "\n"
            for _ in range(400)
        )
    )
    done = run(
        str(data), "--target-precision", "0.95", "--min-accept", "0.3", "--out", str(tmp_path / "x.json")
    )
    assert done.returncode == 1
    assert "accept rate" in done.stderr


# ------------------------------------------------------------------ bad input: one line, exit 2


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The parser's one-line error, after checking there was no traceback."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr.strip().splitlines()[-1]


def scored_rows(n: int = 40) -> str:
    return "".join(json.dumps({"score": i / n, "label": int(i >= n // 2)}) + "\n" for i in range(n))


def test_missing_data_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    line = error_line(run(str(missing), "--out", str(tmp_path / "cal.json")))
    assert f"{missing}: no such file" in line


def test_invalid_json_is_reported_with_its_line_number(tmp_path: Path) -> None:
    data = tmp_path / "broken.jsonl"
    data.write_text(scored_rows(3) + '{"score": 0.5, "label": 1\n')
    line = error_line(run(str(data), "--out", str(tmp_path / "cal.json")))
    assert f"{data}:4: not valid JSON" in line


def test_non_numeric_score_is_reported_with_its_line_number(tmp_path: Path) -> None:
    data = tmp_path / "high.jsonl"
    data.write_text(scored_rows(2) + "\n" + json.dumps({"score": "high", "label": 1}) + "\n")
    line = error_line(run(str(data), "--out", str(tmp_path / "cal.json")))
    assert f"{data}:4: 'score' must be a finite number, got \"high\"" in line


@pytest.mark.parametrize(
    ("row", "problem"), [('{"score": null, "label": 1}', "got null"), ("[0.5, 1]", "JSON object")]
)
def test_null_score_and_non_object_rows_are_reported_with_line(
    tmp_path: Path, row: str, problem: str
) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(row + "\n")
    line = error_line(run(str(data), "--out", str(tmp_path / "cal.json")))
    assert f"{data}:1: " in line
    assert problem in line


def test_unknown_verifier_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    data = tmp_path / "pairs.jsonl"
    # Two rows: one would leave the fitting part empty, itself a usage error.
    data.write_text((json.dumps({"premise": "a", "hypothesis": "b", "label": 1}) + "\n") * 2)
    done = run(str(data), "--verifier", "no-such-verifier", "--out", str(tmp_path / "cal.json"))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "unknown verifier 'no-such-verifier'" in done.stderr


def test_out_into_a_missing_folder_creates_it(tmp_path: Path) -> None:
    data = tmp_path / "scores.jsonl"
    data.write_text(scored_rows())
    out = tmp_path / "new" / "deeper" / "cal.json"
    done = run(str(data), "--target-precision", "0.8", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["data"]["rows"] == 40


def test_out_that_is_a_folder_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "scores.jsonl"
    data.write_text(scored_rows())
    line = error_line(run(str(data), "--out", str(tmp_path)))
    assert f"--out {tmp_path} is a folder" in line


@pytest.mark.parametrize(("holdout", "empty"), [("0.2", "held-out"), ("0.8", "fitting")])
def test_holdout_leaving_a_part_empty_is_a_usage_error_not_a_traceback(
    tmp_path: Path, holdout: str, empty: str
) -> None:
    # Two rows at --holdout 0.2 held none out: confirm_threshold raised from inside (a
    # traceback); at 0.8 nothing was left to fit ("error: scores: is empty").
    data = tmp_path / "scores.jsonl"
    data.write_text(scored_rows(2))
    out = tmp_path / "cal.json"
    line = error_line(run(str(data), "--holdout", holdout, "--out", str(out)))
    assert f"--holdout {holdout} of 2 rows leaves the {empty} part empty" in line
    assert not out.exists()
