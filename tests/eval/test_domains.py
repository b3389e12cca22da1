"""``python -m verityrag.eval --domains DIR``: a user's own documents as the benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verityrag.config import Settings
from verityrag.errors import InvalidInputError
from verityrag.eval.__main__ import main
from verityrag.eval.domains import (
    DomainOutcome,
    DomainQuestion,
    load_domain,
    run_domains,
    score_reply,
    summarise,
)
from verityrag.types import AbstainReason, Chunk, GroundingReport, Hit, QueryResult, ShortAnswer

SHOP = {
    "domain": "two-shops",
    "description": "a test domain",
    "documents": [
        {
            "doc_id": "prices",
            "title": "Price list",
            "format": "markdown",
            "text": "# Price list\n\n| Loaf | Price |\n|---|---|\n| Sourdough | £4.20 |\n| Rye | £3.90 |\n",
        },
        {
            "doc_id": "about",
            "title": "About us",
            "format": "html",
            "text": "<html><body><h1>About us</h1><p>The bakery was opened by Ruth Pellow in 1987. "
            "Our head baker is Tomasz Wilk.</p></body></html>",
        },
        {"doc_id": "leaflet", "title": "Old leaflet", "format": "text", "text": "Sourdough costs £3.80.\n"},
    ],
    "questions": [
        {
            "id": "A1",
            "kind": "answerable",
            "question": "Who is the head baker?",
            "answers": ["Tomasz Wilk"],
            "doc_id": "about",
        },
        {"id": "S1", "kind": "same_topic", "question": "Do you sell wedding cakes?"},
        {
            "id": "C1",
            "kind": "conflict",
            "question": "How much is sourdough?",
            "answers": ["£4.20", "£3.80"],
            "doc_ids": ["prices", "leaflet"],
        },
        {"id": "X1", "kind": "chit_chat", "question": "thanks!"},
    ],
}


def _result(
    answered: bool,
    short: str | None = None,
    answer: str | None = None,
    evidence: str = "",
    reason: AbstainReason | None = None,
    explanation: str | None = None,
) -> QueryResult:
    chunk = Chunk("d#0", "d", "D", evidence, 0, 0, len(evidence))
    return QueryResult(
        question="q",
        answer=answer,
        abstained=not answered,
        abstain_reason=reason,
        grounding=GroundingReport(1.0),
        confidence=0.5,
        evidence=(Hit(chunk, 1.0),) if evidence else (),
        short_answer=ShortAnswer(short, "d#0", 0, len(short), 0.9) if short else None,
        explanation=explanation,
    )


@pytest.mark.unit
def test_a_reply_is_scored_by_the_kind_of_its_question() -> None:
    q = DomainQuestion("A1", "answerable", "How much is a sourdough?", ("£4.20",))
    right = score_reply("d", q, _result(True, "£4.20", "Sourdough: £4.20.", "Sourdough: £4.20."), 1.0)
    assert right.right
    assert right.category == "right"
    sentence_only = score_reply(
        "d", q, _result(True, "Sourdough", "Sourdough: £4.20.", "Sourdough: £4.20."), 1.0
    )
    assert not sentence_only.right
    assert sentence_only.category == "only_in_sentence"
    wrong = score_reply("d", q, _result(True, "£3.90", "Rye: £3.90.", "Sourdough: £4.20. Rye: £3.90."), 1.0)
    assert wrong.category == "wrong_span"
    refused = score_reply(
        "d", q, _result(False, evidence="Sourdough: £4.20.", reason=AbstainReason.READER), 1.0
    )
    assert refused.category == "refused_gold_in_evidence"
    missed = score_reply(
        "d", q, _result(False, evidence="Rye: £3.90.", reason=AbstainReason.SUFFICIENCY), 1.0
    )
    assert missed.category == "not_retrieved"

    conflict = DomainQuestion("C1", "conflict", "How much?", ("£4.20", "£3.80"))
    both = _result(
        False, reason=AbstainReason.CONFLICT, explanation="the documents disagree: '£4.20' or '£3.80'"
    )
    assert score_reply("d", conflict, both, 1.0).right
    one = _result(
        False, reason=AbstainReason.CONFLICT, explanation="the documents disagree: '£4.20' or 'soon'"
    )
    assert not score_reply("d", conflict, one, 1.0).right  # both values must be named
    assert not score_reply("d", conflict, _result(True, "£4.20", "£4.20"), 1.0).right

    refuse = DomainQuestion("W1", "wrong_entity", "Where do you park at Ostley?")
    assert score_reply("d", refuse, _result(False, reason=AbstainReason.SUFFICIENCY), 1.0).right
    assert not score_reply("d", refuse, _result(True, "the yard", "In the yard."), 1.0).right


@pytest.mark.unit
def test_the_summary_counts_per_kind() -> None:
    def outcome(kind: str, answered: bool, right: bool, in_sentence: bool = False) -> DomainOutcome:
        return DomainOutcome(
            "d", "x", kind, answered, right, in_sentence, True, None if answered else "reader", 0.8, 5.0, None
        )

    m = summarise(
        [
            outcome("answerable", True, True),
            outcome("answerable", True, False, in_sentence=True),
            outcome("answerable", False, False),
            outcome("same_topic", False, True),
            outcome("chit_chat", False, True),
        ]
    )
    a = m["kinds"]["answerable"]
    assert (a["asked"], a["right"], a["right_only_in_sentence"], a["wrong"], a["refused"]) == (3, 1, 1, 1, 1)
    assert a["categories"] == {"right": 1, "only_in_sentence": 1, "refused_gold_in_evidence": 1}
    assert m["kinds"]["same_topic"]["rate"] == 1.0
    assert m["chit_chat_refused"] == 1.0


@pytest.mark.unit
def test_a_domain_file_that_breaks_the_format_is_refused_naming_it(tmp_path: Path) -> None:
    bad = dict(
        SHOP,
        questions=[{"id": "A1", "kind": "answerable", "question": "q?", "answers": ["x"], "doc_id": "nope"}],
    )
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(InvalidInputError, match="nope"):
        load_domain(path)
    path.write_text(
        json.dumps(dict(SHOP, documents=[dict(SHOP["documents"][0], format="pdf")])), encoding="utf-8"
    )
    with pytest.raises(InvalidInputError, match="format"):
        load_domain(path)
    path.write_text("[1, 2", encoding="utf-8")
    with pytest.raises(InvalidInputError, match="JSON"):
        load_domain(path)


@pytest.mark.unit
def test_each_document_goes_through_the_parser_of_its_format(tmp_path: Path) -> None:
    path = tmp_path / "shop.json"
    path.write_text(json.dumps(SHOP), encoding="utf-8")
    docs = {d.doc_id: d.parsed() for d in load_domain(path).documents}
    assert "<p>" not in docs["about"].text
    assert "Tomasz Wilk" in docs["about"].text
    assert "|---|" not in docs["prices"].text
    assert "£4.20" in docs["prices"].text
    assert docs["about"].title == "About us"


@pytest.mark.integration
def test_a_domain_asked_alone_writes_a_report(tmp_path: Path) -> None:
    folder = tmp_path / "domains"
    folder.mkdir()
    (folder / "shop.json").write_text(json.dumps(SHOP), encoding="utf-8")
    report = run_domains(folder, Settings(), modes=["alone"], progress=False)
    alone = report["modes"]["alone"]
    assert alone["questions"] == 4
    assert {r["id"] for r in alone["replies"]} == {"A1", "S1", "C1", "X1"}
    assert alone["kinds"]["chit_chat"]["right"] == 1  # "thanks!" is refused
    out = tmp_path / "r.json"
    assert (
        main(["--domains", str(folder), "--domain-modes", "alone", "--out", str(out), "--no-progress"]) == 0
    )
    assert json.loads(out.read_text())["modes"]["alone"]["questions"] == 4
    assert main(["--domains", str(tmp_path / "missing"), "--out", str(out), "--no-progress"]) == 2
