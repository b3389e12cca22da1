"""A made-up domain, asked as a new user would: a ferry company with two ships, its fares, its
timetable, a tide mill, and two notices that disagree with the rest on one fact each.

Nothing here is in any training or calibration data. The questions are paraphrases; the ones to
refuse ask one ship a fact given only for the other, rest on a false premise, or stay on topic
where no document answers. Asked of a fresh ``VerityRAGPipeline()`` holding these documents
alone (no calibration), and beside the bundled corpus.
"""

from __future__ import annotations

import pytest

from verityrag import VerityRAGPipeline
from verityrag.pipeline import IN_MEMORY
from verityrag.types import AbstainReason, QueryResult

pytestmark = pytest.mark.integration

DOCUMENTS = [
    (
        "fleet",
        "Corran Ferries fleet",
        "Corran Ferries runs two ships between the islands. The MV Corran Bell is 88 metres long and "
        "carries 214 passengers. The MV Lissa Wren is 64 metres long and carries 120 passengers.",
    ),
    (
        "bell",
        "MV Corran Bell",
        "The MV Corran Bell was built in 1996 at the Ardmore yard. Her captain is Ewan Tolley. In 2021 "
        "she lost engine power off Skarra Point; all 214 passengers were transferred to lifeboats and "
        "nobody was injured.",
    ),
    (
        "wren",
        "MV Lissa Wren",
        "The MV Lissa Wren entered service in 2009. She was designed by the naval architect Maren "
        "Holt. Her captain is Ada Finch, who joined the company in 2015.",
    ),
    (
        "fares",
        "Fares",
        "A single ticket from Hollin Isle to Skarra Point costs 14 pounds. A return ticket from Hollin "
        "Isle to Wexcombe costs 22 pounds. Children under five travel free.",
    ),
    (
        "timetable",
        "Timetable",
        "The first crossing from Hollin Isle leaves at 6:40 every weekday. On Sundays the first "
        "crossing leaves at 9:15. The crossing to Skarra Point takes 50 minutes.",
    ),
    (
        "mill",
        "Wexcombe tide mill",
        "The tide mill at Wexcombe was built by the Ashby family in 1790. It ground corn until 1921 "
        "and is now a museum.",
    ),
    # Each disagrees with one fact above.
    ("notice", "Harbour notice", "The harbour office says the MV Lissa Wren is 70 metres long."),
    (
        "museum",
        "Wexcombe museum leaflet",
        "The museum leaflet says the Wexcombe tide mill was built by the Penrose family.",
    ),
]

ANSWERABLE = [
    ("How long is the MV Corran Bell?", "88 metres"),
    ("How many passengers can the MV Lissa Wren carry?", "120"),
    ("Who is the captain of the MV Corran Bell?", "Ewan Tolley"),
    ("Who captains the MV Lissa Wren?", "Ada Finch"),
    ("Who designed the MV Lissa Wren?", "Maren Holt"),
    ("When was the MV Corran Bell built?", "1996"),
    ("How much is a single ticket from Hollin Isle to Skarra Point?", "14 pounds"),
    ("What does a return ticket from Hollin Isle to Wexcombe cost?", "22 pounds"),
    ("When does the first weekday crossing leave Hollin Isle?", "6:40"),
    ("How long does the crossing to Skarra Point take?", "50 minutes"),
    ("Until when did the Wexcombe tide mill grind corn?", "1921"),
    ("When did the MV Lissa Wren enter service?", "2009"),
]

REFUSE = {
    "the other ship": [
        "Who designed the MV Corran Bell?",
        "When did the MV Lissa Wren lose engine power?",
        "When was the MV Lissa Wren built at the Ardmore yard?",
    ],
    "false premise": [
        "How many passengers were injured when the MV Corran Bell lost engine power in 2021?",
        "Who is the captain of the MV Skarra Star?",
        "Who built the tide mill at Hollin Isle?",
    ],
    "not in the documents": [
        "How much does a ticket from Wexcombe to Skarra Point cost?",
        "What colour is the MV Corran Bell's hull?",
        "What time is the last crossing on Sundays?",
        "thanks!",
    ],
}

DISAGREEMENTS = [
    ("How long is the MV Lissa Wren?", ("64", "70")),
    ("Who built the tide mill at Wexcombe?", ("Ashby", "Penrose")),
]


def _pipeline(with_bundled: bool) -> VerityRAGPipeline:
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY)
    if with_bundled:
        from verityrag.serve.bundled import bundled_documents

        pipeline.ingest_documents(bundled_documents(), progress=False)
    for doc_id, title, text in DOCUMENTS:
        pipeline.ingest_document(doc_id, title, text)
    return pipeline


@pytest.fixture(scope="module", params=["alone", "beside the bundled corpus"])
def ferry(request: pytest.FixtureRequest) -> VerityRAGPipeline:
    return _pipeline(request.param != "alone")


def _right(result: QueryResult, gold: str) -> bool:
    return not result.abstained and gold.lower() in (result.answer or "").lower()


def test_paraphrased_questions_are_answered_right(ferry: VerityRAGPipeline) -> None:
    wrong = {
        q: (r.abstain_reason, r.answer) for q, gold in ANSWERABLE if not _right(r := ferry.query(q), gold)
    }
    assert len(wrong) <= len(ANSWERABLE) // 5, wrong  # at least 80% right


# Missed (the target is 9 in 10): 7 of 10 refused alone and beside the bundled corpus; answered:
# "When did the MV Lissa Wren lose engine power?" (its entry into service), the injured-passengers
# false premise (214, the transferred), a fare of another route, "the last crossing on Sundays"
# (the first one). strict: the day they are refused, this says so.
@pytest.mark.xfail(strict=True, reason="9 in 10 of these refused is a target not reached yet")
def test_other_entity_false_premise_and_unanswered_questions_are_refused(ferry: VerityRAGPipeline) -> None:
    questions = [q for group in REFUSE.values() for q in group]
    answered = {q: r.answer for q in questions if not (r := ferry.query(q)).abstained}
    assert len(answered) <= len(questions) // 10, answered  # at least 90% refused


def test_a_question_about_a_name_no_document_holds_says_which(ferry: VerityRAGPipeline) -> None:
    result = ferry.query("Who is the captain of the MV Skarra Star?")
    assert result.abstained
    assert "Skarra Star" in (result.explanation or "")


@pytest.mark.parametrize(("question", "values"), DISAGREEMENTS)
def test_documents_that_disagree_are_reported(
    ferry: VerityRAGPipeline, question: str, values: tuple[str, str]
) -> None:
    result = ferry.query(question)  # report_conflicts is on by default
    assert result.abstain_reason == AbstainReason.CONFLICT, result.answer
    assert all(v in (result.explanation or "") for v in values), result.explanation
