"""LLM answers over the REST API: a real uvicorn server in front of a pipeline whose LLM is the
scripted HTTP server of tests/llm (OpenAI-compatible protocol), both on loopback."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sse_frames import sse_events

from verityrag import Settings, VerityRAGPipeline
from verityrag.api import create_app
from verityrag.generation import LLMGenerator
from verityrag.llm import RetryPolicy, openai_compatible_complete_fn

pytestmark = pytest.mark.integration

ANSWERABLE = "Which team did the Denver Broncos defeat in Super Bowl 50?"
# Passage [3] for this question over the first 60 documents is squad-super-bowl-50-000#0,
# which says "... Denver Broncos defeated the ... Carolina Panthers 24–10 ...".
GROUNDED = "The Denver Broncos defeated the Carolina Panthers 24–10 [3]."
Serve = Callable[[FastAPI], AbstractContextManager[str]]  # the ``serve`` fixture (conftest.py)
FAST = RetryPolicy(timeout_s=5.0, max_retries=0)


def _llm_http_server() -> ModuleType:
    """tests/llm/llm_http_server.py (on sys.path only for the tests in that folder)."""
    if "llm_http_server" in sys.modules:
        return sys.modules["llm_http_server"]
    path = Path(__file__).resolve().parents[1] / "llm" / "llm_http_server.py"
    spec = importlib.util.spec_from_file_location("llm_http_server", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["llm_http_server"] = module
    spec.loader.exec_module(module)
    return module


LLM = _llm_http_server()


def _openai_answer(text: str) -> Any:
    body = {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    return LLM.Reply(200, body)


@pytest.fixture
def llm_server() -> Iterator[Any]:
    with LLM.ScriptedServer() as srv:
        yield srv


def _pipeline(squad_docs: list[dict[str, str]], generator: Any) -> VerityRAGPipeline:
    # The scripted models answer with fixed text whatever the question: the reader check (on by
    # default for LLM answers) would refuse them, and these tests are about the API around them.
    pipeline = VerityRAGPipeline(generator=generator, settings=Settings(llm_reader_check=False))
    pipeline.ingest_documents(squad_docs, progress=False)
    return pipeline


def _stream(client: httpx.Client, payload: dict[str, Any]) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    with client.stream("POST", "/chat/stream", json=payload) as response:
        assert response.status_code == 200, response.read()
        events.extend(sse_events(response.iter_lines()))
    return events


def test_llm_answer_with_half_an_emoji_is_answered_not_a_500(
    squad_docs: list[dict[str, str]], serve: Serve, llm_server: Any
) -> None:
    # The provider's JSON escapes a lone surrogate ("\ud83c"): the answer could not be encoded as
    # UTF-8, so POST /query was a 500 ("internal error (PydanticSerializationError)").
    llm_server.script(_openai_answer(GROUNDED.replace(" [3]", " \ud83c [3]")))
    fn = openai_compatible_complete_fn(base_url=llm_server.url, model="m", policy=FAST)
    with (
        serve(create_app(_pipeline(squad_docs, LLMGenerator(fn)), api_key="")) as url,
        httpx.Client(base_url=url, timeout=30) as client,
    ):
        response = client.post("/query", json={"question": ANSWERABLE})
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["abstained"] is False, body
        assert "\ufffd" in body["answer"]
        assert [c["chunk_id"] for c in body["citations"]] == ["squad-super-bowl-50-000#0"]
        events = _stream(client, {"question": ANSWERABLE})
    assert events[-1][0] == "report"
    assert events[-1][1]["answer"] == body["answer"]


def test_stream_sends_keep_alive_comments_while_the_llm_is_slow(
    squad_docs: list[dict[str, str]], serve: Serve, llm_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verityrag.api import streaming

    # Nothing was sent between the last stage before the LLM call and the answer: a proxy that
    # cuts connections idle for 60 s (nginx's default) cut a stream waiting on a slow provider.
    monkeypatch.setattr(streaming, "HEARTBEAT_S", 0.1)
    slow = _openai_answer(GROUNDED)
    slow.delay_s = 0.8
    llm_server.script(slow)
    fn = openai_compatible_complete_fn(base_url=llm_server.url, model="m", policy=FAST)
    with (
        serve(create_app(_pipeline(squad_docs, LLMGenerator(fn)), api_key="")) as url,
        httpx.Client(base_url=url, timeout=30) as client,
        client.stream("POST", "/chat/stream", json={"question": ANSWERABLE}) as response,
    ):
        assert response.status_code == 200
        lines = list(response.iter_lines())
    keep_alive = [i for i, line in enumerate(lines) if line == ": keep-alive"]
    assert len(keep_alive) >= 3, lines
    events = [line.removeprefix("event:").strip() for line in lines if line.startswith("event:")]
    assert events[-2:] == ["sentence", "report"]
    assert lines.index("event: stage") < keep_alive[0] < lines.index("event: report")
    report = json.loads(lines[lines.index("event: report") + 1].removeprefix("data:"))
    assert report["abstained"] is False
    assert report["answer"] == "The Denver Broncos defeated the Carolina Panthers 24–10."
