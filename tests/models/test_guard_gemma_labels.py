"""How the gemma-answers recipe (verityrag.train.gemma_answers) labels a generated answer against the gold answer."""

from __future__ import annotations

from types import ModuleType

import pytest

from verityrag.train import gemma_answers

pytestmark = pytest.mark.unit

EVIDENCE = "Arthur's Magazine (1844-1846) was an American literary periodical published in Philadelphia."
QUESTION = "Where was Arthur's Magazine published?"


@pytest.fixture(scope="module")
def gg() -> ModuleType:
    return gemma_answers


def test_right_and_grounded_is_supported(gg: ModuleType) -> None:
    answer = "Arthur's Magazine was published in Philadelphia."
    assert gg.label_answer(answer, "Philadelphia", EVIDENCE, QUESTION) == (1, "right")


def test_gold_match_ignores_case_punctuation_and_articles(gg: ModuleType) -> None:
    answer = "It was an American periodical from the city of PHILADELPHIA!"
    assert gg.label_answer(answer, "the Philadelphia", EVIDENCE, QUESTION)[0] == 1


def test_gold_must_match_whole_words(gg: ModuleType) -> None:
    # "Phil" is inside "Philadelphia" but is not the gold answer's word.
    assert gg.label_answer("It was published in Philadelphia.", "Phil", EVIDENCE, QUESTION) == (
        None,
        "wrong_but_grounded",
    )


def test_right_answer_with_made_up_additions_is_dropped(gg: ModuleType) -> None:
    answer = "Philadelphia, where Benjamin Franklin edited it with Mark Twain and Edgar Poe."
    assert gg.label_answer(answer, "Philadelphia", EVIDENCE, QUESTION) == (None, "right_with_additions")


def test_wrong_answer_with_new_content_is_unsupported(gg: ModuleType) -> None:
    answer = "Arthur's Magazine was published in Boston."
    assert gg.label_answer(answer, "Philadelphia", EVIDENCE, QUESTION) == (0, "wrong_ungrounded")


def test_wrong_answer_copied_from_the_evidence_is_dropped(gg: ModuleType) -> None:
    # Supported by the evidence, just not the answer: the guard never sees the question.
    answer = "Arthur's Magazine was an American literary periodical."
    assert gg.label_answer(answer, "Philadelphia", EVIDENCE, QUESTION) == (None, "wrong_but_grounded")


@pytest.mark.parametrize(
    ("answer", "gold", "why"),
    [
        ("", "Philadelphia", "empty"),
        ("Yes, it was.", "yes", "yes_no_gold"),
        ("It was published in New Philadelphia County.", "Philadelphia County Ohio", "partial"),
    ],
)
def test_other_answers_are_dropped(gg: ModuleType, answer: str, gold: str, why: str) -> None:
    assert gg.label_answer(answer, gold, EVIDENCE, QUESTION) == (None, why)
