"""Start the real API server (``uvicorn verityrag.api:app``) on loopback for a script, and stop it.

Shared by concurrent_load_check.py, bench_api.py and run_schemathesis.py. It binds
with ``--host/--port``, not ``--fd``: with ``--fd`` uvicorn treats the socket as
non-TCP, TCP_NODELAY is never set, and every response waits ~40 ms (Nagle with
delayed ACK; measured: /health 44 ms vs 0.8 ms).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from verityrag.serve import API_KEEP_ALIVE_S, Service, api_command, free_port, wait_healthy

HOST = "127.0.0.1"


def _sigterm_as_ctrl_c(signum: int, frame: FrameType | None) -> None:
    """SIGTERM does what Ctrl-C does: asyncio.run's SIGINT handler cancels its task, else KeyboardInterrupt."""
    handler = signal.getsignal(signal.SIGINT)
    if not callable(handler):
        raise KeyboardInterrupt
    handler(signal.SIGINT, frame)


@contextmanager
def running_api_server(
    data_dir: Path, api_key: str, startup_s: float = 60.0, keep_alive_s: int = API_KEEP_ALIVE_S
) -> Iterator[str]:
    """Yields the server's base URL; the server persists in ``data_dir`` and guards writes with ``api_key``."""
    port = free_port(HOST)
    url = f"http://{HOST}:{port}"
    env = {**os.environ, "VERITYRAG_DATA_DIR": str(data_dir), "VERITYRAG_API_KEY": api_key}
    # A plain ``kill`` (SIGTERM) of the script ended it at once, skipping the finally below: the
    # server kept running, and the caller's temporary data dir stayed. Taken as Ctrl-C, both go.
    on_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _sigterm_as_ctrl_c) if on_main_thread else None
    proc = subprocess.Popen([*api_command(HOST, port, keep_alive_s), "--log-level", "warning"], env=env)
    try:
        wait_healthy(Service("the API server", url, "/health", proc), startup_s)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
        if on_main_thread:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":  # it used to exit 0 in silence, even for --help
    sys.exit(
        f"{Path(__file__).name}: {(__doc__ or '').splitlines()[0]}\n"
        "Not a command: concurrent_load_check.py, bench_api.py, keepalive_race_check.py and "
        "run_schemathesis.py import it. To serve the API: python -m verityrag.serve "
        "(or uvicorn verityrag.api:app)."
    )
