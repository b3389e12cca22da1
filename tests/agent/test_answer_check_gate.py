"""The answer check's gate: the reader's short answer, with its quoted sentence, must pass the check."""

from __future__ import annotations

import pytest

from verityrag.agent.attempt import Attempt
from verityrag.agent.gates import AnswerChecked, Case
from verityrag.checks.answer_check import answer_statement
from verityrag.generation.reading import Reading
from verityrag.text.answer_types import AnswerType
from verityrag.types import AbstainReason, Citation, CitedSentence, ShortAnswer

pytestmark = pytest.mark.unit

ROW = "Clinic: Brindle Street; Treatment: Scale and polish; Price: £240"


class _Check:
    """Scores what it is given by a table of (question, answer) -> score, and records the calls."""

    def __init__(self, scores: dict[tuple[str, str], float], threshold: float = 0.5) -> None:
        self.scores = scores
        self.threshold = threshold
        self.calls: list[tuple[str, str, str]] = []

    def score(self, question: str, answer: str, sentences: str) -> float:
        self.calls.append((question, answer, sentences))
        return self.scores[(question, answer)]


def _case(question: str, answer: str | None) -> Case:
    sentence = CitedSentence(ROW, (Citation("prices#0", "prices", "Price list", 0, len(ROW)),))
    short = (
        None
        if answer is None
        else ShortAnswer(answer, "prices#0", ROW.index(answer), ROW.index(answer) + len(answer), 0.9)
    )
    reading = Reading(short, 3.0, (sentence,) if short else (), AnswerType.MONEY, True, 40)
    attempt = Attempt(question, "original", [], [], 0.9, [], reading=reading)
    return Case(question, attempt, 0.5, 10)


def test_an_answer_the_check_reads_as_right_goes_on_and_is_traced() -> None:
    question = "What does a scale and polish cost at Brindle Street?"
    check = _Check({(question, "£240"): 0.9})
    decision = AnswerChecked(check).decide(_case(question, "£240"))
    assert decision.refusal is None
    assert check.calls == [(question, "£240", ROW)]
    step = decision.step
    assert step is not None
    assert step.stage == "answer_check"
    assert step.details["score"] == 0.9
    assert step.details["threshold"] == 0.5


def test_an_answer_for_another_question_is_refused_saying_where_it_came_from() -> None:
    question = "What does a scale and polish cost at Ashgrove?"
    refusal = AnswerChecked(_Check({(question, "£240"): 0.1})).decide(_case(question, "£240")).refusal
    assert refusal is not None
    assert refusal.reason is AbstainReason.ANSWERABILITY
    assert "Price list" in refusal.details["explanation"]
    assert "'£240'" in refusal.details["explanation"]


def test_no_short_answer_is_nothing_to_check() -> None:
    check = _Check({})
    assert AnswerChecked(check).decide(_case("What does it cost?", None)).refusal is None
    assert check.calls == []


def test_the_statement_is_the_question_and_the_answer_with_spaces_normalised() -> None:
    assert answer_statement(" How much  is it?\n", " £3.10 ") == "How much is it? Answer: £3.10"
