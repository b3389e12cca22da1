"""A ``QueryResult`` as the JSON reply every front end gives, and back.

``query_reply`` is the one serialiser: the body of ``POST /query`` (its schema is
``verityrag.api.schemas.QueryOut``, which the API validates it against), the ``report`` of
``POST /chat/stream``, and what the MCP ``query`` tool selects its fields from. Plain JSON types
only, so every front end can send it as it is. ``result_from_reply`` reads a reply back into a
``QueryResult`` for a client of the API (the Streamlit app, ``make ask``); what the wire form
leaves out stays out (the passages, each claim's signals, one cited sentence per answer).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from verityrag.types import (
    AbstainReason,
    Citation,
    CitedSentence,
    ClaimSupport,
    GroundingReport,
    Hit,
    QueryResult,
    ReplyCase,
    ShortAnswer,
    TraceStep,
)
from verityrag.verify.sources import iso_time, unix_seconds

__all__ = ["citation_reply", "json_plain", "query_reply", "result_from_reply", "trace_step_reply"]

_CITATION_FIELDS = ("chunk_id", "doc_id", "title", "start", "end", "source")
_SHORT_ANSWER_FIELDS = ("text", "chunk_id", "start", "end", "probability")


def query_reply(result: QueryResult) -> dict[str, Any]:
    """The reply to a question: the answer and its evidence, or the refusal and why."""
    short = result.short_answer
    return {
        "question": result.question,
        "answer": result.answer,
        "short_answer": _short(short),
        "abstained": result.abstained,
        "abstain_reason": result.abstain_reason.value if result.abstain_reason else None,
        "case": (result.case or ReplyCase.NOT_FOUND).value,
        "headline": result.headline,
        "explanation": result.explanation,
        "candidate": _short(result.candidate),
        "confidence": result.confidence,
        "grounding": {
            "overall_score": result.grounding.overall_score,
            "claims": [{"claim": c.claim, "support": c.support} for c in result.grounding.claims],
        },
        "unsupported_claims": list(result.unsupported_claims),
        "citations": [citation_reply(c) for c in result.citations],
        "trace": [trace_step_reply(step) for step in result.trace],
        "latency_ms": result.latency_ms,
    }


def _short(span: ShortAnswer | None) -> dict[str, Any] | None:
    return {name: getattr(span, name) for name in _SHORT_ANSWER_FIELDS} if span is not None else None


def _span(reply: Mapping[str, Any] | None) -> ShortAnswer | None:
    return ShortAnswer(*(reply[name] for name in _SHORT_ANSWER_FIELDS)) if reply else None


def citation_reply(citation: Citation) -> dict[str, Any]:
    """A citation, its document's ingest time as ISO 8601 UTC (null when not recorded)."""
    return {
        **{name: getattr(citation, name) for name in _CITATION_FIELDS},
        "ingested_at": iso_time(citation.ingested_at),
    }


def trace_step_reply(step: TraceStep) -> dict[str, Any]:
    """A trace step, its details as plain JSON (:func:`json_plain`)."""
    return {"stage": step.stage, "duration_ms": step.duration_ms, "details": json_plain(step.details)}


def json_plain(value: Any) -> Any:
    """``value`` as plain JSON: numpy scalars to Python, non-finite floats to null, tuples to
    lists, anything else unknown to its string (the agent records what it decided on, not JSON)."""
    if isinstance(value, dict):
        return {str(k): json_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def result_from_reply(reply: Mapping[str, Any], evidence: tuple[Hit, ...] = ()) -> QueryResult:
    """The ``QueryResult`` a reply describes, with ``evidence`` (the reply names passages, it does
    not hold them). The answer is one sentence citing every citation, and claims have no signals:
    ``query_reply`` of it gives ``reply`` back."""
    citations = tuple(
        Citation(
            c["chunk_id"],
            c["doc_id"],
            c["title"],
            c["start"],
            c["end"],
            c.get("source"),
            unix_seconds(c.get("ingested_at")),
        )
        for c in reply["citations"]
    )
    short = reply.get("short_answer")
    reason = reply["abstain_reason"]
    return QueryResult(
        question=reply["question"],
        answer=reply["answer"],
        abstained=reply["abstained"],
        abstain_reason=AbstainReason(reason) if reason else None,
        grounding=GroundingReport(
            reply["grounding"]["overall_score"],
            tuple(ClaimSupport(c["claim"], c["support"]) for c in reply["grounding"]["claims"]),
        ),
        confidence=reply["confidence"],
        sentences=(CitedSentence(reply["answer"], citations),) if reply["answer"] else (),
        evidence=evidence,
        trace=tuple(TraceStep(t["stage"], t["duration_ms"], t["details"]) for t in reply["trace"]),
        unsupported_claims=tuple(reply.get("unsupported_claims", ())),
        short_answer=_span(short),
        explanation=reply.get("explanation"),
        # An API of an older version sends no case: derived from the reason as before.
        case=ReplyCase(reply["case"]) if reply.get("case") else None,
        candidate=_span(reply.get("candidate")),
    )
