"""HEAD on every GET route: the GET's status and headers, no body; the OpenAPI spec lists GET only.

Uptime monitors probe with HEAD; a 405 there (while the 405's ``Allow`` lists HEAD) read as down.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI

from verityrag.api import create_app
from verityrag.pipeline import VerityRAGPipeline

pytestmark = pytest.mark.integration

Serve = Callable[[FastAPI], AbstractContextManager[str]]  # the ``serve`` fixture (conftest.py)

# Responses whose bytes do not change between two requests, so GET and HEAD agree on Content-Length.
STABLE_GETS = ["/health", "/stats", "/documents/watt", "/documents/nobody"]


@pytest.fixture(scope="module")
def base_url(serve: Serve) -> Iterator[str]:
    pipeline = VerityRAGPipeline(data_dir=None)
    pipeline.ingest_document("watt", "James Watt", "James Watt improved the steam engine in 1776.")
    with serve(create_app(pipeline, api_key="")) as url:
        yield url


@pytest.fixture
def http(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=10, trust_env=False) as client:
        yield client


@pytest.mark.parametrize("path", STABLE_GETS)
def test_head_answers_with_the_gets_status_and_headers(http: httpx.Client, path: str) -> None:
    get = http.get(path)
    head = http.head(path)
    assert head.status_code == get.status_code, head.headers
    assert head.status_code != 405
    for name in ("content-type", "content-length"):
        assert head.headers.get(name) == get.headers.get(name), name
    assert head.content == b""


def test_head_on_metrics_is_200_prometheus_text(http: httpx.Client) -> None:
    head = http.head("/metrics")
    assert head.status_code == 200
    assert head.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert int(head.headers["content-length"]) > 0
    assert head.content == b""


def test_head_is_counted_under_its_route(http: httpx.Client) -> None:
    http.head("/health")
    metrics = http.get("/metrics").text
    assert 'verityrag_http_requests_total{method="HEAD",endpoint="/health",status="200"}' in metrics


def test_head_sends_no_body_on_the_wire(base_url: str) -> None:
    """Read the raw reply to its end: headers, then nothing (what httpx would hide from us)."""
    parts = urlsplit(base_url)
    assert parts.hostname is not None
    assert parts.port is not None
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(b"HEAD /health HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n")
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), head
    assert b"content-length: " in head.lower()
    assert body == b""


def test_post_only_route_still_refuses_head(http: httpx.Client) -> None:
    reply = http.head("/query")
    assert reply.status_code == 405
    assert reply.headers["allow"] == "POST"


def test_openapi_lists_get_but_not_head(http: httpx.Client) -> None:
    paths = http.get("/openapi.json").json()["paths"]
    for path in ("/health", "/stats", "/metrics"):
        assert set(paths[path]) == {"get"}, path
    assert set(paths["/documents/{doc_id}"]) == {"get", "delete"}
    assert not any("head" in operations for operations in paths.values())
