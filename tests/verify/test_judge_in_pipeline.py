"""The LLM judge behind the agent: a fail-closed verifier error is its own abstention reason;
a fail-open judge still refuses what it refutes, and annotates what it lets through."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from verityrag import Settings, VerityRAGPipeline
from verityrag.errors import LLMTimeoutError
from verityrag.generation.llm import LLMGenerator
from verityrag.generation.verified import RejectAndRetry
from verityrag.llm.completion import Completion
from verityrag.types import AbstainReason
from verityrag.verify.llm_judge import FailurePolicy, LLMJudgeVerifier

pytestmark = pytest.mark.integration


def echo_first_sentence(prompt: str, **kwargs: Any) -> Completion:
    """A 'model' answering with the first sentence of passage [1], cited."""
    passage = re.search(r"^\[1\] (?:\([^)]*\) )?(.+)$", prompt, re.MULTILINE)
    assert passage is not None
    first = re.split(r"(?<=[.!?])\s", passage.group(1))[0].rstrip(".")
    return Completion(f"{first} [1].", "echo")


def judge_times_out(prompt: str, **kwargs: Any) -> Completion:
    raise LLMTimeoutError("judge", "no answer within 30s")


def judge_supports(prompt: str, **kwargs: Any) -> Completion:
    assert kwargs["json_mode"] is True
    assert kwargs["temperature"] == 0.0
    verdict = {"verdict": "SUPPORTED", "is_grounded": True, "reasoning": "verbatim", "confidence_score": 97}
    return Completion(json.dumps(verdict), "judge")


def judge_refutes(prompt: str, **kwargs: Any) -> Completion:
    verdict = {
        "verdict": "NOT_SUPPORTED",
        "is_grounded": False,
        "reasoning": "not said",
        "confidence_score": 95,
    }
    return Completion(json.dumps(verdict), "judge")


def _pipeline(
    corpus_slice: list[dict[str, str]], judge: Any, policy: FailurePolicy = "fail_closed"
) -> VerityRAGPipeline:
    strategy = RejectAndRetry(
        LLMGenerator(echo_first_sentence),
        verifier=LLMJudgeVerifier(judge, failure_policy=policy),
        max_attempts=2,
    )
    # The echo model answers with passage [1]'s first sentence whatever the question: without the
    # reader check (on by default for LLM answers), only the judge decides.
    pipeline = VerityRAGPipeline(generator=strategy, settings=Settings(llm_reader_check=False))
    pipeline.ingest_documents(corpus_slice)
    return pipeline


def test_judge_timeout_fails_closed_as_verifier_error_with_error_in_trace(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    result = _pipeline(corpus_slice, judge_times_out).query(answered_question)
    assert result.abstained
    assert result.abstain_reason is AbstainReason.VERIFIER_ERROR
    step = next(s for s in result.trace if s.stage == "llm_generation")
    errors = [v["error"] for a in step.details["attempt_log"] for v in a["verdicts"]]
    assert errors
    assert all("LLMTimeoutError" in e for e in errors)


def test_judge_support_lets_the_answer_through(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    result = _pipeline(corpus_slice, judge_supports).query(answered_question)
    assert not result.abstained
    step = next(s for s in result.trace if s.stage == "llm_generation")
    assert step.details["attempt_log"][0]["verdicts"][0]["stage"] == "llm_judge"


def test_fail_open_judge_still_refuses_what_it_refutes(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    pipeline = _pipeline(corpus_slice, judge_refutes, "fail_open")
    result = pipeline.query(answered_question)  # Settings' default level: balanced
    assert result.abstained
    assert result.abstain_reason is AbstainReason.GROUNDING
    step = next(s for s in result.trace if s.stage == "llm_generation")
    verdicts = [v for a in step.details["attempt_log"] for v in a["verdicts"]]
    assert verdicts
    assert all(not v["supported"] for v in verdicts)
    assert all("[Warning: Low confidence. Groundedness: false]" in v["annotation"] for v in verdicts)


def test_fail_open_judge_annotation_is_in_the_trace(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    result = _pipeline(corpus_slice, judge_supports, "fail_open").query(answered_question)
    assert not result.abstained  # the agent's own checks read the plain sentences
    step = next(s for s in result.trace if s.stage == "llm_generation")
    assert step.details["answer"].endswith(" [Confidence: 97%]")
    assert step.details["annotations"] == [" [Confidence: 97%]"]
    assert step.details["answer"] == result.answer
    assert result.sentences[0].text == step.details["answer"].removesuffix(" [Confidence: 97%]")


def test_fail_open_judge_marks_a_refuted_answer_kept_at_loose(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    pipeline = _pipeline(corpus_slice, judge_refutes, "fail_open")
    result = pipeline.query(answered_question, settings=pipeline.settings.replace(strictness="loose"))
    assert not result.abstained
    assert result.unsupported_claims == tuple(s.text for s in result.sentences)
    step = next(s for s in result.trace if s.stage == "llm_generation")
    assert step.details["answer"].endswith(
        " [Confidence: 95%] [Warning: Low confidence. Groundedness: false]"
    )


def test_fail_open_judge_annotation_reaches_the_query_result(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    result = _pipeline(corpus_slice, judge_supports, "fail_open").query(answered_question)
    assert result.answer is not None
    assert result.answer.endswith(" [Confidence: 97%]")
