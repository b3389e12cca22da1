"""POST /chat/stream sends stages while the query is still running, and a late failure as an event."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import httpx
import pytest
from fastapi import FastAPI
from sse_frames import sse_events

from verityrag import VerityRAGPipeline
from verityrag.api import create_app

pytestmark = pytest.mark.integration

ANSWERABLE = "Which team did the Denver Broncos defeat in Super Bowl 50?"
Serve = Callable[[FastAPI], AbstractContextManager[str]]  # the ``serve`` fixture (conftest.py)


class GatedGuard:
    """An answer guard that holds the query until the test has seen a stage over HTTP."""

    threshold = 0.0

    def __init__(self) -> None:
        self.release = threading.Event()
        self.released_by_client = False
        self.fail = False

    def score(self, evidence: str, answer: str) -> float:
        self.released_by_client = self.release.wait(10)
        if self.fail:
            raise RuntimeError("guard backend went away")
        return 1.0


@pytest.fixture(scope="module")
def guarded(squad_docs: list[dict[str, str]], serve: Serve) -> Iterator[tuple[str, GatedGuard]]:
    pipeline = VerityRAGPipeline()
    pipeline.ingest_documents(squad_docs, progress=False)
    guard = GatedGuard()
    pipeline.answer_guard = guard
    with serve(create_app(pipeline, api_key="")) as url:
        yield url, guard


def _events_releasing_guard(url: str, guard: GatedGuard) -> list[tuple[str, dict[str, object]]]:
    events: list[tuple[str, dict[str, object]]] = []
    with (
        httpx.Client(base_url=url, timeout=30) as client,
        client.stream("POST", "/chat/stream", json={"question": ANSWERABLE}) as response,
    ):
        assert response.status_code == 200
        for event, data in sse_events(response.iter_lines()):
            events.append((event, data))
            if event == "stage":
                guard.release.set()  # only a live stage can unblock the query
    return events


def test_stages_arrive_while_the_query_runs(guarded: tuple[str, GatedGuard]) -> None:
    url, guard = guarded
    guard.release.clear()
    guard.fail = False
    events = _events_releasing_guard(url, guard)
    assert guard.released_by_client, "no stage reached the client before the query finished"
    kinds = [e for e, _ in events]
    assert kinds[0] == "stage"
    assert kinds[-1] == "report"
    report = events[-1][1]
    assert [d["stage"] for e, d in events if e == "stage"] == [s["stage"] for s in report["trace"]]  # type: ignore[union-attr]


def test_failure_after_the_stream_began_is_an_error_event(guarded: tuple[str, GatedGuard]) -> None:
    url, guard = guarded
    guard.release.clear()
    guard.fail = True
    events = _events_releasing_guard(url, guard)
    assert events[0][0] == "stage"
    assert events[-1][0] == "error"
    assert "guard backend went away" in str(events[-1][1]["message"])
    assert "report" not in [e for e, _ in events]
