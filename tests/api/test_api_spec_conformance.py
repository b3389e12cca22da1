"""What schemathesis found, pinned: the server refuses exactly what its OpenAPI spec says is invalid."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from fastapi import FastAPI

from verityrag.api import create_app
from verityrag.pipeline import VerityRAGPipeline

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def base_url(serve: object) -> Iterator[str]:
    pipeline = VerityRAGPipeline(data_dir=None)
    pipeline.ingest_document("watt", "James Watt", "James Watt improved the steam engine in 1776.")
    app: FastAPI = create_app(pipeline, api_key="")
    with serve(app) as url:  # type: ignore[operator]
        yield url


@pytest.fixture
def http(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=10, trust_env=False) as client:
        yield client


def test_405_allow_lists_every_method_of_the_path(http: httpx.Client) -> None:
    reply = http.request("OPTIONS", "/documents/watt")
    assert reply.status_code == 405
    assert reply.headers["allow"] == "DELETE, GET, HEAD"
    assert reply.json()["error"]["message"] == "Method Not Allowed"


def test_undecodable_body_is_a_documented_422(http: httpx.Client) -> None:
    reply = http.post("/query", content=b"\xff\xfe[", headers={"content-type": "application/json"})
    assert reply.status_code == 422
    assert reply.json()["error"]["field"] == "body"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"question": "Who improved the steam engine?", "verify": 0}, "verify"),
        ({"question": "Who improved the steam engine?", "k": True}, "k"),
        ({"question": ""}, "question"),
        ({"question": "   "}, "question"),
    ],
)
def test_query_rejects_what_the_spec_rejects(http: httpx.Client, body: dict[str, object], field: str) -> None:
    reply = http.post("/query", json=body)
    assert reply.status_code == 422
    assert reply.json()["error"]["field"] == field


@pytest.mark.parametrize(
    ("doc", "field"),
    [({"doc_id": "", "text": "Some text."}, "doc_id"), ({"doc_id": "ok", "text": "  ...  "}, "text")],
)
def test_ingest_rejects_what_the_spec_rejects(http: httpx.Client, doc: dict[str, str], field: str) -> None:
    reply = http.post("/documents", json=doc)
    assert reply.status_code == 422
    assert field in reply.json()["error"]["field"]


def test_integral_float_k_is_an_integer_as_json_schema_says(http: httpx.Client) -> None:
    reply = http.post("/query", json={"question": "Who improved the steam engine?", "k": 3.0})
    assert reply.status_code == 200
    assert http.post("/query", json={"question": "Who improved it?", "k": "3"}).status_code == 422


def test_spec_states_the_rules(http: httpx.Client) -> None:
    spec = http.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    assert schemas["DocumentIn"]["properties"]["doc_id"]["pattern"].startswith("^[A-Za-z0-9]")
    assert "pattern" in schemas["DocumentIn"]["properties"]["text"]
    assert schemas["QueryIn"]["properties"]["question"]["minLength"] == 1
    assert schemas["QueryIn"]["properties"]["k"]["anyOf"][0] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
    }
    stream = spec["paths"]["/chat/stream"]["post"]["responses"]["200"]["content"]["text/event-stream"]
    assert stream["schema"]["properties"]["event"]["enum"] == ["stage", "sentence", "report", "error"]
