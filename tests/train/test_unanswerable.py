"""The synthetic-unanswerable edits of verityrag.train.unanswerable, on hand-made examples."""

from __future__ import annotations

import random
from types import ModuleType

import pytest

from verityrag.train import unanswerable

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def ad() -> ModuleType:
    return unanswerable


PARAGRAPH = "Beyonce rose to fame in 1997 as the lead singer of Destiny's Child. She was born in Houston."


def test_entity_swap_picks_a_same_shape_entity_absent_from_the_paragraph(ad: ModuleType) -> None:
    pool = {"name1": ["Houston", "BEYONCE", "Chopin"], "year": ["1997", "1810"]}
    for seed in range(20):
        new = ad.swap_entity("When did Beyonce become famous?", PARAGRAPH, pool, random.Random(seed))
        assert new == "When did Chopin become famous?"  # Houston and BEYONCE are in the paragraph
    new = ad.swap_entity("What happened to her in 1997?", PARAGRAPH, pool, random.Random(0))
    assert new == "What happened to her in 1810?"


def test_entity_swap_keeps_multiword_names_whole_and_skips_the_first_word(ad: ModuleType) -> None:
    pool = {"name2": ["Frederic Chopin"], "name1": ["Warsaw"]}
    new = ad.swap_entity("Who sang with Destiny's Child?", PARAGRAPH, pool, random.Random(0))
    assert new == "Who sang with Frederic Chopin?"
    # "Houston" starts the question: capitalised as a sentence start, so not swapped.
    assert ad.swap_entity("Houston is where she was born?", PARAGRAPH, pool, random.Random(0)) is None


def test_entity_swap_returns_none_when_nothing_applies(ad: ModuleType) -> None:
    pool = {"name1": ["Chopin"], "year": ["1810"]}
    # No entity of the question is in the paragraph.
    assert ad.swap_entity("When did Madonna become famous?", PARAGRAPH, pool, random.Random(0)) is None
    # No entity at all.
    assert ad.swap_entity("what did she sing?", PARAGRAPH, pool, random.Random(0)) is None
    # Only replacements that are in the paragraph.
    assert (
        ad.swap_entity("When did Beyonce sing?", PARAGRAPH, {"name1": ["Houston"]}, random.Random(0)) is None
    )


def test_entity_shapes(ad: ModuleType) -> None:
    assert ad._shape("1997") == "year"
    assert ad._shape("1,000") == "number4"
    assert ad._shape("21") == "number2"
    assert ad._shape("March") == "month"
    assert ad._shape("NASA") == "acronym"
    assert ad._shape("Chopin") == "name1"
    assert ad._shape("New York City") == "name3"
    text = "Which album of 2003 sold 1,000 copies by 2/21/2016 in New York City?"
    assert [text[a:b] for a, b in ad.entities(text)] == ["2003", "1,000", "New York City"]
    text = "Which album by Destiny's Child was B'Day?"
    assert [text[a:b] for a, b in ad.entities(text)] == ["Destiny's Child", "B'Day"]


def test_entity_pool_keeps_names_seen_twice(ad: ModuleType) -> None:
    pool = ad.entity_pool(
        ["Chopin went to Paris, as Chopin did in 1831.", "Then Chopin left Warsaw in 1830."]
    )
    # The first "Chopin" starts a sentence; Warsaw and Paris are seen once.
    assert pool == {"name1": {"Chopin"}, "year": {"1830", "1831"}}


def test_antonym_keeps_case_and_word_boundaries(ad: ModuleType) -> None:
    support = ["Her debut album came out in 2003."]
    assert ad.swap_antonym("What was her first album?", support) == "What was her last album?"
    assert ad.swap_antonym("First, what was her album?", support) == "Last, what was her album?"
    assert ad.swap_antonym("Firstly, what did she sing?", support) is None
    assert ad.swap_antonym("What was her biggest hit?", support) == "What was her smallest hit?"
    assert ad.swap_antonym("When was soap first used?", support) is None  # adverb: left alone


