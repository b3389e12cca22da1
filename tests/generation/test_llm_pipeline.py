"""The LLM path through the agent: VerityRAGPipeline(generator=...) on real SQuAD documents."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest

from verityrag import Settings, VerityRAGPipeline
from verityrag.errors import InvalidInputError
from verityrag.generation.llm import REFUSAL, LLMGenerator
from verityrag.generation.verified import BestOfN, RejectAndRetry
from verityrag.llm.completion import Completion
from verityrag.types import AbstainReason
from verityrag.verify.protocols import VerificationResult

pytestmark = pytest.mark.integration  # the reader (a model) answers and checks


def echo_first_sentence(prompt: str, **kwargs: Any) -> Completion:
    """A 'model' that answers with the first sentence of passage [1], cited: grounded by construction."""
    passage = re.search(r"^\[1\] (?:\([^)]*\) )?(.+)$", prompt, re.MULTILINE)
    assert passage is not None
    first = re.split(r"(?<=[.!?])\s", passage.group(1))[0].rstrip(".")
    return Completion(f"{first} [1].", "echo", prompt_tokens=len(prompt.split()), completion_tokens=12)


def invent(prompt: str, **kwargs: Any) -> Completion:
    return Completion("Zorblax Quentaris founded it in 1642 [1].", "inventor", 10, 8)


def refuse(prompt: str, **kwargs: Any) -> Completion:
    return Completion(REFUSAL, "refuser", 10, 8)


INVENTED = "Zorblax did it."


def echo_plus_invention(prompt: str, **kwargs: Any) -> Completion:
    """The first sentence of passage [1], then a short invented sentence, both cited."""
    grounded = echo_first_sentence(prompt).text
    return Completion(f"{grounded} {INVENTED[:-1]} [1].", "echo+", 10, 20)


class NoZorblax:
    """A verifier that rejects exactly the invented sentence."""

    def verify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
        return [
            VerificationResult(s, 0.0 if "Zorblax" in s else 1.0, "Zorblax" not in s, "fake")
            for s in sentences
        ]


def _pipeline(
    corpus_slice: list[dict[str, str]],
    generator: Any,
    reader_check: bool = False,
    reader_answer_threshold: float | None = None,
) -> VerityRAGPipeline:
    """The pipeline over the slice; the reader check (on by default for LLM answers) only when asked:
    these fake models answer with passage sentences whatever the question."""
    settings = Settings(llm_reader_check=reader_check, reader_answer_threshold=reader_answer_threshold)
    pipeline = VerityRAGPipeline(generator=generator, settings=settings)
    pipeline.ingest_documents(corpus_slice)
    return pipeline


def test_pipeline_with_llm_generator_answers_with_cited_sentences(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    result = _pipeline(corpus_slice, LLMGenerator(echo_first_sentence)).query(answered_question)
    assert not result.abstained
    top = result.evidence[0].chunk
    assert result.answer
    assert result.answer.rstrip(".") in top.text
    assert result.sentences[0].citations[0].chunk_id == top.chunk_id
    step = next(s for s in result.trace if s.stage == "llm_generation")
    assert step.details["strategy"] == "reject_and_retry"
    assert step.details["attempts"] == 1
    assert step.details["completion_tokens"] == 12
    assert result.grounding.overall_score >= 0.5


def test_pipeline_abstains_on_grounding_after_three_invented_answers(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    result = _pipeline(corpus_slice, LLMGenerator(invent)).query(answered_question)
    assert result.abstained
    assert result.abstain_reason is AbstainReason.GROUNDING
    step = next(s for s in result.trace if s.stage == "llm_generation")
    assert step.details["attempts"] == 3
    assert not step.details["accepted"]
    assert all(not a["accepted"] for a in step.details["attempt_log"])


def test_pipeline_model_refusal_is_an_answerability_abstention(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    result = _pipeline(corpus_slice, BestOfN(LLMGenerator(refuse), n=2)).query(answered_question)
    assert result.abstained
    assert result.abstain_reason is AbstainReason.ANSWERABILITY


def test_pipeline_rejects_a_generator_of_the_wrong_kind() -> None:
    with pytest.raises(InvalidInputError, match="generator"):
        VerityRAGPipeline(generator=object())  # type: ignore[arg-type]


def test_pipeline_strictness_per_request_decides_what_happens_to_an_unsupported_sentence(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    # The reader's decision held open: paranoid also wants a surer reader (+3 on its logit), and
    # what is tested here is what each level does with an unsupported sentence.
    pipeline = _pipeline(
        corpus_slice,
        RejectAndRetry(LLMGenerator(echo_plus_invention), NoZorblax()),
        reader_answer_threshold=0.5,
    )
    balanced = pipeline.query(answered_question, settings=pipeline.settings.replace(strictness="balanced"))
    assert not balanced.abstained, balanced.abstain_reason
    assert balanced.unsupported_claims == (INVENTED,)
    assert balanced.answer
    assert "Zorblax" not in balanced.answer
    step = next(s for s in balanced.trace if s.stage == "llm_generation")
    assert step.details["strictness"] == "balanced"
    assert step.details["unsupported_claims"] == [INVENTED]

    paranoid = pipeline.query(answered_question, settings=pipeline.settings.replace(strictness="paranoid"))
    assert paranoid.abstained
    assert paranoid.abstain_reason is AbstainReason.GROUNDING
    assert paranoid.unsupported_claims == ()
    step = next(s for s in paranoid.trace if s.stage == "llm_generation")
    assert step.details["attempts"] == 3

    # loose: every sentence is returned; verification is informational (reported, not enforced).
    loose = pipeline.query(answered_question, settings=pipeline.settings.replace(strictness="loose"))
    assert not loose.abstained, loose.abstain_reason
    assert INVENTED in (loose.answer or "")
    assert loose.unsupported_claims == (INVENTED,)
    grounding = next(s for s in loose.trace if s.stage == "grounding")
    assert grounding.details["enforced"] is False
    assert loose.grounding.overall_score < grounding.details["threshold"]


def test_extractive_answer_has_no_unsupported_claims(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    result = _pipeline(corpus_slice, None).query(answered_question)
    assert not result.abstained
    assert result.unsupported_claims == ()


def test_the_reader_span_reaches_the_prompt_only_when_the_generator_shows_it(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    prompts: list[str] = []

    def recording(prompt: str, **kwargs: Any) -> Completion:
        prompts.append(prompt)
        return echo_first_sentence(prompt)

    hinted = _pipeline(corpus_slice, LLMGenerator(recording, reader_hint=True)).query(answered_question)
    assert hinted.short_answer is None  # an LLM answer is not the reader's span...
    span = re.search(r'^Likely answer, found in the evidence: "(.+)"$', prompts[-1], re.MULTILINE)
    assert span is not None  # ...but the model was shown the span the reader found
    assert any(span.group(1) in h.chunk.text for h in hinted.evidence)
    prompts.clear()
    _pipeline(corpus_slice, LLMGenerator(recording)).query(answered_question)
    assert "Likely answer" not in prompts[-1]


# Missed since the reader trained further shipped: the check's agreement threshold (0.5, chosen for
# the earlier reader) refuses the hinted right answer to the question this picks ("BBC Radio 5 Live
# and 5 Live Sports Extra" at 0.483). Refitting it on the LLM answers (make eval-llm-checks) is next.
@pytest.mark.xfail(strict=True, reason="the reader check's threshold is not refitted for the shipped reader")
def test_the_reader_check_is_on_by_default_for_llm_answers(
    corpus_slice: list[dict[str, str]], answered_question: str
) -> None:
    def hinted_sentence(prompt: str, **kwargs: Any) -> Completion:
        """A 'model' that answers with the passage sentence holding the span it was shown."""
        span = re.search(r'^Likely answer, found in the evidence: "(.+)"$', prompt, re.MULTILINE)
        assert span is not None
        for line in re.findall(r"^\[(\d)\] (?:\([^)]*\) )?(.+)$", prompt, re.MULTILINE):
            for sentence in re.split(r"(?<=[.!?])\s", line[1]):
                if span.group(1) in sentence:
                    return Completion(f"{sentence.rstrip('.')} [{line[0]}].", "hinted", 10, 12)
        return Completion(REFUSAL, "hinted", 10, 2)

    default = VerityRAGPipeline(generator=LLMGenerator(echo_first_sentence))
    assert default.reader_check is not None  # the shipped reader, no model to build
    default.ingest_documents(corpus_slice)
    off_question = default.query(answered_question)  # passage [1]'s first sentence does not answer it
    assert off_question.abstain_reason is AbstainReason.READER
    hinted = VerityRAGPipeline(generator=LLMGenerator(hinted_sentence, reader_hint=True))
    hinted.ingest_documents(corpus_slice)
    result = hinted.query(answered_question)
    assert not result.abstained, result.explanation
    assert any(s.stage == "reader" for s in result.trace)
    assert (
        VerityRAGPipeline(
            generator=LLMGenerator(echo_first_sentence), settings=Settings(llm_reader_check=False)
        ).reader_check
        is None
    )
    assert VerityRAGPipeline().reader_check is None  # extractive answers: off unless reader_check
