"""HTTP/1.1 over a raw socket, for tests about what happens to a connection (kept, closed, stalled).

A helper module with a unique name (see sse_frames.py); the API tests import it as
``from raw_http import RawResponse, exchange, read_response``.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class RawResponse:
    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes


def connect(base_url: str, timeout: float = 10) -> socket.socket:
    parts = urlsplit(base_url)
    return socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=timeout)


def request_bytes(method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: test"]
    lines += [f"{name}: {value}" for name, value in (headers or {}).items()]
    if body or method in ("POST", "PUT"):
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def read_response(conn: socket.socket) -> RawResponse | None:
    """One whole response (its Content-Length body); None when the server closed the connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        try:
            chunk = conn.recv(65536)
        except ConnectionError:
            return None
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return RawResponse(int(status_line.split()[1]), headers, body[:length])


def exchange(conn: socket.socket, method: str, path: str, **kwargs: object) -> RawResponse | None:
    """Send one request on ``conn`` and read its response (None: the connection was closed)."""
    try:
        conn.sendall(request_bytes(method, path, **kwargs))  # type: ignore[arg-type]
    except ConnectionError:
        return None
    return read_response(conn)


def closed_by_server(conn: socket.socket, wait_s: float = 2.0) -> bool:
    """Whether the server has closed ``conn`` (a read returns end of file within ``wait_s``)."""
    conn.settimeout(wait_s)
    try:
        return conn.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionError:
        return True