def test_antonym_is_not_made_when_the_answer_sentence_holds_the_new_word(ad: ModuleType) -> None:
    assert ad.swap_antonym("What was her first album?", ["Her last album came out in 2003."]) is None
    # The next candidate word is used instead.
    assert (
        ad.swap_antonym("What was her first album before 2003?", ["Her LAST album came out in 2003."])
        == "What was her first album after 2003?"
    )


def test_negation_goes_on_the_first_auxiliary(ad: ModuleType) -> None:
    support = ["Beyonce built a house in Houston."]
    assert ad.negate("What did Beyonce build?", support) == "What didn't Beyonce build?"
    assert ad.negate("Who was the first to build it?", support) == "Who wasn't the first to build it?"
    assert ad.negate("Is it in Houston?", support) == "Isn't it in Houston?"
    assert ad.negate("Where is the island?", support) == "Where isn't the island?"  # "is", not "island"


def test_negation_is_not_made_when_a_negation_is_already_there(ad: ModuleType) -> None:
    assert ad.negate("What did Beyonce build?", ["Beyonce never built a house."]) is None
    assert ad.negate("What did Beyonce build?", ["Beyonce didn't build a house."]) is None
    assert ad.negate("What didn't Beyonce build?", ["Beyonce built a house."]) is None
    assert ad.negate("Who built the house?", ["Beyonce built a house."]) is None  # no auxiliary


def test_answer_sentences_follow_the_answer_span(ad: ModuleType) -> None:
    start = PARAGRAPH.index("Houston")
    assert ad.answer_sentences(PARAGRAPH, [{"text": "Houston", "answer_start": start}]) == [
        "She was born in Houston."
    ]


def test_synthetic_unanswerable_returns_an_edit_and_its_kind(ad: ModuleType) -> None:
    answers = [{"text": "1997", "answer_start": PARAGRAPH.index("1997")}]
    made = ad.synthetic_unanswerable(
        "When did Beyonce become famous?", PARAGRAPH, answers, {"name1": ["Chopin"]}, random.Random(0)
    )
    assert made is not None
    assert made[1] in {"synthetic_entity_swap", "synthetic_negation"}
    assert made[0] != "When did Beyonce become famous?"
    assert ad.synthetic_unanswerable("what sang she?", PARAGRAPH, answers, {}, random.Random(0)) is None


def test_typed_entity_swap_keeps_the_ner_type(ad: ModuleType) -> None:
    types = {"Beyonce": "PERSON", "Chopin": "PERSON", "Celsius": "ORG", "Houston": "GPE", "Warsaw": "GPE"}
    texts = ["Later Chopin met Celsius in Warsaw.", "Later Chopin and Celsius left Warsaw in 1830."]
    pool = {k: sorted(v) for k, v in ad.entity_pool(texts, types=types).items()}
    assert pool == {
        "name:PERSON": ["Chopin"],
        "name:ORG": ["Celsius"],
        "name:GPE": ["Warsaw"],
        "year": ["1830"],
    }
    for seed in range(10):  # a person only ever becomes a person
        new = ad.swap_entity("When did Beyonce become famous?", PARAGRAPH, pool, random.Random(seed), types)
        assert new == "When did Chopin become famous?"
    # A name the tagger never labelled is not swapped (untyped, it could become anything).
    assert ad.swap_entity("Who sang with Destiny's Child?", PARAGRAPH, pool, random.Random(0), types) is None
    # Numbers keep their shape pool.
    assert ad.swap_entity("What happened in 1997?", PARAGRAPH, pool, random.Random(0), types) == (
        "What happened in 1830?"
    )
    assert ad.pool_key("Chopin", types) == "name:PERSON"
    assert ad.pool_key("Chopin") == "name1"
    assert ad.pool_key("Tibet", types) is None
