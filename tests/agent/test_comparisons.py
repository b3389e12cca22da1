"""Comparisons of time: the two things a question compares, each dated by its document's opening."""

from __future__ import annotations

import pytest

from verityrag.agent.comparisons import Dated, TimeComparison, dated, time_comparison, winner, year_of
from verityrag.types import Chunk, Hit

pytestmark = pytest.mark.unit


def _hit(doc_id: str, title: str, text: str) -> Hit:
    return Hit(Chunk(f"{doc_id}#0", doc_id, title, text, 0, 0, len(text)), 1.0)


@pytest.mark.parametrize(
    ("question", "options", "earliest", "death"),
    [
        (
            "Which was released first, Dinosaur or The Happiest Millionaire?",
            ("Dinosaur", "The Happiest Millionaire"),
            True,
            False,
        ),
        ("Who was born first Kevin Reynolds or Jan Bucquoy?", ("Kevin Reynolds", "Jan Bucquoy"), True, False),
        (
            "who passed away first Perry N. Vekroff or Paul Cox ?",
            ("Perry N. Vekroff", "Paul Cox"),
            True,
            True,
        ),
        ("Which rock band is younger, Liars or Mallory Knox?", ("Liars", "Mallory Knox"), False, False),
    ],
)
def test_the_question_names_two_things_and_which_way_it_compares(
    question: str, options: tuple[str, str], earliest: bool, death: bool
) -> None:
    assert time_comparison(question) == TimeComparison(options, earliest, death)


@pytest.mark.parametrize(
    "question",
    [
        "Which genus has more species, Nandina or Photinia?",  # not of time
        "Who founded the Lotus Group?",  # nothing compared
        "Is Liars older than Mallory Knox?",  # compared, but not as "A or B"
    ],
)
def test_other_questions_are_no_comparison_of_time(question: str) -> None:
    assert time_comparison(question) is None


def test_a_documents_opening_dates_it_and_a_life_span_gives_birth_or_death() -> None:
    life = _hit(
        "mann", "Anthony Mann", "Anthony Mann (June 30, 1906 – April 29, 1967) was an American director."
    )
    assert year_of(life, death=False)[0] == 1906  # type: ignore[index]
    assert year_of(life, death=True)[0] == 1967  # type: ignore[index]
    band = _hit("liars", "Liars", "Liars are a rock band formed in 2000 in Los Angeles.")
    assert year_of(band, death=False)[0] == 2000  # type: ignore[index]
    assert year_of(band, death=True) is None  # no life span: no year of death


def test_the_earlier_wins_and_a_thing_no_document_dates_is_said() -> None:
    comparison = TimeComparison(("Liars", "Mallory Knox"), earliest=True, death=False)
    hits = [
        _hit("liars", "Liars", "Liars are a rock band formed in 2000 in Los Angeles."),
        _hit("knox", "Mallory Knox", "Mallory Knox were a rock band formed in 2013 in Cambridge."),
    ]
    both = dated(comparison, hits, lambda name: [])
    assert all(isinstance(d, Dated) for d in both)
    chosen = winner(comparison, both)  # type: ignore[arg-type]
    assert chosen is not None
    assert chosen.option == "Liars"
    assert chosen.name is not None
    assert chosen.name.text == "Liars"
    assert winner(TimeComparison(comparison.options, False, False), both).option == "Mallory Knox"  # type: ignore[arg-type, union-attr]
    assert dated(comparison, hits[:1], lambda name: []) == [both[0], "Mallory Knox"]
