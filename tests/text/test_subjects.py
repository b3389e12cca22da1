"""What a question is about, and whether a passage (with its title) names it."""

from __future__ import annotations

import pytest

from verityrag.text.subjects import missing_subjects, question_subjects, text_terms

pytestmark = pytest.mark.unit


def _texts(question: str) -> list[str]:
    return [s.text for s in question_subjects(question)]


@pytest.mark.parametrize(
    ("question", "subjects"),
    [
        ("How long is the MV Lissa Wren in metres?", ["MV Lissa Wren"]),
        ("Who designed the Bank of England in 1734?", ["Bank of England", "1734"]),
        ('Who wrote "The Quiet Harbour"?', ["The Quiet Harbour"]),
        ("Where did the Normans settle?", ["Normans"]),
        ("What is the capital of France?", ["France"]),
        ("What costumes did the V&A's curators buy?", ["V&A"]),
        ("Beyonce Knowles was born where?", ["Beyonce Knowles"]),
        ("Approximately how many items are there?", []),  # a capitalised first word alone is no name
        ("How many passengers were injured in 2021?", ["2021"]),
        ("Who won Super Bowl 50?", ["Super Bowl 50"]),
    ],
)
def test_the_subjects_of_a_question(question: str, subjects: list[str]) -> None:
    assert _texts(question) == subjects


def test_a_passage_about_the_other_ship_does_not_name_the_one_asked_about() -> None:
    subjects = question_subjects("How long is the MV Lissa Wren in metres?")
    other = text_terms(["The MV Corran Bell is 88 metres long and carries 214 passengers.", "Corran Bell"])
    own = text_terms(["She is 72 metres long.", "MV Lissa Wren"])  # "she", the title names the ship
    assert [s.text for s in missing_subjects(subjects, other)] == ["MV Lissa Wren"]
    assert missing_subjects(subjects, own) == []


@pytest.mark.parametrize(
    ("question", "passage", "title"),
    [
        ("Where did the Normans settle?", "The Norman conquest began in 1066.", "Normandy"),
        ("What rate of unionization do Scandinavian nations have?", "Scandinavia has high rates.", "Unions"),
        ("When did the V&A open its doors?", "The museum opened in 1852.", "Victoria and Albert Museum"),
        (
            "How deep is the River Thames at London Bridge?",
            "The Thames is 8 m deep at London Bridge.",
            "Rivers",
        ),
        ("What happened in 1,200 BC?", "Around 1200 BC the palaces fell.", "Bronze Age collapse"),
    ],
)
def test_other_forms_of_a_name_still_name_it(question: str, passage: str, title: str) -> None:
    assert missing_subjects(question_subjects(question), text_terms([passage, title])) == []


def test_a_year_the_passage_does_not_give_is_missing() -> None:
    subjects = question_subjects(
        "How many passengers were injured when the MV Corran Bell lost power in 2021?"
    )
    terms = text_terms(["In 2019 the MV Corran Bell lost power; nobody was injured.", "MV Corran Bell"])
    assert [s.text for s in missing_subjects(subjects, terms)] == ["2021"]
