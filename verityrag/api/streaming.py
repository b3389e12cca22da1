"""Server-Sent Events for ``POST /chat/stream``: the frames, and a finished result's events.

Formatting only. The order is fixed: one ``stage`` event per trace step (the endpoint
sends these live, as the agent records them), then (when answered) one ``sentence`` event
per answer sentence the request's strictness kept (``support``: its weakest claim's), then one ``report`` event whose data is exactly
``POST /query``'s response body; or, when the query fails after the stream began, one
``error`` event instead of the sentences and report. While the query is quiet (an LLM call
can take minutes with its retries), a comment line (``: keep-alive``) goes out every
``HEARTBEAT_S`` seconds: SSE clients ignore comments, and proxies that cut a connection
idle for a minute (nginx's default ``proxy_read_timeout`` is 60 s) see traffic.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from verityrag.api.schemas import QueryOut
from verityrag.verify.claims import split_claims

MEDIA_TYPE = "text/event-stream"
EVENTS = ("stage", "sentence", "report", "error")
# The schema of one event as clients parse it (OpenAPI has no SSE vocabulary before 3.2):
# the event name, and its data, one line of JSON.
EVENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["event", "data"],
    "properties": {
        "event": {"type": "string", "enum": list(EVENTS)},
        "data": {"type": "string", "contentMediaType": "application/json"},
    },
}

EXAMPLE = (
    'event: stage\ndata: {"stage": "attempt_0", "duration_ms": 0.8, '
    '"details": {"strategy": "original", "probability": 0.93}}\n\n'
    'event: stage\ndata: {"stage": "answer", "duration_ms": 0.0, "details": {"probability": 0.93}}\n\n'
    'event: sentence\ndata: {"index": 0, "text": "James Watt improved it in 1776.", "support": 0.91, '
    '"citations": [{"chunk_id": "steam-engine#0", "doc_id": "steam-engine", "title": "Steam Engine", '
    '"start": 53, "end": 84}]}\n\n'
    'event: report\ndata: {"question": "Who improved the steam engine?", "answer": "...", ...}\n\n'
)


#: Seconds of quiet before a keep-alive comment (well under common 60 s proxy idle timeouts).
HEARTBEAT_S = 15.0
KEEP_ALIVE = ": keep-alive\n\n"


def sse_event(event: str, data: Any) -> str:
    """One SSE frame; the data is one line of JSON (no newlines inside, so no splitting)."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'), allow_nan=False)}\n\n"


def sentence_support(text: str, support: Mapping[str, float]) -> float | None:
    """A sentence's support: the weakest of its claims' (the grounding report scores claims,
    and a sentence such as "A did X, but B did Y." is two); None when none was scored."""
    scores = [support[claim] for claim in split_claims(text) if claim in support]
    return min(scores) if scores else None


def query_events(report: QueryOut, sentences: list[dict[str, Any]], stages: bool = True) -> Iterator[str]:
    """The stream for one answered or abstained query.

    ``sentences`` are the answer's sentences (text and citations); none when it abstained.
    ``stages=False`` when the stage events were already sent live.
    """
    for step in report.trace if stages else ():
        yield sse_event("stage", step.model_dump(mode="json"))
    if not report.abstained:
        support = {claim.claim: claim.support for claim in report.grounding.claims}
        for i, sentence in enumerate(sentences):
            yield sse_event(
                "sentence", {"index": i, **sentence, "support": sentence_support(sentence["text"], support)}
            )
    yield sse_event("report", report.model_dump(mode="json"))
