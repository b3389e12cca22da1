"""Provenance on an answer's citations and trace, corroboration by independent documents (the
agent's ``Corroborated`` gate)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from verityrag.agent.attempt import Attempt
from verityrag.agent.gates import Case, Corroborated, WrittenAnswer
from verityrag.types import (
    AbstainReason,
    Chunk,
    Citation,
    CitedSentence,
    GroundingReport,
    Hit,
    Provenance,
    ShortAnswer,
    source_key,
)
from verityrag.verify.sources import iso_time, source_details, with_provenance

pytestmark = pytest.mark.unit

QUESTION = "Who improved the steam engine?"


def _hit(doc_id: str, text: str) -> Hit:
    return Hit(Chunk(f"{doc_id}#0", doc_id, doc_id.title(), text, 0, 0, len(text)), 1.0)


def _sentence(hit: Hit) -> CitedSentence:
    chunk = hit.chunk
    return CitedSentence(
        chunk.text, (Citation(chunk.chunk_id, chunk.doc_id, chunk.title, 0, len(chunk.text)),)
    )


def _case(hits: list[Hit], short: str | None = "James Watt") -> Case:
    first = hits[0].chunk
    attempt = Attempt(QUESTION, "original", hits, [], 0.8, [])
    case = Case(QUESTION, attempt, 0.5, 100)
    short_answer = ShortAnswer(short, first.chunk_id, 0, len(short), 0.9) if short else None
    case.answer = WrittenAnswer((_sentence(hits[0]),), first.text, short_answer, GroundingReport(0.9))
    return case


def _lookup(sources: Mapping[str, str | None]) -> object:
    def provenance(doc_ids: Sequence[str]) -> dict[str, Provenance]:
        return {d: Provenance(d, sources[d], 1_700_000_000.0) for d in doc_ids if d in sources}

    return provenance


WATT = "James Watt improved the steam engine in 1776."
OTHER_WATT = "The engineer James Watt made the engine far more efficient with a condenser."
UNRELATED = "The Rhine flows from the Swiss Alps to the North Sea."


def test_citations_carry_their_documents_source_and_ingest_time() -> None:
    known = {"a": Provenance("a", "encyclopedia", 1_700_000_000.0)}
    (citation,) = with_provenance(_sentence(_hit("a", WATT)), known).citations
    assert (citation.source, citation.ingested_at) == ("encyclopedia", 1_700_000_000.0)
    (unknown,) = with_provenance(_sentence(_hit("b", WATT)), known).citations
    assert (unknown.source, unknown.ingested_at) == (None, None)
    assert source_details("a", known["a"]) == {
        "doc_id": "a",
        "source": "encyclopedia",
        "ingested_at": "2023-11-14T22:13:20.000Z",
    }


def test_a_documents_source_is_the_one_it_declares_else_itself() -> None:
    assert source_key("a", Provenance("a", "museum", None)) == "source:museum"
    assert source_key("a", Provenance("a", None, None)) == "doc:a"
    assert source_key("a") == "doc:a"


def test_two_documents_of_different_sources_corroborate() -> None:
    gate = Corroborated(_lookup({"a": "encyclopedia", "b": "museum"}), min_sources=2)  # type: ignore[arg-type]
    decision = gate.decide(_case([_hit("a", WATT), _hit("b", OTHER_WATT), _hit("c", UNRELATED)]))
    assert decision.refusal is None
    assert decision.step is not None
    assert decision.step.stage == "corroboration"
    assert decision.step.details == {
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
    gate = Corroborated(_lookup(sources), min_sources=2)  # type: ignore[arg-type]
    refusal = gate.decide(_case([_hit("a", WATT), _hit("b", second)])).refusal
    assert refusal is not None
    assert refusal.reason is AbstainReason.CORROBORATION
    assert "2 must agree (min_sources)" in refusal.details["explanation"]
    assert refusal.details["corroboration"]["independent"] == ["a"]


def test_without_a_short_answer_every_new_content_word_must_appear() -> None:
    gate = Corroborated(_lookup({"a": None, "b": None}), min_sources=2)  # type: ignore[arg-type]
    says_all = "Records show that in 1776 the Scottish inventor James Watt built a better machine."
    decision = gate.decide(_case([_hit("a", WATT), _hit("b", says_all)], short=None))
    assert decision.refusal is None
    assert decision.step is not None
    assert decision.step.details["claim"] == "1776 james watt"
    partial = gate.decide(_case([_hit("a", WATT), _hit("b", "James Watt was Scottish.")], short=None))
    assert partial.refusal is not None
    assert partial.refusal.reason is AbstainReason.CORROBORATION


def test_iso_time_is_utc_to_the_millisecond() -> None:
    assert iso_time(0.0) == "1970-01-01T00:00:00.000Z"
    assert iso_time(None) is None
