"""The README's quick start does what the README shows, against a real server set up as `make run`
sets it up (the bundled corpus in the demo collection, its calibration, the user's document beside)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from verityrag.api import create_app
from verityrag.index.collections import DEMO_COLLECTION
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.bundled import bundled_pipeline

Serve = Callable[[FastAPI], AbstractContextManager[str]]  # the ``serve`` fixture (conftest.py)
README = Path(__file__).resolve().parents[2] / "README.md"


def _quick_start() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1]
    return section.split("```bash", 1)[1].split("```", 1)[0]


@pytest.mark.integration
def test_the_quick_start_answers_and_refuses_as_shown(serve: Serve) -> None:
    block = _quick_start()
    bodies = [json.loads(b) for b in re.findall(r"-d '(\{.*?\})'", block, flags=re.S)]
    document, question, unanswerable = bodies[0], bodies[1], bodies[2]
    shown = re.search(r'"short_answer": \{"text": "([^"]+)"', block)
    assert shown is not None
    shown_reason = re.search(r'"abstain_reason": "(\w+)"', block)
    assert shown_reason is not None
    pipeline = bundled_pipeline(store_dir=IN_MEMORY, collection=DEMO_COLLECTION)
    with serve(create_app(pipeline, api_key="")) as url, httpx.Client(base_url=url, timeout=60) as http:
        assert http.post("/documents", json=document).status_code == 200
        reply = http.post("/query", json=question).json()
        assert reply["abstained"] is False, reply.get("explanation")
        assert reply["short_answer"]["text"] == shown.group(1)
        refused = http.post("/query", json=unanswerable).json()
        assert refused["abstained"] is True
        assert refused["abstain_reason"] == shown_reason.group(1)
    pipeline.close()


@pytest.mark.integration
@pytest.mark.xfail(
    strict=True, reason="'James Watt' is read at 0.988, under the shipped reader's threshold 0.9988"
)
def test_who_improved_the_steam_engine_is_answered(serve: Serve) -> None:
    pipeline = bundled_pipeline(store_dir=IN_MEMORY, collection=DEMO_COLLECTION)
    block = _quick_start()
    document = json.loads(re.findall(r"-d '(\{.*?\})'", block, flags=re.S)[0])
    with serve(create_app(pipeline, api_key="")) as url, httpx.Client(base_url=url, timeout=60) as http:
        assert http.post("/documents", json=document).status_code == 200
        reply = http.post("/query", json={"question": "Who improved the steam engine?"}).json()
    pipeline.close()
    assert reply["short_answer"] is not None
    assert reply["short_answer"]["text"] == "James Watt"


@pytest.mark.integration
def test_the_readme_python_example_runs_verbatim_and_answers() -> None:
    text = README.read_text(encoding="utf-8").split("## Quick start", 1)[1]
    code = text.split("```python", 1)[1].split("```", 1)[0]
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)  # prints what the README's example prints
    result = namespace["result"]
    assert getattr(result, "abstained", True) is False
    assert result.short_answer.text == "1776"
