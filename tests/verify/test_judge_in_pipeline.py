"""The LLM judge behind the agent: a fail-closed verifier error is its own abstention reason."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from verityrag import VerityRAGPipeline
from verityrag.errors import LLMTimeoutError
from verityrag.generation.completion import Completion
from verityrag.generation.llm import LLMGenerator
from verityrag.generation.verified import RejectAndRetry
from verityrag.types import AbstainReason
from verityrag.verify.llm_judge import LLMJudgeVerifier

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


def _pipeline(corpus_slice: list[dict[str, str]], judge: Any) -> VerityRAGPipeline:
    strategy = RejectAndRetry(
        LLMGenerator(echo_first_sentence), verifier=LLMJudgeVerifier(judge), max_attempts=2
    )
    pipeline = VerityRAGPipeline(generator=strategy)
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
