"""Start the real API server (``uvicorn verityrag.api:app``) on loopback for a script, and stop it.

Shared by concurrent_load_check.py, bench_api.py and run_schemathesis.py. It binds
with ``--host/--port``, not ``--fd``: with ``--fd`` uvicorn treats the socket as
non-TCP, TCP_NODELAY is never set, and every response waits ~40 ms (Nagle with
delayed ACK; measured: /health 44 ms vs 0.8 ms).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

HOST = "127.0.0.1"


@contextmanager
def running_api_server(data_dir: Path, api_key: str, startup_s: float = 60.0) -> Iterator[str]:
    """Yields the server's base URL; the server persists in ``data_dir`` and guards writes with ``api_key``."""
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port = probe.getsockname()[1]
    url = f"http://{HOST}:{port}"
    env = {**os.environ, "VERITYRAG_DATA_DIR": str(data_dir), "VERITYRAG_API_KEY": api_key}
    cmd = [sys.executable, "-m", "uvicorn", "verityrag.api:app", "--host", HOST, "--port", str(port)]
    proc = subprocess.Popen([*cmd, "--log-level", "warning"], env=env)
    try:
        deadline = time.monotonic() + startup_s
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the API server did not come up")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
