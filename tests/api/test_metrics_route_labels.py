"""Requests the middleware answers before routing (413, bad Content-Length) still count under
the route template they were sent to, not ``endpoint="unmatched"``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import httpx
import pytest
from fastapi import FastAPI

from verityrag.api import create_app
from verityrag.pipeline import VerityRAGPipeline

pytestmark = pytest.mark.integration

Serve = Callable[[FastAPI], AbstractContextManager[str]]  # the ``serve`` fixture (conftest.py)
LIMIT = 100
REQUESTS = re.compile(
    r'^verityrag_http_requests_total\{method="(\w+)",endpoint="([^"]*)",status="(\d+)"\} (\d+)$', re.M
)


@pytest.fixture
def http(serve: Serve) -> Iterator[httpx.Client]:
    """A fresh server per test, so its counters hold that test's requests only."""
    pipeline = VerityRAGPipeline(data_dir=None)
    with (
        serve(create_app(pipeline, api_key="", max_body_bytes=LIMIT)) as url,
        httpx.Client(base_url=url, timeout=10, trust_env=False) as client,
    ):
        yield client


def _requests(client: httpx.Client) -> dict[tuple[str, str, str], int]:
    text = client.get("/metrics").text
    return {(m, e, s): int(n) for m, e, s, n in REQUESTS.findall(text)}


def test_413_by_content_length_counts_under_the_route(http: httpx.Client) -> None:
    blob = b'{"question": "' + b"x" * LIMIT + b'"}'
    assert http.post("/documents", content=blob).status_code == 413
    assert http.post("/query", content=blob).status_code == 413
    assert http.post("/query", content=blob).status_code == 413
    counts = _requests(http)
    assert counts[("POST", "/documents", "413")] == 1
    assert counts[("POST", "/query", "413")] == 2
    assert not any(endpoint == "unmatched" for _, endpoint, _ in counts)


def test_413_of_a_chunked_body_counts_under_the_route(http: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(3):
            yield b" " * LIMIT

    assert http.post("/chat/stream", content=chunks()).status_code == 413
    assert _requests(http)[("POST", "/chat/stream", "413")] == 1


def test_413_on_a_path_template_counts_under_the_template(http: httpx.Client) -> None:
    reply = http.request("DELETE", "/documents/some/long-id", content=b"x" * (LIMIT + 1))
    assert reply.status_code == 413
    assert _requests(http)[("DELETE", "/documents/{doc_id}", "413")] == 1


def test_413_on_an_unknown_path_stays_unmatched(http: httpx.Client) -> None:
    assert http.post("/nowhere", content=b"x" * (LIMIT + 1)).status_code == 413
    assert http.get("/nowhere/either").status_code == 404
    counts = _requests(http)
    assert counts[("POST", "unmatched", "413")] == 1
    assert counts[("GET", "unmatched", "404")] == 1
