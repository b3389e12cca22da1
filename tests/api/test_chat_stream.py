"""POST /chat/stream over a real uvicorn server on loopback: the SSE stream parsed as a client would."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sse_frames import sse_events

from verityrag import AbstainReason, VerityRAGPipeline
from verityrag.api import create_app
from verityrag.api.streaming import sentence_support

pytestmark = pytest.mark.integration

ANSWERABLE = "Which team did the Denver Broncos defeat in Super Bowl 50?"
OUT_OF_DOMAIN = "What is the capital city of Mongolia?"
Serve = Callable[[FastAPI], AbstractContextManager[str]]  # the ``serve`` fixture (conftest.py)


@pytest.fixture(scope="module")
def base_url(squad_docs: list[dict[str, str]], serve: Serve) -> Iterator[str]:
    pipeline = VerityRAGPipeline()
    pipeline.ingest_documents(squad_docs, progress=False)
    with serve(create_app(pipeline, api_key="")) as url:
        yield url


@pytest.fixture
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=10) as c:
        yield c


def _stream(client: httpx.Client, payload: dict[str, Any]) -> list[tuple[str, Any]]:
    """POST to /chat/stream and parse the SSE frames into (event, data) pairs, in order."""
    events: list[tuple[str, Any]] = []
    with client.stream("POST", "/chat/stream", json=payload) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        events.extend(sse_events(response.iter_lines()))
    return events


def test_stream_answered_sends_stages_then_sentences_then_report(client: httpx.Client) -> None:
    events = _stream(client, {"question": ANSWERABLE})
    names = [name for name, _ in events]
    assert names[-1] == "report"
    assert names.count("report") == 1
    n_stages = names.count("stage")
    assert names == ["stage"] * n_stages + ["sentence"] * (len(names) - n_stages - 1) + ["report"]
    report = events[-1][1]
    assert report["abstained"] is False, report
    stages = [data for name, data in events if name == "stage"]
    assert [s["stage"] for s in stages] == [s["stage"] for s in report["trace"]]
    assert all(s["duration_ms"] >= 0 and isinstance(s["details"], dict) for s in stages)
    sentences = [data for name, data in events if name == "sentence"]
    assert sentences
    assert " ".join(s["text"] for s in sentences) == report["answer"]
    assert [s["index"] for s in sentences] == list(range(len(sentences)))
    cited = {(c["chunk_id"], c["start"], c["end"]) for s in sentences for c in s["citations"]}
    assert cited == {(c["chunk_id"], c["start"], c["end"]) for c in report["citations"]}
    assert all(s["support"] is not None and s["support"] > 0 for s in sentences)


def test_stream_report_equals_query_response(client: httpx.Client) -> None:
    report = _stream(client, {"question": ANSWERABLE, "k": 3, "strictness": "strict"})[-1][1]
    body = client.post("/query", json={"question": ANSWERABLE, "k": 3, "strictness": "strict"}).json()
    for drop in ("trace", "latency_ms"):  # timings differ between two runs
        report.pop(drop)
        body.pop(drop)
    assert report == body


def test_stream_abstained_sends_no_sentence_and_report_has_reason(client: httpx.Client) -> None:
    events = _stream(client, {"question": OUT_OF_DOMAIN})
    names = [name for name, _ in events]
    assert "sentence" not in names
    assert names == ["stage"] * (len(names) - 1) + ["report"]
    report = events[-1][1]
    assert report["abstained"] is True
    assert report["answer"] is None
    assert report["abstain_reason"] in {r.value for r in AbstainReason}
    assert events[-2][1]["stage"] == "abstain"
    assert events[-2][1]["details"]["reason"] == report["abstain_reason"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"question": ANSWERABLE, "strictness": "extreme"}, "strictness"),
        ({"question": "   "}, "question"),
        ({"question": "why? " * 1000}, "question"),
        ({"question": ANSWERABLE, "k": 0}, "k"),
        ({}, "question"),
    ],
)
def test_stream_bad_input_is_422_json_not_a_stream(
    client: httpx.Client, payload: dict[str, Any], field: str
) -> None:
    response = client.post("/chat/stream", json=payload)
    assert response.status_code == 422, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["error"]["field"] == field


def test_openapi_describes_stream_as_event_stream(client: httpx.Client) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/chat/stream"]["post"]
    assert "Server-Sent Events" in operation["description"]
    assert "text/event-stream" in operation["responses"]["200"]["content"]
    assert operation["responses"]["422"]
    assert operation["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("QueryIn")


def test_sentence_support_is_its_weakest_claims() -> None:
    # "A, but B." is two claims: the sentence's support is the lower one, not null.
    support = {"Watt improved the engine in 1769": 0.9, "Newcomen built the first one in 1712.": 0.4}
    two_claims = "Watt improved the engine in 1769, but Newcomen built the first one in 1712."
    assert sentence_support(two_claims, support) == 0.4
    assert sentence_support("Newcomen built the first one in 1712.", support) == 0.4
    assert sentence_support("Nothing here was scored.", support) is None
