"""Sentence splitting with spans into the source text."""

from __future__ import annotations

import itertools

import pytest

from verityrag.text.sentences import sentence_spans, split_sentences

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Dr. Smith arrived. He left.", ["Dr. Smith arrived.", "He left."]),
        (
            "Mr. and Mrs. Smith went to St. Louis. They liked it.",
            ["Mr. and Mrs. Smith went to St. Louis.", "They liked it."],
        ),
        ("The U.S. Army won the war. Then it rested.", ["The U.S. Army won the war.", "Then it rested."]),
        (
            "J. R. R. Tolkien wrote books. He died in 1973.",
            ["J. R. R. Tolkien wrote books.", "He died in 1973."],
        ),
        ("See e.g. this one. And i.e. that.", ["See e.g. this one.", "And i.e. that."]),
        (
            "He said no. It is No. 5 of nos. 3 and 5. Done.",
            ["He said no.", "It is No. 5 of nos. 3 and 5.", "Done."],
        ),
    ],
    ids=["title", "titles-and-saint", "u.s.", "initials", "e.g.-i.e.", "no.-only-before-a-number"],
)
def test_split_sentences_abbreviations_do_not_end_sentences(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_split_sentences_closing_quote_stays_with_its_sentence() -> None:
    assert split_sentences('He said "Stop." Then he left.') == ['He said "Stop."', "Then he left."]


def test_split_sentences_sentence_opening_with_quote_starts_new_sentence() -> None:
    assert split_sentences('It ended. "Why?" she asked. (Nobody knew.)') == [
        "It ended.",
        '"Why?" she asked.',
        "(Nobody knew.)",
    ]


def test_split_sentences_question_and_exclamation_marks_end_sentences() -> None:
    assert split_sentences("Why? Because! Yes.") == ["Why?", "Because!", "Yes."]


def test_split_sentences_digit_after_period_starts_new_sentence() -> None:
    assert split_sentences("It cost 5. 3 people came.") == ["It cost 5.", "3 people came."]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("He wrote poems. Đuka never read them.", ["He wrote poems.", "Đuka never read them."]),
        ("Llegó tarde. Él no sabía.", ["Llegó tarde.", "Él no sabía."]),
        ("Es endete.» «Ölund» begann.", ["Es endete.»", "«Ölund» begann."]),
        ("Es war vorbei. „Doch“, sagte er.", ["Es war vorbei.", "„Doch“, sagte er."]),
        ("It was 1945. ١٩٤٦ followed.", ["It was 1945.", "١٩٤٦ followed."]),
        ("It rained. über alles.", ["It rained. über alles."]),
        ("זה נגמר. שלום לכולם.", ["זה נגמר.", "שלום לכולם."]),
    ],
)
def test_split_sentences_capitals_and_digits_of_any_script_start_sentences(
    text: str, expected: list[str]
) -> None:
    assert split_sentences(text) == expected


def test_split_sentences_lowercase_after_period_does_not_split() -> None:
    assert split_sentences("Version 2.5 was out. it was fine.") == ["Version 2.5 was out. it was fine."]


def test_split_sentences_decimal_number_does_not_split() -> None:
    assert split_sentences("Pi is 3.14 roughly. Yes.") == ["Pi is 3.14 roughly.", "Yes."]


def test_sentence_spans_index_into_text_without_surrounding_whitespace() -> None:
    text = "  First one here.\n\nSecond one?   Third!  "
    spans = sentence_spans(text)
    assert [text[s:e] for s, e in spans] == ["First one here.", "Second one?", "Third!"]
    assert all(s < e for s, e in spans)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


def test_sentence_spans_gaps_between_sentences_are_whitespace_only() -> None:
    text = 'Alpha rose. "Beta fell!" Gamma (stayed). Delta? Epsilon.'
    spans = sentence_spans(text)
    gaps = [text[a[1] : b[0]] for a, b in itertools.pairwise(spans)]
    assert len(spans) == 5
    assert all(gap.strip() == "" for gap in gaps)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_sentence_spans_blank_text_returns_nothing(text: str) -> None:
    assert sentence_spans(text) == []


def test_split_sentences_no_end_punctuation_returns_whole_text() -> None:
    assert split_sentences("a fragment without an end") == ["a fragment without an end"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "He met \u201cDr. Smith\u201d at noon. It rained.",
            ["He met \u201cDr. Smith\u201d at noon.", "It rained."],
        ),
        ("See [Fig. 3] for it. Then stop.", ["See [Fig. 3] for it.", "Then stop."]),
        (
            "\u201cJ. R. R. Tolkien wrote it,\u201d she said. Then she left.",
            ["\u201cJ. R. R. Tolkien wrote it,\u201d she said.", "Then she left."],
        ),
        (
            "Er traf \u201eDr. M\u00fcller\u201c dort. Gut.",
            ["Er traf \u201eDr. M\u00fcller\u201c dort.", "Gut."],
        ),
    ],
    ids=["curly-quote-title", "bracket-fig", "curly-quote-initials", "low-quote-title"],
)
def test_split_sentences_abbreviation_after_curly_quote_or_bracket_does_not_split(
    text: str, expected: list[str]
) -> None:
    assert split_sentences(text) == expected


def test_split_sentences_no_before_a_number_across_whitespace_or_at_the_end() -> None:
    # The look-ahead after "no." scans in place (slicing the rest of the text made every "no."
    # O(len(text)): a 1 MB text of them took 4.5 s, now 0.34 s; measured, not timed here).
    assert split_sentences("See no. \t  5 on the list. Then stop.") == [
        "See no. \t  5 on the list.",
        "Then stop.",
    ]
    assert split_sentences("He said no. Then he left.") == ["He said no.", "Then he left."]
    assert split_sentences("The answer is no.") == ["The answer is no."]
    assert split_sentences("He said no.   ") == ["He said no."]


def test_a_line_break_ends_a_heading_a_row_and_a_list_item() -> None:
    text = (
        "Opening hours\n"
        "Day: Saturday; Brackenford: 7am to 4pm\n"
        "- Card only since January 2024\n"
        "Sourdough ........ £3.80\n"
        "Do you deliver?\n"
        "Not to homes, sorry."
    )
    assert split_sentences(text) == [
        "Opening hours",
        "Day: Saturday; Brackenford: 7am to 4pm",
        "- Card only since January 2024",
        "Sourdough ........ £3.80",
        "Do you deliver?",
        "Not to homes, sorry.",
    ]


def test_a_wrapped_line_goes_on_with_its_sentence() -> None:
    wrapped = (
        "The original shop at 14 Quarry Lane, Brackenford has been trading since Walter and\n"
        "June Pellow opened it in 1987. It is managed by\n"
        "their daughter."
    )
    assert split_sentences(wrapped) == [
        "The original shop at 14 Quarry Lane, Brackenford has been trading since Walter and\n"
        "June Pellow opened it in 1987.",
        "It is managed by\ntheir daughter.",
    ]


def test_a_blank_line_always_ends_a_sentence() -> None:
    text = "A long line of prose that stops without any punctuation at its end at all\n\nNext block"
    assert split_sentences(text) == [
        "A long line of prose that stops without any punctuation at its end at all",
        "Next block",
    ]
