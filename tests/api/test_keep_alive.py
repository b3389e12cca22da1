"""The API server that ``verityrag.serve`` starts keeps an idle connection open longer than client pools do.

With uvicorn's default (5 s, the same as httpx's pool expiry) a client that reuses a
connection after ~5 s idle can send its request just as the server closes it, and gets a
transport error (measured in the former diary, git show 147e66a:ROADMAP.md, session 12). This test reuses one raw connection after
6 s idle, which fails deterministically against a server that closes at 5 s.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from verityrag.serve import API_KEEP_ALIVE_S, Service, api_command, free_port, wait_healthy

pytestmark = pytest.mark.integration  # a real API server in a child process

HOST = "127.0.0.1"
CLIENT_POOL_EXPIRY_S = httpx.Limits().keepalive_expiry  # httpx's default: 5 s
IDLE_S = 6.0
REQUEST = f"GET /health HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode()


def _read_response(conn: socket.socket) -> bytes:
    """One whole response (headers + Content-Length body); b'' if the server closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = conn.recv(4096)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


@pytest.mark.timeout(90)
def test_idle_connection_is_still_served_after_the_client_pool_expiry(
    tmp_path: Path, child_env: dict[str, str]
) -> None:
    assert CLIENT_POOL_EXPIRY_S is not None
    assert API_KEEP_ALIVE_S > IDLE_S > CLIENT_POOL_EXPIRY_S
    port = free_port(HOST)
    env = {**child_env, "VERITYRAG_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen([*api_command(HOST, port), "--log-level", "warning"], env=env)
    try:
        wait_healthy(Service("the API server", f"http://{HOST}:{port}", "/health", proc), 60)
        with socket.create_connection((HOST, port), timeout=10) as conn:
            conn.sendall(REQUEST)
            assert _read_response(conn).startswith(b"HTTP/1.1 200")
            time.sleep(IDLE_S)
            try:
                conn.sendall(REQUEST)
                second = _read_response(conn)
            except ConnectionError as exc:  # reset: the server closed the idle connection
                second = repr(exc).encode()
            assert second.startswith(b"HTTP/1.1 200"), f"connection not kept for {IDLE_S} s: {second[:80]!r}"
    finally:
        proc.terminate()
        proc.wait(15)
