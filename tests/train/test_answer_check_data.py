"""The answer check's pairs from a SQuAD article: gold answers, plausible answers, nearby answers."""

from __future__ import annotations

import random

import pytest

from verityrag.train.answer_check_data import sentences_at, squad_pairs

pytestmark = pytest.mark.unit

CONTEXT = "The Halcyon works opened in 1891 in Ostby. Mara Lind ran it until 1920. It made kettles and irons."


def _article() -> dict:
    at = CONTEXT.index
    return {
        "title": "Halcyon",
        "paragraphs": [
            {
                "context": CONTEXT,
                "qas": [
                    {
                        "id": "a",
                        "question": "When did the works open?",
                        "answers": [{"text": "1891", "answer_start": at("1891")}],
                    },
                    {
                        "id": "b",
                        "question": "Who ran the works?",
                        "answers": [{"text": "Mara Lind", "answer_start": at("Mara Lind")}],
                    },
                    {
                        "id": "c",
                        "question": "Who ran the works after 1920?",
                        "answers": [],
                        "is_impossible": True,
                        "plausible_answers": [{"text": "Mara Lind", "answer_start": at("Mara Lind")}],
                    },
                    {"id": "d", "question": "What did the works sell?", "answers": [], "is_impossible": True},
                ],
            }
        ],
    }


def test_gold_answers_are_right_and_nearby_and_plausible_ones_wrong() -> None:
    rows = list(
        squad_pairs(
            _article(),
            "squad",
            1.0,
            random.Random(0),
            {"d": {"text": "kettles", "answer_start": CONTEXT.index("kettles")}},
        )
    )
    found = {(r["question"], r["label"], r["kind"]): r["evidence"] for r in rows}
    assert (
        found[("When did the works open? Answer: 1891", 1, "answerable")]
        == "The Halcyon works opened in 1891 in Ostby."
    )
    assert ("When did the works open? Answer: Mara Lind", 0, "other_answer") in found
    assert (
        found[("Who ran the works after 1920? Answer: Mara Lind", 0, "unanswerable")]
        == "Mara Lind ran it until 1920."
    )
    # Without plausible answers, the reader's span for the unanswerable question stands in.
    assert (
        found[("What did the works sell? Answer: kettles", 0, "unanswerable")] == "It made kettles and irons."
    )
    # Without one either, an unanswerable question gives no pair.
    assert not [r for r in squad_pairs(_article(), "squad", 0.0, random.Random(0)) if "sell" in r["question"]]


def test_a_span_over_two_sentences_quotes_both() -> None:
    start = CONTEXT.index("Ostby")
    assert sentences_at(CONTEXT, start, CONTEXT.index("Lind") + 4) == CONTEXT[: CONTEXT.index(" It made")]
