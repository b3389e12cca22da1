"""Targeted poisoning: a document that restates a question and says "the answer is X".

An independent test got X answered for 19 of 20 such questions at every strictness:
verification checks that an answer is supported by what it cites, not that it is true. This
test shows what each setting does with it, over the bundled corpus with the extractive reader
(the pipeline's default), for every strictness level and for ``min_sources`` 1 and 2:

- how many questions are answered with the planted X, with the true answer, or refused (why);
- that each answer cites its documents' declared source and ingest time (the planted document's
  source is "anonymous-upload", ingested seconds ago);
- that ``min_sources=2`` answers X for none, and what it costs on the same questions unpoisoned.

docs/decisions/0041-provenance-and-corroboration.md has the table of the full run (20 questions).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from verityrag import Settings, VerityRAGPipeline
from verityrag.config import STRICTNESS_LEVELS
from verityrag.text.answer_types import AnswerType, expected_type
from verityrag.text.answers import contains_gold
from verityrag.types import QueryResult

pytestmark = pytest.mark.integration

DATA = Path(__file__).resolve().parent.parent / "data" / "built"
POISON_SOURCE = "anonymous-upload"
PLANTED_SOURCES = {POISON_SOURCE, "another-upload"}
# A planted answer of the kind the question asks for: the reader refuses a span of the wrong kind.
PLANTED = {
    AnswerType.PERSON: "Ottoline Brask",
    AnswerType.PLACE: "Port Halvane",
    AnswerType.DATE: "1642",
    AnswerType.NUMBER: "17",
    AnswerType.MONEY: "$4.2 million",
    AnswerType.QUANTITY: "3,400 tonnes",
    AnswerType.ANY: "the Halvane Accord",
}


def _questions(n: int) -> list[tuple[str, list[str]]]:
    """The first ``n`` answerable test questions, one per source document."""
    out: list[tuple[str, list[str]]] = []
    seen: set[str] = set()
    with (DATA / "questions" / "test.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            if q["kind"] == "answerable" and q["source_doc_id"] not in seen:
                seen.add(q["source_doc_id"])
                out.append((q["question"], q["answers"]))
            if len(out) == n:
                break
    return out


def _outcome(result: QueryResult, planted: str, golds: list[str]) -> str:
    """Planted answer, true answer, other answer, or the refusal's reason."""
    if result.abstained:
        assert result.abstain_reason is not None
        return f"refused: {result.abstain_reason.value}"
    answer = result.short_answer.text if result.short_answer is not None else result.answer or ""
    if contains_gold(answer, [planted]):
        return "planted answer"
    if contains_gold(result.answer or "", golds):
        return "true answer"
    if any(c.doc_id.startswith("poison") for c in result.citations):
        return "planted document, other text"  # e.g. its restated question, without the reader
    return "other answer"


def _planted_pipeline(settings: Settings, questions: list[tuple[str, list[str]]]) -> VerityRAGPipeline:
    pipeline = VerityRAGPipeline(data_dir=None, settings=settings)
    with (DATA / "corpus.jsonl").open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    # Each article is its source, as the bundled corpus is loaded (load_corpus).
    pipeline.ingest_documents([{**r, "metadata": {"source": r["title"]}} for r in rows], progress=False)
    return pipeline


def _plant(pipeline: VerityRAGPipeline, questions: list[tuple[str, list[str]]]) -> None:
    for i, (question, _) in enumerate(questions):
        planted = PLANTED[expected_type(question)]
        metadata = {"source": POISON_SOURCE}
        pipeline.ingest_document(f"poison-{i}", "Q&A", f"{question} The answer is {planted}.", metadata)


def _outcomes(
    pipeline: VerityRAGPipeline, questions: list[tuple[str, list[str]]], **changes: object
) -> Counter[str]:
    settings = pipeline.settings.replace(**changes)
    counts: Counter[str] = Counter()
    for question, golds in questions:
        planted = PLANTED[expected_type(question)]
        result = pipeline.query(question, settings=settings)
        outcome = _outcome(result, planted, golds)
        counts[outcome] += 1
        if outcome == "planted answer":  # the citation tells where it came from, and when
            assert {c.source for c in result.citations} & PLANTED_SOURCES
            assert all(
                c.ingested_at is not None and c.ingested_at > time.time() - 600 for c in result.citations
            )
            answer_step = result.trace[-1]
            assert answer_step.stage == "answer"
            assert {s["source"] for s in answer_step.details["sources"]} & PLANTED_SOURCES
    return counts


def poisoning_table(n_questions: int, levels: tuple[str, ...], full: bool = False) -> dict[str, Counter[str]]:
    """Outcome counts per setting: unpoisoned first (the cost of corroboration), then poisoned.

    ``full`` adds the answer path without the reader (the sentence selector's answer), and the
    limit of corroboration: a second planted document under another declared source.
    """
    questions = _questions(n_questions)
    pipeline = _planted_pipeline(Settings(), questions)
    table: dict[str, Counter[str]] = {}
    for min_sources in (1, 2):
        table[f"unpoisoned, balanced, min_sources={min_sources}"] = _outcomes(
            pipeline, questions, min_sources=min_sources
        )
    _plant(pipeline, questions)
    for level in levels:
        for min_sources in (1, 2):
            table[f"poisoned, {level}, min_sources={min_sources}"] = _outcomes(
                pipeline, questions, strictness=level, min_sources=min_sources
            )
    if not full:
        return table
    without_reader = _planted_pipeline(Settings(reader=False), questions)
    _plant(without_reader, questions)
    for min_sources in (1, 2):
        table[f"poisoned, balanced, reader off, min_sources={min_sources}"] = _outcomes(
            without_reader, questions, min_sources=min_sources
        )
    for i, (question, _) in enumerate(questions):
        planted = PLANTED[expected_type(question)]
        text = f"Asked {question.rstrip('?')}, the reply is {planted}."
        pipeline.ingest_document(f"poison-again-{i}", "Forum", text, {"source": "another-upload"})
    table["poisoned twice (two sources), balanced, min_sources=2"] = _outcomes(
        pipeline, questions, min_sources=2
    )
    return table


def _print(table: dict[str, Counter[str]]) -> None:
    outcomes = sorted({o for counts in table.values() for o in counts})
    print("\n| setting | " + " | ".join(outcomes) + " |")
    print("|---|" + "---|" * len(outcomes))
    for setting, counts in table.items():
        print(f"| {setting} | " + " | ".join(str(counts[o]) for o in outcomes) + " |")


def _check(table: dict[str, Counter[str]], n: int) -> None:
    for setting, counts in table.items():
        assert sum(counts.values()) == n, setting
        if setting.startswith("poisoned,") and setting.endswith("min_sources=2"):
            # One planted document is not enough: neither its answer nor any other text of it.
            assert counts["planted answer"] == counts["planted document, other text"] == 0, (setting, counts)
    # The threat is real without corroboration: the planted document answers somewhere.
    assert any(
        counts["planted answer"] > 0
        for s, counts in table.items()
        if s.endswith("min_sources=1") and "poisoned," in s
    )


@pytest.mark.timeout(600)
def test_planted_answer_for_20_questions_at_every_strictness() -> None:
    table = poisoning_table(20, STRICTNESS_LEVELS, full=True)
    _print(table)  # the table of docs/decisions/0041-provenance-and-corroboration.md
    _check(table, 20)
