"""Cross-site writes: with no key set (what ``make run`` starts), a page on another site could
otherwise add or replace documents by a form upload that browsers send without asking. Over a
real uvicorn server on loopback, with the requests a browser would make."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import httpx
import pytest
from fastapi import FastAPI

from verityrag import Settings, VerityRAGPipeline
from verityrag.api import create_app

pytestmark = pytest.mark.integration

Serve = Callable[[FastAPI], AbstractContextManager[str]]
PLANTED = b"The planted fact: the spay price is 1 pound."


@pytest.fixture(scope="module")
def pipeline() -> VerityRAGPipeline:
    p = VerityRAGPipeline(settings=Settings())
    p.ingest_document("rhine", "Rhine", "The Rhine flows from the Swiss Alps to the North Sea.")
    return p


@pytest.fixture(scope="module")
def base_url(pipeline: VerityRAGPipeline, serve: Serve) -> Iterator[str]:
    with serve(create_app(pipeline, api_key="", read_key="", origins="https://docs.example.com")) as url:
        yield url


def _upload(base_url: str, name: str, origin: str | None) -> httpx.Response:
    headers = {} if origin is None else {"Origin": origin}
    files = {"files": (name, PLANTED, "text/plain")}
    return httpx.post(f"{base_url}/documents/files", files=files, headers=headers, timeout=30)


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://127.0.0.1:1"])
def test_a_cross_site_upload_is_refused_and_stores_nothing(
    base_url: str, pipeline: VerityRAGPipeline, origin: str
) -> None:
    response = _upload(base_url, "planted.txt", origin)
    assert response.status_code == 403
    assert response.json()["error"]["field"] == "Origin"
    assert "VERITYRAG_ALLOWED_ORIGINS" in response.json()["error"]["message"]
    assert not pipeline.index.has_document("planted.txt")
    deleted = httpx.delete(f"{base_url}/documents/rhine", headers={"Origin": origin}, timeout=30)
    assert deleted.status_code == 403
    assert pipeline.index.has_document("rhine")


def test_reads_from_another_site_stay_open(base_url: str) -> None:
    response = httpx.get(f"{base_url}/documents", headers={"Origin": "https://evil.example"}, timeout=30)
    assert response.status_code == 200


@pytest.mark.parametrize(
    ("name", "origin"),
    [("no-origin.txt", None), ("listed.txt", "https://docs.example.com/"), ("same-site.txt", "SELF")],
)
def test_writes_without_origin_from_the_same_site_or_a_listed_one_pass(
    base_url: str, pipeline: VerityRAGPipeline, name: str, origin: str | None
) -> None:
    response = _upload(base_url, name, base_url if origin == "SELF" else origin)
    assert response.status_code == 200, response.text
    assert pipeline.index.has_document(name)
