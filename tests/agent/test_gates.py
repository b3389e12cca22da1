"""The gates without a module of tests of their own, on made-up cases: evidence found, the learned
checks, the LLM's own refusal, grounding, and the list that runs them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from verityrag.agent.attempt import Attempt
from verityrag.agent.gates import (
    GO_ON,
    Case,
    Decision,
    EvidenceFound,
    Grounded,
    HopAnswered,
    HopTried,
    LearnedCheckGate,
    ModelAnswered,
    Refusal,
    WrittenAnswer,
    answerability_inputs,
    first_refusal,
    guard_inputs,
    reader_check_inputs,
)
from verityrag.types import (
    AbstainReason,
    Chunk,
    Citation,
    CitedSentence,
    GroundingReport,
    Hit,
    TraceStep,
)

pytestmark = pytest.mark.unit

QUESTION = "What does a scale and polish cost?"
ROW = "Treatment: Scale and polish; Price: £240"
OTHER = "Treatment: Check-up; Price: £52"
GROUNDED = GroundingReport(0.9)


def _hit(chunk_id: str, text: str) -> Hit:
    return Hit(Chunk(chunk_id, chunk_id.split("#")[0], "Price list", text, 0, 0, len(text)), 1.0)


def _case(hits: list[Hit] | None = None, answer: WrittenAnswer | None = None) -> Case:
    hits = [_hit("prices#0", ROW), _hit("prices#1", OTHER)] if hits is None else hits
    case = Case(QUESTION, Attempt(QUESTION, "original", hits, [], 0.9, []), 0.5, 100)
    case.answer = answer
    return case


def _written(report: GroundingReport | None = GROUNDED, generated: object = None) -> WrittenAnswer:
    sentence = CitedSentence(ROW, (Citation("prices#0", "prices", "Price list", 0, len(ROW)),))
    return WrittenAnswer((sentence,), ROW, None, report, 1.5, generated=generated)  # type: ignore[arg-type]


class _Check:
    def __init__(self, score: float, threshold: float = 0.5) -> None:
        self.value, self.threshold = score, threshold
        self.calls: list[tuple[str, ...]] = []

    def score(self, *inputs: str) -> float:
        self.calls.append(inputs)
        return self.value


def test_no_hits_is_no_evidence() -> None:
    assert EvidenceFound().decide(_case()) == GO_ON
    refusal = EvidenceFound().decide(_case(hits=[])).refusal
    assert refusal is not None
    assert refusal.reason is AbstainReason.NO_EVIDENCE


@pytest.mark.parametrize(("score", "refused"), [(0.7, False), (0.5, False), (0.2, True)])
def test_a_learned_check_refuses_under_its_threshold_and_traces_its_score(
    score: float, refused: bool
) -> None:
    check = _Check(score)
    gate = LearnedCheckGate("guard", check, AbstainReason.GUARD, guard_inputs)
    decision = gate.decide(_case(answer=_written()))
    assert (decision.refusal == Refusal(AbstainReason.GUARD)) is refused
    assert decision.step is not None
    assert (decision.step.stage, decision.step.details) == ("guard", {"score": score, "threshold": 0.5})


def test_each_learned_check_reads_what_it_is_meant_to() -> None:
    case = _case(answer=_written())
    # The guard: the passages the answer cites (not the question), and the answer.
    assert guard_inputs(case) == (ROW, ROW)
    # Answerability: the question and the top chunks; the reader check adds the answer.
    assert answerability_inputs(case) == (QUESTION, f"{ROW} {OTHER}")
    assert reader_check_inputs(case) == (QUESTION, f"{ROW} {OTHER}", ROW)


def _generated(accepted: bool, abstain_reason: str | None = None, rejection: str | None = None) -> object:
    return SimpleNamespace(
        accepted=accepted, abstain_reason=abstain_reason, attempts=[SimpleNamespace(rejection=rejection)]
    )


@pytest.mark.parametrize(
    ("generated", "reason"),
    [
        (_generated(True), None),
        (_generated(False, "refused"), AbstainReason.ANSWERABILITY),
        (_generated(False, "rejected", "unfaithful"), AbstainReason.GROUNDING),
        (_generated(False, "rejected", "verifier_error"), AbstainReason.VERIFIER_ERROR),
    ],
)
def test_the_llms_own_refusal_and_its_verifiers_are_told_apart(
    generated: object, reason: AbstainReason | None
) -> None:
    refusal = ModelAnswered().decide(_case(answer=_written(None, generated))).refusal
    assert (refusal.reason if refusal is not None else None) is reason


def test_an_extractive_answer_has_no_llm_to_refuse() -> None:
    assert ModelAnswered().decide(_case(answer=_written())) == GO_ON


@pytest.mark.parametrize(("enforced", "refused"), [(True, True), (False, False)])
def test_grounding_under_the_threshold_refuses_only_where_enforced(enforced: bool, refused: bool) -> None:
    decision = Grounded(threshold=0.5, enforced=enforced).decide(_case(answer=_written(GroundingReport(0.3))))
    assert (decision.refusal == Refusal(AbstainReason.GROUNDING)) is refused
    assert decision.step is not None
    assert decision.step.stage == "grounding"
    assert decision.step.duration_ms == 1.5  # the time the report took, measured where it was made
    assert decision.step.details == {"score": 0.3, "threshold": 0.5, "claims": 0, "enforced": enforced}


class _Fixed:
    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.asked = 0

    def decide(self, case: Case) -> Decision:
        self.asked += 1
        return self.decision


def test_the_first_refusal_ends_the_list_and_every_step_before_it_is_traced() -> None:
    step = TraceStep("first", 0.0, {})
    refusing = Decision(Refusal(AbstainReason.GUARD), TraceStep("second", 0.0, {}))
    gates = [_Fixed(Decision(step=step)), _Fixed(refusing), _Fixed(GO_ON)]
    trace: list[TraceStep] = []
    assert first_refusal(gates, _case(), trace) == Refusal(AbstainReason.GUARD)
    assert [s.stage for s in trace] == ["first", "second"]
    assert [g.asked for g in gates] == [1, 1, 0]
    assert first_refusal([_Fixed(GO_ON)], _case(), trace) is None


def test_a_second_hop_that_read_nothing_is_a_missing_hop_naming_what_it_found() -> None:
    case = _case()
    assert HopAnswered().decide(case) == GO_ON  # no second hop taken, or one that read an answer
    case.hop = HopTried("Rustomji Mehra", ("The Lotus Group",))
    refusal = HopAnswered().decide(case).refusal
    assert refusal is not None
    assert refusal.reason is AbstainReason.MISSING_HOP
    assert "Rustomji Mehra names 'The Lotus Group'" in refusal.details["explanation"]
    case.hop = HopTried(undated=("Paul Cox",), death=True)
    refusal = HopAnswered().decide(case).refusal
    assert refusal is not None
    assert "no document says when 'Paul Cox' died" in refusal.details["explanation"]
    case.hop = HopTried(tie=True)
    refusal = HopAnswered().decide(case).refusal
    assert refusal is not None
    assert refusal.reason is AbstainReason.ANSWERABILITY
