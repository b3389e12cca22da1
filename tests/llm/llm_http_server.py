"""A real HTTP server, started per test, that answers with a scripted list of responses.

A helper module with a unique name (not conftest.py: tests/conftest.py owns that module name)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict -> JSON; str/bytes sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # before the status line
    head_trickle_s: float = 0.0  # between pieces of the head: the status line in two, then each header line
    trickle_s: float = 0.0  # between body bytes (a server that never quite finishes)
    stall_after: int | None = None  # send this many body bytes, then stall for stall_s
    stall_s: float = 0.0


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ScriptedServer:
    """Answers each POST with the next scripted ``Reply`` (the last one repeats)."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.seen: list[Seen] = []
        script = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                script.seen.append(
                    Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw))
                )
                index = min(len(script.seen) - 1, len(script.replies) - 1)
                reply = script.replies[index]
                time.sleep(reply.delay_s)
                body = reply.body
                data = (
                    body
                    if isinstance(body, bytes)
                    else (body if isinstance(body, str) else json.dumps(body)).encode()
                )
                headers = {
                    **reply.headers,
                    "content-type": "application/json",
                    "content-length": str(len(data)),
                }
                try:
                    if reply.head_trickle_s:
                        self._send_head_slowly(reply, headers)
                    else:
                        self.send_response(reply.status)
                        for k, v in headers.items():
                            self.send_header(k, v)
                        self.end_headers()
                    if reply.stall_after is not None:
                        self.wfile.write(data[: reply.stall_after])
                        self.wfile.flush()
                        time.sleep(reply.stall_s)
                        self.wfile.write(data[reply.stall_after :])
                    elif reply.trickle_s:
                        for byte in data:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            time.sleep(reply.trickle_s)
                    else:
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def _send_head_slowly(self, reply: Reply, headers: dict[str, str]) -> None:
                # Each piece comes well within a read timeout; the head as a whole does not.
                status = f"{self.protocol_version} {reply.status} {self.responses[reply.status][0]}\r\n"
                fillers = [f"x-filler-{i}: {'y' * 16}\r\n" for i in range(8)]
                pieces = [status[:6], status[6:], *fillers, *(f"{k}: {v}\r\n" for k, v in headers.items())]
                for piece in [*pieces, "\r\n"]:
                    time.sleep(reply.head_trickle_s)
                    self.wfile.write(piece.encode())
                    self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def script(self, *replies: Reply) -> ScriptedServer:
        self.replies = list(replies)
        return self

    def __enter__(self) -> ScriptedServer:
        """``with ScriptedServer() as srv:`` serves in a thread for the block, then shuts down."""
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """Import this fixture into a test module: ``from llm_http_server import server``."""
    with ScriptedServer() as srv:
        yield srv
