"""The run command's launcher starts the API and the Streamlit app on the bundled corpus, prints their URLs."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.integration
@pytest.mark.timeout(300)
def test_serve_check_starts_both_and_answers() -> None:
    cmd = [sys.executable, "-m", "verityrag.serve", "--check", "--api-port", "0", "--ui-port", "0"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "API:           http://127.0.0.1:" in done.stdout
    assert "Streamlit app: http://127.0.0.1:" in done.stdout
    assert "-> answered:" in done.stdout
    assert "Budapest" in done.stdout


def test_serve_rejects_bad_port() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "verityrag.serve", "--api-port", "x"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--api-port: invalid int value" in done.stderr
