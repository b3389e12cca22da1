"""How the reader-check-data recipe (verityrag.train.reader_check_data) turns HaluEval QA items into reading practice for the reader."""

from __future__ import annotations

from types import ModuleType

import pytest

from verityrag.train import reader_check_data

pytestmark = pytest.mark.unit


def _item(question: str, answer: str, knowledge: str) -> dict[str, str]:
    return {"question": question, "right_answer": answer, "knowledge": knowledge}


ITEMS = [
    _item(
        "Where was Arthur's Magazine published?",
        "Philadelphia",
        "Arthur's Magazine was published in Philadelphia.",
    ),
    _item("Is the Amazon a river?", "yes", "The Amazon is a river in South America."),
    _item(
        "Who founded Acme?", "John Smith", "Acme is a company that makes anvils."
    ),  # answer not in the text
    _item("When did the Rhine flood?", "1995", "The Rhine flooded in 1995 and again later."),
]


@pytest.fixture(scope="module")
def rd() -> ModuleType:
    return reader_check_data


def test_answerable_pairs_carry_their_answer_and_skip_yes_no_and_missing_answers(rd: ModuleType) -> None:
    rows = rd.reader_pairs(ITEMS, unrelated_every=0)
    assert [(r["title"], r["answers"], r["label"]) for r in rows] == [
        ("halueval-0", ["Philadelphia"], 1),
        ("halueval-3", ["1995"], 1),
    ]
    assert all(r["kind"] == "halueval_answerable" for r in rows)
    assert "Philadelphia" in rows[0]["evidence"]


def test_unrelated_negatives_pair_a_question_with_the_next_items_knowledge(rd: ModuleType) -> None:
    rows = [r for r in rd.reader_pairs(ITEMS, unrelated_every=2) if r["kind"] == "halueval_unrelated"]
    assert [(r["question"], r["evidence"], r["label"], r["answers"]) for r in rows] == [
        (ITEMS[0]["question"], ITEMS[1]["knowledge"], 0, []),
        (ITEMS[2]["question"], ITEMS[3]["knowledge"], 0, []),
    ]


def test_items_past_the_guard_training_range_are_refused(rd: ModuleType) -> None:
    with pytest.raises(SystemExit):
        rd.main(["--items", "8000"])


TWO_PASSAGES = _item(
    "Which city hosted the magazine's founder?",
    "Philadelphia",
    "Arthur's Magazine was an American literary periodical. It was founded by T.S. Arthur. "
    "T.S. Arthur lived in Philadelphia for most of his life.",
)


def test_answer_removed_negatives_keep_the_passage_less_every_answer_sentence(rd: ModuleType) -> None:
    rows = rd.reader_pairs([TWO_PASSAGES], unrelated_every=0, removed_every=1)
    assert [r["kind"] for r in rows] == ["halueval_answerable", "halueval_answer_removed"]
    removed = rows[1]
    assert (removed["label"], removed["answers"]) == (0, [])
    assert "Philadelphia" not in removed["evidence"]
    assert "founded by T.S. Arthur" in removed["evidence"]


def test_answer_removed_negatives_need_something_left_and_come_every_nth_answerable(rd: ModuleType) -> None:
    # ITEMS[0] is one sentence that holds its answer: nothing would be left, so no negative.
    assert rd.answer_removed(ITEMS[0]["knowledge"], "Philadelphia") == ""
    # Answerable items are ITEMS[0], ITEMS[3] and TWO_PASSAGES; every 3rd is TWO_PASSAGES.
    rows = rd.reader_pairs([*ITEMS, TWO_PASSAGES], unrelated_every=0, removed_every=3)
    assert [r["title"] for r in rows if r["kind"] == "halueval_answer_removed"] == ["halueval-4"]
    # Off by default: the reader's pairs are unchanged.
    assert not [r for r in rd.reader_pairs([TWO_PASSAGES], unrelated_every=0) if r["label"] == 0]
