"""The product promise on a corpus the models never saw: answer what the documents say, refuse the rest.

Four made-up documents about a kettle maker, the shipped models (reader, sentence selector,
sufficiency gate) as a user gets them, no calibration on these documents. Stated facts are
answered with the right short answer; a fact the documents lack (a price, a chief executive),
a false premise (a founder they do not name) and chit-chat are refused.
"""

from __future__ import annotations

import pytest

from verityrag import VerityRAGPipeline
from verityrag.types import Document

pytestmark = pytest.mark.integration

DOCUMENTS = [
    Document(
        "halcyon-about",
        "About Halcyon Appliances",
        "Halcyon Appliances was founded in 1987 by Mara Lind in Ostby, a small town in Sweden. "
        "The company started as a repair shop for household appliances. Today it employs about "
        "300 people and sells its kettles in twelve countries.",
    ),
    Document(
        "halcyon-pro",
        "The Halcyon Pro kettle",
        "The Halcyon Pro is an electric kettle with a capacity of 1.7 litres. Its body is made of "
        "brushed stainless steel, and it boils a full load of water in about four minutes. The "
        "kettle switches itself off when the water boils.",
    ),
    Document(
        "halcyon-factory",
        "Manufacturing",
        "All Halcyon kettles are assembled in the company's factory in Ostby. The heating elements "
        "are supplied by a partner in Germany. Each kettle is tested for leaks before it leaves "
        "the factory.",
    ),
    Document(
        "halcyon-warranty",
        "Warranty",
        "Halcyon gives a five-year warranty on its kettles. Customers who register their kettle "
        "online get one more year of warranty. Repairs under warranty are free of charge.",
    ),
]

ANSWERED = [
    ("Who founded Halcyon Appliances?", "Mara Lind"),
    ("What is the capacity of the Halcyon Pro kettle?", "1.7 litres"),
    ("In which year was Halcyon Appliances founded?", "1987"),
    ("Where are Halcyon kettles assembled?", "Ostby"),
]
REFUSED = [
    "How much does the Halcyon Pro kettle cost?",
    "Who is the chief executive of Halcyon Appliances?",
    "In which year did Tom Berg found Halcyon Appliances?",
    "help",
    "thanks!",
]


@pytest.fixture(scope="module")
def pipeline() -> VerityRAGPipeline:
    p = VerityRAGPipeline()
    p.ingest_documents(DOCUMENTS, progress=False)
    return p


@pytest.mark.parametrize(("question", "answer"), ANSWERED)
def test_a_stated_fact_is_answered_with_its_span(
    pipeline: VerityRAGPipeline, question: str, answer: str
) -> None:
    result = pipeline.query(question)
    assert not result.abstained, (result.abstain_reason, result.explanation)
    assert result.short_answer is not None
    assert answer in result.short_answer.text
    assert result.short_answer.text in (result.answer or "")


@pytest.mark.parametrize("question", REFUSED)
def test_what_the_documents_do_not_say_is_refused_with_a_reason(
    pipeline: VerityRAGPipeline, question: str
) -> None:
    result = pipeline.query(question)
    assert result.abstained, (result.answer, result.short_answer)
    assert result.explanation


def test_paranoid_refuses_at_least_what_balanced_refuses(pipeline: VerityRAGPipeline) -> None:
    paranoid = pipeline.settings.replace(strictness="paranoid")
    for question, _ in ANSWERED:
        if pipeline.query(question).abstained:
            assert pipeline.query(question, settings=paranoid).abstained
