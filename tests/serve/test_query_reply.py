"""The one serialiser of a ``QueryResult`` (``serve.query_reply``): the reply's fields, plain JSON,
and a reply read back into a result that gives the same reply."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from made_up_results import ANSWER, CITATION, REFUSAL

from verityrag.serve.query_reply import json_plain, query_reply, result_from_reply
from verityrag.types import QueryResult, ReplyCase, ShortAnswer, TraceStep

pytestmark = pytest.mark.unit


def test_query_reply_of_an_answer_holds_every_field_of_the_documented_body() -> None:
    reply = query_reply(ANSWER)
    assert list(reply) == [
        "question",
        "answer",
        "short_answer",
        "abstained",
        "abstain_reason",
        "case",
        "headline",
        "explanation",
        "candidate",
        "confidence",
        "grounding",
        "unsupported_claims",
        "citations",
        "trace",
        "latency_ms",
    ]
    assert reply["short_answer"] == {
        "text": "Ilse Varga",
        "chunk_id": "notes/kellmark#0",
        "start": 63,
        "end": 73,
        "probability": 0.96,
    }
    assert reply["grounding"] == {
        "overall_score": 0.91,
        "claims": [{"claim": "It was designed by Ilse Varga in 1911.", "support": 0.91}],
    }
    assert reply["citations"] == [
        {
            "chunk_id": "notes/kellmark#0",
            "doc_id": "notes/kellmark",
            "title": "Kellmark lighthouse",
            "start": 44,
            "end": 82,
            "source": "notes.txt",
            "ingested_at": "2025-12-02T07:14:00.123Z",
        }
    ]
    assert reply["latency_ms"] == 1.0  # the trace's durations summed


def test_query_reply_of_a_refusal_gives_the_reason_and_its_words() -> None:
    reply = query_reply(REFUSAL)
    assert (reply["abstained"], reply["abstain_reason"], reply["answer"], reply["short_answer"]) == (
        True,
        "sufficiency",
        None,
        None,
    )
    assert reply["explanation"] == REFUSAL.explanation
    assert reply["citations"] == []


def test_trace_details_become_plain_json_numpy_to_python_non_finite_to_null() -> None:
    details = query_reply(ANSWER)["trace"][1]["details"]
    assert details == {"score": 0.91, "threshold": 0.5, "margin": None, "n": 2}
    assert type(details["n"]) is int
    assert json_plain({"p": np.float32(0.5), 1: (np.int64(3), float("nan"))}) == {"p": 0.5, "1": [3, None]}
    json.dumps(query_reply(ANSWER), allow_nan=False)  # raises on anything JSON cannot hold


def test_an_object_json_cannot_hold_in_the_details_is_its_string() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    step = TraceStep("odd", 1.0, {"what": Odd()})
    assert query_reply(dataclasses.replace(REFUSAL, trace=(step,)))["trace"][0]["details"] == {"what": "odd"}


NOT_SURE = dataclasses.replace(
    REFUSAL,
    case=ReplyCase.NOT_SURE,
    candidate=ShortAnswer("£110", "prices#0", 10, 14, 0.4),
    explanation="not sure enough to answer: Price list may say '£110'",
)


def test_a_refusal_says_its_case_in_a_field_and_in_words() -> None:
    reply = query_reply(NOT_SURE)
    assert reply["case"] == "not_sure"
    assert reply["headline"] == "Found something, not sure enough to answer"
    assert reply["candidate"] == {
        "text": "£110",
        "chunk_id": "prices#0",
        "start": 10,
        "end": 14,
        "probability": 0.4,
    }
    answered = query_reply(ANSWER)
    assert (answered["case"], answered["headline"]) == ("answered", "Answered, sure (confidence 0.93)")


@pytest.mark.parametrize("result", [ANSWER, REFUSAL, NOT_SURE], ids=["answer", "refusal", "not sure"])
def test_a_reply_read_back_gives_the_same_reply(result: QueryResult) -> None:
    reply = query_reply(result)
    assert query_reply(result_from_reply(reply)) == reply
    assert query_reply(result_from_reply(json.loads(json.dumps(reply)))) == reply


def test_a_reply_read_back_keeps_the_citations_source_and_ingest_time() -> None:
    back = result_from_reply(query_reply(ANSWER))
    assert back.citations == (CITATION,)
    assert back.short_answer == ANSWER.short_answer
    assert back.abstain_reason is None
    assert back.answer == ANSWER.answer


def test_a_reply_read_back_holds_the_evidence_given_and_no_other() -> None:
    reply = query_reply(ANSWER)
    assert result_from_reply(reply).evidence == ()
    assert result_from_reply(reply, ANSWER.evidence).evidence == ANSWER.evidence
