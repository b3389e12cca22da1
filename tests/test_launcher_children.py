"""The launcher's parts end with it: a ``kill -9`` of ``python -m verityrag.serve`` once left the
API and the app running, holding their ports, so the next ``make run`` could not start."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's"),
]

REPO = Path(__file__).resolve().parents[1]
# A launcher in miniature: one part started as the launcher starts the API and the app, its pid
# printed, then waiting as the launcher does while they serve.
PARENT = """
import sys, time
from verityrag.serve.launcher import start_child
child = start_child([sys.executable, "-c", "import time; time.sleep(120)"])
print(child.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child that died but was not reaped yet (its parent is gone: init reaps it) is not running.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"


def test_a_part_ends_when_the_launcher_is_killed_with_sigkill() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert _alive(child)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(10)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the part outlived its launcher"
