"""scripts/ command lines and ``python -m verityrag.train`` recipes answer --help without a model, and
bad input with one line and exit 2."""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"

# Each test starts a Python process (the house definition of integration), none loads a model.
pytestmark = pytest.mark.integration


def run(script: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return _run([str(SCRIPTS / script), *args], env)


def run_recipe(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(["-m", "verityrag.train", name, *args], None)


def _run(args: list[str], env: dict[str, str] | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=60, check=False, env=env
    )


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    """The parser's one-line error, after checking there was no traceback."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr.strip().splitlines()[-1]


def test_guard_probe_help_exits_quickly_without_a_model() -> None:
    start = time.perf_counter()
    done = run("guard_probe.py", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: guard_probe.py")
    assert "Probe Verity-Guard with hand-written cases" in done.stdout
    assert time.perf_counter() - start < 30


def test_guard_probe_without_a_model_names_the_make_target(tmp_path: Path) -> None:
    env = {**os.environ, "VERITYRAG_GUARD_DIR": str(tmp_path / "no-guard")}
    line = error_line(run("guard_probe.py", env=env))
    assert "make models-guard" in line


def test_reader_rescore_missing_report_is_named(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    line = error_line(
        run("reader_rescore_llm.py", "--report", str(report), "--answers", str(tmp_path / "a.gz"))
    )
    assert f"{report}: no such file" in line


def test_reader_rescore_bad_answers_line_is_named(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text('{"reader": {}}\n')
    answers = tmp_path / "answers.jsonl.gz"
    with gzip.open(answers, "wt") as f:
        f.write('{"answered": false}\n{"answered": true, "question": "q"}\n')
    line = error_line(run("reader_rescore_llm.py", "--report", str(report), "--answers", str(answers)))
    assert f"{answers}:2: an answered record without answer, evidence" in line


def test_requantize_missing_folder_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "no-model"
    line = error_line(run_recipe("requantize", str(folder)))
    assert f"{folder}: no such folder" in line


def test_requantize_folder_without_files_names_them(tmp_path: Path) -> None:
    line = error_line(run_recipe("requantize", str(tmp_path)))
    assert "missing metadata.json" in line


def test_guard_ragtruth_missing_folder_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "no-guard"
    line = error_line(
        run("guard_ragtruth.py", "--folder", str(folder), "--results", str(tmp_path / "r.json"))
    )
    assert f"--folder {folder}: no such folder" in line


def test_a_recipe_runs_by_its_name() -> None:
    done = run_recipe("requantize", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m verityrag.train requantize")


def test_an_unknown_recipe_is_refused_naming_the_recipes() -> None:
    done = run_recipe("gaurd")
    assert done.returncode == 1
    assert "unknown recipe 'gaurd'" in done.stderr
    assert "guard" in done.stderr.split("choose one of", 1)[1]


@pytest.mark.timeout(120)
def test_load_check_sigterm_stops_its_api_server(tmp_path: Path) -> None:
    cmd = [sys.executable, str(SCRIPTS / "concurrent_load_check.py"), "--calls", "1000000", "--seconds", "90"]
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # where its temporary data dir goes
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    server_pid = 0
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the server is up and the traffic has started
            if line.startswith("server http"):
                break
        server_pid = int(subprocess.check_output(["pgrep", "-P", str(proc.pid)], text=True).split()[0])
        proc.terminate()  # SIGTERM to the script only, as `kill PID` sends
        proc.wait(60)
        deadline = time.monotonic() + 20
        while Path(f"/proc/{server_pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.2)  # reaped by the script, so its /proc entry goes
        assert not Path(f"/proc/{server_pid}").exists(), "the API server outlived the script"
        assert not list(tmp_path.glob("verityrag-load-*")), "the temporary data dir was left behind"
    finally:
        if proc.poll() is None:
            proc.kill()
        if server_pid and Path(f"/proc/{server_pid}").exists():
            os.kill(server_pid, signal.SIGKILL)  # do not leave it running when the test fails
