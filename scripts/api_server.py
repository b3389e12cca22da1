"""Start the real API server (``uvicorn verityrag.api:app``) on loopback for a script, and stop it.

Shared by concurrent_load_check.py, bench_api.py and run_schemathesis.py. It binds
with ``--host/--port``, not ``--fd``: with ``--fd`` uvicorn treats the socket as
non-TCP, TCP_NODELAY is never set, and every response waits ~40 ms (Nagle with
delayed ACK; measured: /health 44 ms vs 0.8 ms).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from verityrag.serve import API_KEEP_ALIVE_S, Service, api_command, free_port, wait_healthy

HOST = "127.0.0.1"


@contextmanager
def running_api_server(
    data_dir: Path, api_key: str, startup_s: float = 60.0, keep_alive_s: int = API_KEEP_ALIVE_S
) -> Iterator[str]:
    """Yields the server's base URL; the server persists in ``data_dir`` and guards writes with ``api_key``."""
    port = free_port(HOST)
    url = f"http://{HOST}:{port}"
    env = {**os.environ, "VERITYRAG_DATA_DIR": str(data_dir), "VERITYRAG_API_KEY": api_key}
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
