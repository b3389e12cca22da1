"""Headings: section names on lines of their own, context and never an answer."""

from __future__ import annotations

import pytest

from verityrag.text.sections import heading_before, heading_flags, is_heading
from verityrag.text.sentences import sentence_spans

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "line",
    [
        "Opening hours",
        "Ruth Pellow - Brackenford manager",
        "FAVOURITES AND PRICES",
        "Fresh every morning since 1987",
    ],
)
def test_a_short_line_without_end_punctuation_is_a_heading(line: str) -> None:
    assert is_heading(line)


@pytest.mark.parametrize(
    "line",
    [
        "Do you deliver?",
        "Sourdough: £3.80",
        "Phone: 01632 960418",
        "- Card only",
        "1. Fill in a form",
        "Day; Brackenford; Ostley Cross",
        "Loaf: White bloomer; Price: £3.10",
        "It opened in 1987.",
        "a line in lower case",
        "One two three four five six seven eight nine ten eleven twelve thirteen",
    ],
)
def test_questions_items_rows_values_and_sentences_are_not(line: str) -> None:
    assert not is_heading(line)


def test_a_heading_is_a_whole_line() -> None:
    text = "Bread\n\nWe bake daily. Nothing without a stop\n\nCakes"
    spans = sentence_spans(text)
    assert [text[s:e] for s, e in spans] == ["Bread", "We bake daily.", "Nothing without a stop", "Cakes"]
    assert heading_flags(text, spans) == [True, False, False, True]  # the third ends a line, not is one
    assert heading_flags("Prose without a line break", [(0, 26)]) == [False]
    assert heading_before(text, text.index("We")) == (0, 5)
    assert heading_before(text, 0) is None
