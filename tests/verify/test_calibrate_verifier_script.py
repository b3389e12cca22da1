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
