"""SourceReview: provenance on an answer's citations and trace, corroboration by independent documents."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from verityrag.checks.sources import SourceReview, iso_time
from verityrag.types import (
    AbstainReason,
    Chunk,
    Citation,
    CitedSentence,
    GroundingReport,
    Hit,
    Provenance,
    QueryResult,
    ShortAnswer,
    TraceStep,
)

pytestmark = pytest.mark.unit

QUESTION = "Who improved the steam engine?"


def _hit(doc_id: str, text: str) -> Hit:
    return Hit(Chunk(f"{doc_id}#0", doc_id, doc_id.title(), text, 0, 0, len(text)), 1.0)


def _answer(hits: list[Hit], short: str | None = "James Watt") -> QueryResult:
    first = hits[0].chunk
    sentence = CitedSentence(
        first.text, (Citation(first.chunk_id, first.doc_id, first.title, 0, len(first.text)),)
    )
    return QueryResult(
        question=QUESTION,
        answer=first.text,
        abstained=False,
        abstain_reason=None,
        grounding=GroundingReport(0.9),
        confidence=0.8,
        sentences=(sentence,),
        evidence=tuple(hits),
        trace=(
            TraceStep("attempt_0", 1.0, {"probability": 0.8}),
            TraceStep("answer", 0.0, {"threshold": 0.5}),
        ),
        short_answer=ShortAnswer(short, first.chunk_id, 0, len(short), 0.9) if short else None,
    )


def _lookup(sources: Mapping[str, str | None]) -> object:
    def provenance(doc_ids: Sequence[str]) -> dict[str, Provenance]:
        return {d: Provenance(d, sources[d], 1_700_000_000.0) for d in doc_ids if d in sources}

    return provenance


WATT = "James Watt improved the steam engine in 1776."
OTHER_WATT = "The engineer James Watt made the engine far more efficient with a condenser."
UNRELATED = "The Rhine flows from the Swiss Alps to the North Sea."


def test_answer_carries_its_sources_in_citations_and_its_answer_step() -> None:
    review = SourceReview(_lookup({"a": "encyclopedia", "b": None}))  # type: ignore[arg-type]
    result = review.review(_answer([_hit("a", WATT), _hit("b", UNRELATED)]))
    (citation,) = result.citations
    assert (citation.source, citation.ingested_at) == ("encyclopedia", 1_700_000_000.0)
    assert result.trace[-1].stage == "answer"
    assert result.trace[-1].details["threshold"] == 0.5  # the agent's details kept
    assert result.trace[-1].details["sources"] == [
        {"doc_id": "a", "source": "encyclopedia", "ingested_at": "2023-11-14T22:13:20.000Z"}
    ]
    assert "corroboration" not in result.trace[-1].details  # min_sources=1 asks for none


def test_two_documents_of_different_sources_corroborate() -> None:
    review = SourceReview(_lookup({"a": "encyclopedia", "b": "museum"}), min_sources=2)  # type: ignore[arg-type]
    result = review.review(_answer([_hit("a", WATT), _hit("b", OTHER_WATT), _hit("c", UNRELATED)]))
    assert not result.abstained
    corroboration = result.trace[-1].details["corroboration"]
    assert corroboration == {
        "min_sources": 2,
        "claim": "James Watt",
        "agreeing": ["a", "b"],
        "independent": ["a", "b"],
    }


@pytest.mark.parametrize(
    ("sources", "second"),
    [
        ({"a": "upload", "b": "upload"}, OTHER_WATT),  # one declared source, two documents
        ({"a": "upload", "b": "mirror"}, WATT + " "),  # a copy under another source
        ({"a": None, "b": None}, UNRELATED),  # the other document does not say it
    ],
)
def test_answer_without_two_independent_documents_is_refused(
    sources: dict[str, str | None], second: str
) -> None:
    review = SourceReview(_lookup(sources), min_sources=2)  # type: ignore[arg-type]
    result = review.review(_answer([_hit("a", WATT), _hit("b", second)]))
    assert result.abstained
    assert result.abstain_reason is AbstainReason.CORROBORATION
    assert result.answer is None
    assert result.citations == ()
    last = result.trace[-1]
    assert last.stage == "abstain"
    assert last.details["reason"] == "corroboration"
    assert last.details["explanation"] == result.explanation
    assert "2 must agree (min_sources)" in (result.explanation or "")
    assert last.details["corroboration"]["independent"] == ["a"]


def test_without_a_short_answer_every_new_content_word_must_appear() -> None:
    review = SourceReview(_lookup({"a": None, "b": None}), min_sources=2)  # type: ignore[arg-type]
    says_all = "Records show that in 1776 the Scottish inventor James Watt built a better machine."
    result = review.review(_answer([_hit("a", WATT), _hit("b", says_all)], short=None))
    assert not result.abstained
    assert result.trace[-1].details["corroboration"]["claim"] == "1776 james watt"
    partial = review.review(_answer([_hit("a", WATT), _hit("b", "James Watt was Scottish.")], short=None))
    assert partial.abstain_reason is AbstainReason.CORROBORATION


def test_stages_stream_in_trace_order_with_the_answer_step_last() -> None:
    hits = [_hit("a", WATT), _hit("b", OTHER_WATT)]
    agent_result = _answer(hits)

    def agent(observe: object) -> QueryResult:
        assert callable(observe)
        for step in agent_result.trace:
            observe(step)
        return agent_result

    streamed: list[TraceStep] = []
    for min_sources, last in ((1, "answer"), (3, "abstain")):
        streamed.clear()
        review = SourceReview(_lookup({"a": None, "b": None}), min_sources=min_sources)  # type: ignore[arg-type]
        result = review.run(agent, streamed.append)  # type: ignore[arg-type]
        assert streamed == list(result.trace)
        assert streamed[-1].stage == last


def test_abstention_passes_through_unchanged() -> None:
    abstained = QueryResult(QUESTION, None, True, AbstainReason.SUFFICIENCY, GroundingReport(0.0), 0.1)
    review = SourceReview(_lookup({}), min_sources=2)  # type: ignore[arg-type]
    assert review.run(lambda observe: abstained) is abstained


def test_iso_time_is_utc_to_the_millisecond() -> None:
    assert iso_time(0.0) == "1970-01-01T00:00:00.000Z"
    assert iso_time(None) is None
