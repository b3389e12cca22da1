"""Reject-and-retry and best-of-N with a scripted complete_fn and the real grounding verifier."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from verityrag.errors import InvalidInputError, LLMRateLimitError
from verityrag.generation.llm import REFUSAL, LLMGenerator
from verityrag.generation.verified import BestOfN, RejectAndRetry
from verityrag.llm.completion import Completion
from verityrag.types import Chunk, Hit
from verityrag.verify.grounding_verifier import GroundingVerifier
from verityrag.verify.llm_judge import LLMJudgeVerifier
from verityrag.verify.protocols import VerificationResult, Verifier
from verityrag.verify.stack import VerifierStack

pytestmark = pytest.mark.unit


def _hit(i: int, text: str, title: str) -> Hit:
    return Hit(Chunk(f"d{i}#0", f"d{i}", title, text, 0, 0, len(text)), score=1.0)


HITS = [
    _hit(1, "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.", "Eiffel Tower"),
    _hit(2, "Mount Fuji is the highest mountain in Japan, at 3,776 metres.", "Mount Fuji"),
]
QUESTION = "When was the Eiffel Tower completed?"
GOOD = "The Eiffel Tower was completed in 1889 [1]."
WRONG_NUMBER = "The Eiffel Tower was completed in 1912 [1]."
UNCITED = "The Eiffel Tower was completed in 1889."


class Scripted:
    def __init__(self, *texts: str, tokens: int | None = 5) -> None:
        self.texts = list(texts)
        self.tokens = tokens
        self.prompts: list[str] = []
        self.temperatures: list[float] = []

    def __call__(self, prompt: str, **kwargs: Any) -> Completion:
        self.prompts.append(prompt)
        self.temperatures.append(kwargs["temperature"])
        text = self.texts[min(len(self.prompts) - 1, len(self.texts) - 1)]
        return Completion(text, "scripted", prompt_tokens=self.tokens, completion_tokens=self.tokens)


def test_grounding_verifier_catches_a_wrong_number_and_says_why() -> None:
    verdicts = GroundingVerifier().verify(
        ["The tower was completed in 1889.", "The tower was completed in 1912."], [HITS[0].chunk.text]
    )
    assert [v.supported for v in verdicts] == [True, False]
    assert "number" in verdicts[1].reason
    assert verdicts[1].stage == "grounding"
    assert isinstance(GroundingVerifier(), Verifier)


def test_retry_accepts_a_supported_first_answer_in_one_attempt() -> None:
    fn = Scripted(GOOD)
    out = RejectAndRetry(LLMGenerator(fn)).answer(QUESTION, HITS)
    assert out.accepted
    assert out.answer == "The Eiffel Tower was completed in 1889."
    assert len(out.attempts) == 1
    assert out.attempts[0].accepted
    assert out.accounting()["attempts"] == 1
    assert out.accounting()["completion_tokens"] == 5


def test_retry_feeds_back_the_rejected_claim_and_its_evidence_then_accepts() -> None:
    fn = Scripted(WRONG_NUMBER, GOOD)
    out = RejectAndRetry(LLMGenerator(fn)).answer(QUESTION, HITS)
    assert out.accepted
    assert out.chosen == 1
    assert [a.accepted for a in out.attempts] == [False, True]
    second_prompt = fn.prompts[1]
    assert '"The Eiffel Tower was completed in 1912." (cited [1])' in second_prompt
    assert "number or date" in second_prompt
    assert "1912" not in fn.prompts[0]
    acc = out.accounting()
    assert acc["attempts"] == 2
    assert acc["prompt_tokens"] == 10
    assert acc["completion_tokens"] == 10


def test_retry_rejects_an_uncited_sentence_without_calling_the_verifier() -> None:
    class Counting:
        calls = 0

        def verify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
            self.calls += 1
            return [VerificationResult(s, 1.0, True, "always") for s in sentences]

    counting = Counting()
    out = RejectAndRetry(LLMGenerator(Scripted(UNCITED)), counting, max_attempts=2).answer(QUESTION, HITS)
    assert not out.accepted
    assert out.abstain_reason == "rejected"
    assert counting.calls == 0
    assert out.attempts[0].verdicts[0].stage == "citation"


def test_retry_gives_up_after_max_attempts_and_keeps_every_attempt() -> None:
    fn = Scripted(WRONG_NUMBER, "The Eiffel Tower was completed in 1920 [1].", UNCITED, GOOD)
    out = RejectAndRetry(LLMGenerator(fn), max_attempts=3).answer(QUESTION, HITS)
    assert not out.accepted
    assert out.answer is None
    assert out.sentences == ()
    assert len(fn.prompts) == 3  # never a fourth call
    log = out.trace_details()["attempt_log"]
    assert [a["attempt"] for a in log] == [1, 2, 3]
    assert [a["text"] for a in log] == [WRONG_NUMBER, "The Eiffel Tower was completed in 1920 [1].", UNCITED]
    assert all(not a["accepted"] for a in log)
    assert log[2]["feedback_given"]


def test_retry_stops_when_the_model_refuses() -> None:
    out = RejectAndRetry(LLMGenerator(Scripted(REFUSAL))).answer("Who won the 1950 final?", HITS)
    assert not out.accepted
    assert out.abstain_reason == "refused"
    assert len(out.attempts) == 1


def test_retry_temperature_applies_from_the_second_attempt() -> None:
    fn = Scripted(WRONG_NUMBER, GOOD)
    RejectAndRetry(LLMGenerator(fn), retry_temperature=0.8).answer(QUESTION, HITS)
    assert fn.temperatures == [0.0, 0.8]


def test_provider_errors_propagate() -> None:
    def failing(prompt: str, **kwargs: Any) -> Completion:
        raise LLMRateLimitError("scripted", "429")

    with pytest.raises(LLMRateLimitError):
        RejectAndRetry(LLMGenerator(failing)).answer(QUESTION, HITS)


def test_best_of_n_returns_the_best_supported_candidate() -> None:
    partial = "The Eiffel Tower in Paris was completed in 1889 for a big fair [1]."
    fn = Scripted(WRONG_NUMBER, partial, GOOD)
    out = BestOfN(LLMGenerator(fn), n=3, threshold=0.5, temperature=0.7).answer(QUESTION, HITS)
    assert len(fn.prompts) == 3
    assert fn.temperatures == [0.7, 0.7, 0.7]
    assert out.accepted
    assert out.chosen == 2
    scores = [a.score for a in out.attempts]
    assert scores[2] == max(scores)
    assert scores[0] <= 0.5
    assert [a.accepted for a in out.attempts] == [False, False, True]


def test_best_of_n_abstains_when_nothing_clears_the_threshold() -> None:
    out = BestOfN(LLMGenerator(Scripted(WRONG_NUMBER, UNCITED)), n=2).answer(QUESTION, HITS)
    assert not out.accepted
    assert out.abstain_reason == "rejected"
    assert len(out.attempts) == 2


def test_best_of_n_threshold_above_every_score_abstains() -> None:
    out = BestOfN(
        LLMGenerator(Scripted("The tower was completed in 1889 for a fair [1].")), n=1, threshold=1.0
    )
    assert not out.answer(QUESTION, HITS).accepted


def test_tokens_unknown_when_the_provider_does_not_report_them() -> None:
    out = RejectAndRetry(LLMGenerator(Scripted(GOOD, tokens=None))).answer(QUESTION, HITS)
    assert out.accounting()["prompt_tokens"] is None


@pytest.mark.parametrize(
    "make",
    [
        lambda: RejectAndRetry(LLMGenerator(Scripted(GOOD)), max_attempts=0),
        lambda: BestOfN(LLMGenerator(Scripted(GOOD)), n=0),
        lambda: BestOfN(LLMGenerator(Scripted(GOOD)), threshold=1.5),
        lambda: GroundingVerifier(threshold=-0.1),
    ],
)
def test_bad_settings_are_rejected(make: Any) -> None:
    with pytest.raises(InvalidInputError):
        make()


# ------------------------------------------------------------------ titles, fail-open judge


TITLED = [_hit(3, "It was completed in 1889 for the World's Fair in Paris.", "Eiffel Tower")]


@pytest.mark.parametrize("level", ["balanced", "paranoid"])
@pytest.mark.parametrize("stack", [False, True], ids=["grounding", "stack"])
def test_a_name_from_the_cited_chunk_s_title_counts_as_evidence(level: str, stack: bool) -> None:
    """The prompt shows the model "(Eiffel Tower) It was completed ..."; the verifier sees the title too."""
    verifier = VerifierStack.default() if stack else GroundingVerifier()
    out = RejectAndRetry(LLMGenerator(Scripted(GOOD)), verifier, max_attempts=1).answer(
        QUESTION, TITLED, strictness=level
    )
    assert out.accepted, out.attempts[0].verdicts[0].reason
    assert out.answer == "The Eiffel Tower was completed in 1889."


def test_the_verifier_gets_each_cited_chunk_with_its_title() -> None:
    seen: list[list[str]] = []

    class Recording:
        def verify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
            seen.append(list(documents))
            return [VerificationResult(s, 1.0, True, "always") for s in sentences]

    untitled = _hit(4, "Fuji is 3,776 metres high.", "")
    hits = [*TITLED, untitled]
    RejectAndRetry(LLMGenerator(Scripted("It was completed in 1889 [1][2].")), Recording()).answer(
        QUESTION, hits
    )
    assert seen == [[f"Eiffel Tower\n{TITLED[0].chunk.text}", untitled.chunk.text]]


WATT = [_hit(5, "James Watt added a separate condenser to the steam engine in 1769.", "")]
TRUE_CLAIM = "Watt added a separate condenser in 1769 [1]."
REFUTED = "Watt invented the telephone in 1769 [1]."


def _judge(*, open_: bool = True, confidence: Any = 95) -> LLMJudgeVerifier:
    """Supports the condenser, refutes the telephone."""

    def reply(prompt: str, **kwargs: Any) -> Completion:
        statement = prompt.rsplit("STATEMENT:", 1)[1]
        ok = "telephone" not in statement
        verdict = {
            "verdict": "SUPPORTED" if ok else "NOT_SUPPORTED",
            "is_grounded": ok,
            "reasoning": "stated" if ok else "The context says nothing about a telephone.",
            "confidence_score": confidence,
        }
        return Completion(json.dumps(verdict), "judge")

    return LLMJudgeVerifier(reply, failure_policy="fail_open" if open_ else "fail_closed")


WARNING = " [Confidence: 95%] [Warning: Low confidence. Groundedness: false]"


@pytest.mark.parametrize("strategy", ["retry", "best"])
def test_fail_open_judge_refuses_a_refuted_answer_at_paranoid(strategy: str) -> None:
    gen = LLMGenerator(Scripted(REFUTED))
    maker = (
        RejectAndRetry(gen, _judge(), max_attempts=2) if strategy == "retry" else BestOfN(gen, _judge(), n=2)
    )
    out = maker.answer("What did Watt do?", WATT, strictness="paranoid")
    assert not out.accepted
    assert out.answer is None
    assert all(a.rejection in {"nothing_supported", "unfaithful"} for a in out.attempts)
    assert all(not v["supported"] for a in out.trace_details()["attempt_log"] for v in a["verdicts"])


def test_fail_open_judge_drops_a_refuted_sentence_and_annotates_the_kept_one() -> None:
    text = f"{TRUE_CLAIM} Watt also added a separate condenser to the steam engine [1]. {REFUTED}"
    out = RejectAndRetry(LLMGenerator(Scripted(text)), _judge(), max_attempts=1).answer(
        "What did Watt do?", WATT, strictness="balanced"
    )
    assert out.accepted
    assert out.unsupported_claims == ("Watt invented the telephone in 1769.",)
    assert out.answer == (
        "Watt added a separate condenser in 1769. [Confidence: 95%] "
        "Watt also added a separate condenser to the steam engine. [Confidence: 95%]"
    )
    assert out.annotations == (" [Confidence: 95%]", " [Confidence: 95%]")
    # the sentences stay plain, for the agent's own checks
    assert [s.text for s in out.sentences] == [
        "Watt added a separate condenser in 1769.",
        "Watt also added a separate condenser to the steam engine.",
    ]
    trace = out.trace_details()
    assert trace["answer"] == out.answer
    assert trace["unsupported_claims"] == ["Watt invented the telephone in 1769."]
    verdicts = trace["attempt_log"][0]["verdicts"]
    assert [v["annotation"] for v in verdicts] == [" [Confidence: 95%]", " [Confidence: 95%]", WARNING]


def test_fail_open_judge_marks_a_refuted_sentence_kept_at_loose() -> None:
    out = RejectAndRetry(LLMGenerator(Scripted(f"{TRUE_CLAIM} {REFUTED}")), _judge()).answer(
        "What did Watt do?", WATT, strictness="loose"
    )
    assert out.accepted
    assert out.unsupported_claims == ("Watt invented the telephone in 1769.",)
    assert out.answer == (
        "Watt added a separate condenser in 1769. [Confidence: 95%] Watt invented the telephone in 1769."
        + WARNING
    )
    assert out.trace_details()["answer"] == out.answer


def test_fail_closed_judge_adds_no_annotation() -> None:
    out = RejectAndRetry(LLMGenerator(Scripted(TRUE_CLAIM)), _judge(open_=False)).answer(
        "What did Watt do?", WATT, strictness="loose"
    )
    assert out.answer == "Watt added a separate condenser in 1769."
    assert out.annotations == ("",)
    assert out.trace_details()["attempt_log"][0]["verdicts"][0]["annotation"] is None


@pytest.mark.parametrize("confidence", [92, 0.92, "0.92", "92%"])
def test_best_of_n_reads_a_fractional_judge_confidence(confidence: Any) -> None:
    out = BestOfN(LLMGenerator(Scripted(TRUE_CLAIM)), _judge(open_=False, confidence=confidence), n=2).answer(
        "What did Watt add?", WATT, strictness="balanced"
    )
    assert out.accepted
    assert out.attempts[0].score == pytest.approx(0.92)
