"""Failures that must not cost the client its connection, and uploads that must not hold one forever.

An independent test found that after a 500 the server closed the keep-alive connection without
``Connection: close`` (Starlette re-raises after its 500, and uvicorn closes a connection whose
app raised), so the client's next request on it failed in transit; and that a stalled upload was
held open 20 s and more. Each test here drives one raw connection.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from fastapi import FastAPI
from raw_http import closed_by_server, connect, exchange, read_response, request_bytes

from verityrag import ModelLoadError, Settings, VerityRAGPipeline
from verityrag.api import create_app

pytestmark = pytest.mark.integration

Serve = Callable[[FastAPI], AbstractContextManager[str]]  # the ``serve`` fixture (conftest.py)
QUERY = b'{"question": "Who improved the steam engine?"}'
JSON = {"Content-Type": "application/json"}
IDLE_S = 0.5  # the body-read timeouts of this module's server: short, so the tests are
TOTAL_S = 1.5


@pytest.fixture(scope="module")
def pipeline() -> VerityRAGPipeline:
    p = VerityRAGPipeline(data_dir=None, settings=Settings(reader=False))
    p.ingest_document("watt", "James Watt", "James Watt improved the steam engine in 1776.")
    return p


@pytest.fixture(scope="module")
def base_url(pipeline: VerityRAGPipeline, serve: Serve) -> Iterator[str]:
    app = create_app(pipeline, api_key="", body_idle_timeout_s=IDLE_S, body_total_timeout_s=TOTAL_S)
    with serve(app) as url:
        yield url


def _raise(exc: Exception) -> Callable[..., Any]:
    def broken(*args: object, **kwargs: object) -> Any:
        raise exc

    return broken


@pytest.mark.parametrize(
    ("method", "path", "attribute", "failure", "status"),
    [
        ("POST", "/query", "query", RuntimeError("boom"), 500),
        ("GET", "/stats", "stats", KeyError("documents"), 500),
        ("GET", "/documents/watt", "get_document", ZeroDivisionError(), 500),
        ("POST", "/query", "query", ModelLoadError("the reader", [("bundled", "truncated")]), 503),
    ],
)
def test_connection_is_usable_after_a_5xx(
    base_url: str,
    pipeline: VerityRAGPipeline,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    path: str,
    attribute: str,
    failure: Exception,
    status: int,
) -> None:
    monkeypatch.setattr(pipeline, attribute, _raise(failure))
    with connect(base_url) as conn:
        body = QUERY if method == "POST" else b""
        failed = exchange(conn, method, path, body=body, headers=JSON)
        assert failed is not None
        assert failed.status == status
        assert failed.headers["content-type"] == "application/json"
        assert type(failure).__name__ in failed.body.decode()
        # Either the connection stays usable or the response says it will not: here, it stays.
        assert failed.headers.get("connection", "").lower() != "close"
        after = exchange(conn, "GET", "/health")
        assert after is not None, "the server closed the connection after its error response"
        assert after.status == 200


def test_stalled_upload_is_answered_408_and_closed_after_the_idle_timeout(base_url: str) -> None:
    with connect(base_url) as conn:
        head = request_bytes("POST", "/query", body=QUERY, headers=JSON)
        conn.sendall(head[: -len(QUERY) + 5])  # the headers and 5 bytes of the body, then nothing
        started = time.monotonic()
        reply = read_response(conn)
        waited = time.monotonic() - started
        assert reply is not None
        assert reply.status == 408
        assert reply.headers["connection"] == "close"
        assert "no byte of it arrived" in reply.body.decode()
        assert IDLE_S <= waited < IDLE_S + 5.0  # a busy machine answers late, never early
        assert closed_by_server(conn)


def test_trickled_upload_is_answered_408_after_the_total_timeout(base_url: str) -> None:
    with connect(base_url) as conn:
        whole = request_bytes("POST", "/query", body=QUERY, headers=JSON)
        head, body = whole[: -len(QUERY)], whole[-len(QUERY) :]
        conn.sendall(head)
        started = time.monotonic()
        for byte in body:  # one byte every 0.2 s: never idle for IDLE_S, done after ~9 s
            if select.select([conn], [], [], 0)[0]:  # the server has answered: stop sending
                break
            conn.sendall(bytes([byte]))
            time.sleep(0.2)
        reply = read_response(conn)
        # Late on a busy machine, but well before the whole body (~9 s) could have arrived.
        assert TOTAL_S <= time.monotonic() - started < TOTAL_S + 5.0
        assert reply is not None
        assert reply.status == 408
        assert "took over" in reply.body.decode()


def test_upload_in_pieces_within_the_timeouts_is_served(base_url: str) -> None:
    with connect(base_url) as conn:
        whole = request_bytes("POST", "/query", body=QUERY, headers=JSON)
        for start in range(0, len(whole), len(whole) // 3 + 1):
            conn.sendall(whole[start : start + len(whole) // 3 + 1])
            time.sleep(IDLE_S / 3)
        reply = read_response(conn)
        assert reply is not None
        assert reply.status == 200
