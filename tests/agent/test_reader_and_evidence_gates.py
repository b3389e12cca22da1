"""The reader's decision and the sufficiency gate as gates of their own, on made-up cases."""

from __future__ import annotations

import pytest

from verityrag.agent.attempt import Attempt
from verityrag.agent.gates import Case, EnoughEvidence, ReaderDecision, reply_case
from verityrag.generation.reading import Reading, probability
from verityrag.text.answer_types import AnswerType
from verityrag.types import AbstainReason, ReplyCase, ShortAnswer

pytestmark = pytest.mark.unit


def _case(
    answer: str | None = "£240",
    answer_logit: float = 3.0,
    type_ok: bool = True,
    missing: tuple[str, ...] = (),
    probability: float = 0.9,
    n_live: int = 100,
) -> Case:
    short = None if answer is None else ShortAnswer(answer, "prices#0", 0, len(answer), 0.9)
    reading = Reading(short, answer_logit, (), AnswerType.MONEY, type_ok, 40, missing)
    attempt = Attempt("q", "original", [], [], probability, [], reading=reading)
    return Case("What does a scale and polish cost?", attempt, 0.5, n_live)


def test_a_span_over_the_threshold_of_the_kind_asked_goes_on_and_the_decision_is_traced() -> None:
    decision = ReaderDecision(logit_threshold=2.0).decide(_case(answer_logit=3.0))
    assert decision.refusal is None
    step = decision.step
    assert step is not None
    assert step.stage == "reader_decision"
    assert step.details["answers"] is True
    assert step.details["threshold"] == pytest.approx(probability(2.0))  # traced as a probability


@pytest.mark.parametrize(
    ("case", "said"),
    [
        (_case(answer_logit=1.0), "not sure enough to answer: prices#0 may say '£240'"),
        (_case(answer=None), "no passage answers the question"),
        (_case(type_ok=False), "asks for a money, and the best passage offers '£240'"),
        (_case(answer=None, missing=("Ashgrove",)), "names 'Ashgrove'"),
    ],
)
def test_what_the_reader_cannot_stand_behind_is_refused_saying_why(case: Case, said: str) -> None:
    decision = ReaderDecision(logit_threshold=2.0).decide(case)
    refusal = decision.refusal
    assert refusal is not None
    assert refusal.reason is AbstainReason.ANSWERABILITY
    assert said in refusal.details["explanation"]
    assert decision.step is not None
    assert decision.step.details["answers"] is False


def test_the_sufficiency_gate_refuses_under_its_threshold_only_from_its_corpus_size() -> None:
    gate = EnoughEvidence(min_chunks=60, reader_decides_small_corpora=True)
    assert gate.decide(_case(probability=0.9)).refusal is None
    refusal = gate.decide(_case(probability=0.1)).refusal
    assert refusal is not None
    assert refusal.reason is AbstainReason.SUFFICIENCY
    # Under 60 chunks the reader decides; without a reader the gate decides at every size.
    assert gate.decide(_case(probability=0.1, n_live=10)).refusal is None
    alone = EnoughEvidence(min_chunks=60, reader_decides_small_corpora=False)
    assert alone.decide(_case(probability=0.1, n_live=10)).refusal is not None


def test_a_sufficiency_refusal_says_which_names_no_passage_holds() -> None:
    refusal = (
        EnoughEvidence(0, True).decide(_case(answer=None, missing=("Ashgrove",), probability=0.1)).refusal
    )
    assert refusal is not None
    assert "'Ashgrove'" in refusal.details["explanation"]


def test_a_sufficiency_refusal_over_a_span_of_the_kind_asked_says_what_a_passage_may_say() -> None:
    refusal = EnoughEvidence(0, True).decide(_case(probability=0.1)).refusal
    assert refusal is not None
    assert refusal.details["explanation"] == "not sure enough to answer: prices#0 may say '£240'"


@pytest.mark.parametrize(
    ("reason", "case", "expected", "candidate"),
    [
        (AbstainReason.ANSWERABILITY, _case(answer_logit=1.0), ReplyCase.NOT_SURE, "£240"),
        (AbstainReason.SUFFICIENCY, _case(probability=0.1), ReplyCase.NOT_SURE, "£240"),
        (AbstainReason.ANSWERABILITY, _case(answer=None), ReplyCase.NOT_FOUND, None),
        (AbstainReason.ANSWERABILITY, _case(answer_logit=-3.0), ReplyCase.NOT_FOUND, None),  # p 0.05: no lead
        (AbstainReason.ANSWERABILITY, _case(type_ok=False), ReplyCase.NOT_FOUND, None),
        (
            AbstainReason.ANSWERABILITY,
            _case(answer=None, missing=("Ashgrove",)),
            ReplyCase.UNKNOWN_NAME,
            None,
        ),
        (AbstainReason.CONFLICT, _case(), ReplyCase.SOURCES_DISAGREE, None),
        (AbstainReason.NO_EVIDENCE, _case(), ReplyCase.NOT_FOUND, None),
        (AbstainReason.MISSING_HOP, _case(), ReplyCase.NOT_FOUND, None),
    ],
)
def test_each_refusal_is_the_case_a_person_reads(
    reason: AbstainReason, case: Case, expected: ReplyCase, candidate: str | None
) -> None:
    said, span = reply_case(reason, case.best.reading)
    assert said is expected
    assert (span.text if span is not None else None) == candidate
