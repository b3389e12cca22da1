"""Claim decomposition of answer sentences."""

from __future__ import annotations

import pytest

from verityrag.verify import answer_claims, split_claims
from verityrag.verify.claims import MIN_CLAIM_WORDS, claim_spans

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        (
            "Watt improved the engine in 1769, but Newcomen built the first one in 1712.",
            ["Watt improved the engine in 1769", "Newcomen built the first one in 1712."],
        ),
        (
            "The engine burns coal; the steam drives a piston.",
            ["The engine burns coal", "the steam drives a piston."],
        ),
        (
            "Coal is cheap, whereas oil costs a lot more.",
            ["Coal is cheap", "oil costs a lot more."],
        ),
        (
            "The pump ran all day, while the miners slept in town.",
            ["The pump ran all day", "the miners slept in town."],
        ),
        (
            "The engine converts heat into work, which drives the pistons forward.",
            ["The engine converts heat into work", "which drives the pistons forward."],
        ),
        (
            "The engine burns coal, and the steam drives a piston in the cylinder.",
            ["The engine burns coal", "the steam drives a piston in the cylinder."],
        ),
    ],
    ids=["but", "semicolon", "whereas", "while", "which", "and-long-clause"],
)
def test_split_claims_clause_separator_splits_into_clauses(sentence: str, expected: list[str]) -> None:
    assert split_claims(sentence) == expected


def test_split_claims_serial_comma_and_short_tail_keeps_sentence_whole() -> None:
    sentence = "He studied physics, chemistry, and mathematics at Oxford."
    assert split_claims(sentence) == [sentence]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("Steam is hot; it expands.", ["Steam is hot; it expands."]),
        ("Yes; the engine converts heat into work.", ["Yes; the engine converts heat into work."]),
        ("Paris, which is big.", ["Paris, which is big."]),
    ],
    ids=["short-tail", "short-head", "short-both"],
)
def test_split_claims_piece_under_three_words_merges_with_neighbour(
    sentence: str, expected: list[str]
) -> None:
    assert split_claims(sentence) == expected


@pytest.mark.parametrize("sentence", ["", "   ", "...", ";;"])
def test_split_claims_no_words_returns_empty(sentence: str) -> None:
    assert split_claims(sentence) == []


def test_split_claims_many_separators_no_claim_under_min_words() -> None:
    sentence = "A b c; d, but e f g h, which i j; k l, and m n o p q; r."
    claims = split_claims(sentence)
    assert claims
    assert all(len(c.replace(",", " ").replace(";", " ").split()) >= MIN_CLAIM_WORDS for c in claims)


def test_claim_spans_offsets_point_into_sentence() -> None:
    sentence = "Watt improved the engine in 1769, but Newcomen built the first one in 1712."
    spans = claim_spans(sentence)
    assert [sentence[s:e] for s, e in spans] == split_claims(sentence)
    assert spans == sorted(spans)


def test_answer_claims_several_sentences_tags_each_claim_with_sentence_index() -> None:
    sentences = [
        "The engine burns coal; the steam drives a piston.",
        "",
        "Watt added a separate condenser.",
    ]
    assert answer_claims(sentences) == [
        (0, "The engine burns coal"),
        (0, "the steam drives a piston."),
        (2, "Watt added a separate condenser."),
    ]
