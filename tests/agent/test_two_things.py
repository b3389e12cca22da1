"""Questions about two named things decided by their documents (verityrag.agent.two_things)."""

from __future__ import annotations

import pytest

from verityrag.agent.two_things import (
    TwoThings,
    may_ask_two_things,
    nations,
    said,
    two_things_asked,
    verdict,
    verdict_answer,
    which_question,
    yes_no_question,
)
from verityrag.types import Chunk, Hit

pytestmark = pytest.mark.unit

DOCUMENTS = {
    "Kings of Leon": "Kings of Leon is an American rock band that formed in Nashville, Tennessee in 1999.",
    "The New Pornographers": "The New Pornographers are a Canadian indie rock band formed in 1997 in Vancouver.",
    "Gin and tonic": "A gin and tonic is a highball cocktail made with gin and tonic water poured over ice.",
    "Paloma": "The paloma is a cocktail prepared by mixing tequila with a grapefruit-flavored soda.",
    "Scott Derrickson": "Scott Derrickson (born July 16, 1966) is an American director, screenwriter and producer.",
    "Ed Wood": "Edward Davis Wood Jr. (1924-1978) was an American filmmaker, actor, writer and producer.",
    "Bella": "Bella is a weekly women's magazine published in the United Kingdom by H. Bauer.",
    "Al Jamila": "Al Jamila is an Arabic-language women's magazine published in Saudi Arabia.",
    "Morrissey": "Steven Patrick Morrissey is an English singer and lyricist, born in Manchester.",
}


def _hit(title: str) -> Hit:
    text = DOCUMENTS[title]
    return Hit(Chunk(f"{title}:0", title, title, text, 0, 0, len(text)), 1.0)


def has_document(name: str) -> bool:
    return name.lower().removeprefix("the ") in {t.lower().removeprefix("the ") for t in DOCUMENTS}


def test_a_yes_no_question_names_two_things_and_what_it_asks_of_them() -> None:
    asked = yes_no_question(
        "Are both The New Pornographers and Kings of Leon American rock bands?", has_document
    )
    # A name stops before a nation's word: "Kings of Leon American rock bands".
    assert asked == TwoThings(("New Pornographers", "Kings of Leon"), "American rock bands")
    asked = yes_no_question("Are Gin and tonic and Paloma both cocktails based on tequila?", has_document)
    assert asked is not None
    assert asked.things == ("Gin and tonic", "Paloma")  # the first "and" whose sides are things
    tail = yes_no_question("Scott Derrickson and Ed Wood, are American?", has_document)
    assert tail is not None
    assert tail.things == ("Scott Derrickson", "Ed Wood")


def test_a_same_question_names_the_kind_of_value_and_an_unknown_kind_is_no_question() -> None:
    same = yes_no_question("Were Scott Derrickson and Ed Wood of the same nationality?", has_document)
    assert same is not None
    assert same.same == "nation"
    assert not same.different
    different = yes_no_question("Are Bella and Al Jamila from different countries?", has_document)
    assert different is not None
    assert different.same == "nation"
    assert different.different
    assert yes_no_question("Were Scott Derrickson and Ed Wood born in the same year?", has_document) is None


@pytest.mark.parametrize(
    "question",
    [
        "Which magazine is published in the United Kingdom, Bella or Al Jamila?",
        "Which magazine, Bella or Al Jamila, is published in the United Kingdom?",
    ],
)
def test_a_which_question_names_two_things_either_way_round(question: str) -> None:
    asked = which_question(question, has_document)
    assert asked is not None
    assert asked.which
    assert asked.things == ("Bella", "Al Jamila")
    assert asked.asked == "published in the United Kingdom"


@pytest.mark.parametrize(
    "question",
    [
        "Which magazine has a larger circulation, Bella or Al Jamila?",  # amounts: not decided by words
        "Which magazine is published in the United Kingdom, Bella or Vogue?",  # no document about Vogue
        "Is it true Bella is a magazine and Al Jamila is published in Saudi Arabia?",  # no names
        "Who founded Bella?",
    ],
)
def test_other_questions_are_not_about_two_things(question: str) -> None:
    assert two_things_asked(question, has_document) is None


def test_only_questions_of_the_shape_look_for_two_things() -> None:
    assert may_ask_two_things("Are both Bella and Al Jamila magazines?")
    assert may_ask_two_things("Which magazine is weekly, Bella or Al Jamila?")
    assert not may_ask_two_things("Where is Bella published?")
    assert not may_ask_two_things("Is Bella a weekly magazine?")  # one thing


def _decide(question: str) -> bool | None:
    asked = two_things_asked(question, has_document)
    assert asked is not None
    return verdict(asked, [said(asked, t, [_hit(_title(t))]) for t in asked.things])


def _title(thing: str) -> str:
    return next(t for t in DOCUMENTS if t.lower().removeprefix("the ") == thing.lower().removeprefix("the "))


def test_both_is_yes_when_both_documents_say_it_and_no_when_one_gives_another_nation() -> None:
    assert _decide("Are Scott Derrickson and Ed Wood both American?") is True
    assert _decide("Are both The New Pornographers and Kings of Leon American rock bands?") is False
    # A document that only lacks a word is no evidence: "cocktails based on tequila" is not said
    # of the gin and tonic, and not denied either.
    assert _decide("Are Gin and tonic and Paloma both cocktails based on tequila?") is None


def test_same_compares_the_first_nation_each_opening_gives() -> None:
    assert _decide("Were Scott Derrickson and Ed Wood of the same nationality?") is True
    assert _decide("Are Kings of Leon and The New Pornographers from the same country?") is False
    assert _decide("Are Kings of Leon and The New Pornographers from different countries?") is True
    assert nations("an English singer") == {"english", "british"}  # the UK's parts are British
    assert nations("an Austrian-born American director", first=True) == {"austrian"}


def test_which_is_the_thing_whose_document_says_it_and_the_answer_is_its_name() -> None:
    asked = which_question(
        "Which magazine is published in the United Kingdom, Bella or Al Jamila?", has_document
    )
    assert asked is not None
    both = [said(asked, t, [_hit(t)]) for t in asked.things]
    assert verdict(asked, both) is True
    answer = verdict_answer(asked, True, both)
    chunk = both[0].hit.chunk
    assert answer.text == "Bella" == chunk.text[answer.start : answer.end]


def test_a_yes_no_verdict_is_no_span_and_cites_each_documents_deciding_sentence() -> None:
    asked = yes_no_question("Are Scott Derrickson and Ed Wood both American?", has_document)
    assert asked is not None
    both = [said(asked, t, [_hit(t)]) for t in asked.things]
    answer = verdict_answer(asked, True, both)
    assert answer.text == "Yes"
    assert answer.start == answer.end
    assert [s.sentence.citations[0].doc_id for s in both] == ["Scott Derrickson", "Ed Wood"]
    assert "the documents do not say" in asked.undecided()
