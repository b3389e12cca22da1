"""Strictness levels applied to LLM answers by reject-and-retry and best-of-N.

One 3-sentence answer with one unsupported sentence, a scripted complete_fn and a fake
verifier that rejects the sentences holding a marked word.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from verityrag.errors import InvalidInputError
from verityrag.generation.llm import LLMGenerator
from verityrag.generation.verified import BestOfN, RejectAndRetry
from verityrag.llm.completion import Completion
from verityrag.types import Chunk, Hit
from verityrag.verify.protocols import VerificationResult

pytestmark = pytest.mark.unit

_TEXT = "The Eiffel Tower was completed in 1889 for the World's Fair in Paris."
HITS = [Hit(Chunk("d1#0", "d1", "Eiffel Tower", _TEXT, 0, 0, len(_TEXT)), score=1.0)]
QUESTION = "When was the Eiffel Tower completed?"


class Scripted:
    """A complete_fn that answers with ``texts`` in turn (the last one repeated)."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.prompts: list[str] = []

    def __call__(self, prompt: str, **kwargs: Any) -> Completion:
        self.prompts.append(prompt)
        text = self.texts[min(len(self.prompts) - 1, len(self.texts) - 1)]
        return Completion(text, "scripted", prompt_tokens=5, completion_tokens=5)


SUPPORTED_1 = "The Eiffel Tower was completed in 1889 for the World's Fair."
SUPPORTED_2 = "The Eiffel Tower stands in Paris, where the World's Fair was held."
UNSUPPORTED = "It is painted blue."
# Two long supported sentences, one short unsupported one: faithfulness > 0.5.
THREE = f"{SUPPORTED_1[:-1]} [1]. {UNSUPPORTED[:-1]} [1]. {SUPPORTED_2[:-1]} [1]."
# One short supported sentence, two long unsupported ones: faithfulness < 0.5.
MOSTLY_INVENTED = (
    "The Eiffel Tower was completed in 1889 [1]. "
    "It was painted blue by a committee of four hundred volunteer artists [1]. "
    "Its blue paint was renewed every single spring until the present day [1]."
)
GOOD = "The Eiffel Tower was completed in 1889 [1]."


class MarkedWord:
    """Supports every sentence except those holding ``word``; counts the sentences it saw."""

    def __init__(self, word: str = "blue", error: bool = False) -> None:
        self.word = word
        self.error = error
        self.seen: list[str] = []

    def verify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
        self.seen.extend(sentences)
        out = []
        for s in sentences:
            if self.word not in s:
                out.append(VerificationResult(s, 0.9, True, "marked"))
            elif self.error:
                out.append(VerificationResult(s, 0.0, False, "marked", "", error="TimeoutError: no verdict"))
            else:
                out.append(
                    VerificationResult(s, 0.1, False, "marked", f"{self.word!r} is not in the evidence")
                )
        return out


def _retry(fn: Scripted, verifier: MarkedWord | None = None) -> RejectAndRetry:
    return RejectAndRetry(LLMGenerator(fn), verifier or MarkedWord(), max_attempts=3)


def test_loose_keeps_every_sentence_and_lists_the_unsupported_one() -> None:
    fn = Scripted(THREE)
    out = _retry(fn).answer(QUESTION, HITS, strictness="loose")
    assert out.accepted
    assert [s.text for s in out.sentences] == [SUPPORTED_1, UNSUPPORTED, SUPPORTED_2]
    assert out.answer == f"{SUPPORTED_1} {UNSUPPORTED} {SUPPORTED_2}"
    assert out.unsupported_claims == (UNSUPPORTED,)
    assert out.faithfulness is not None
    assert 0.5 < out.faithfulness < 1.0
    assert len(fn.prompts) == 1  # verification is informational: no retry
    details = out.trace_details()
    assert details["strictness"] == "loose"
    assert details["unsupported_claims"] == [UNSUPPORTED]


def test_lenient_is_loose() -> None:
    out = _retry(Scripted(THREE)).answer(QUESTION, HITS, strictness="lenient")
    assert out.strictness == "loose"
    assert len(out.sentences) == 3


def test_balanced_drops_the_unsupported_sentence_and_answers_with_the_other_two() -> None:
    fn = Scripted(THREE)
    out = _retry(fn).answer(QUESTION, HITS, strictness="balanced")
    assert out.accepted
    assert out.answer == f"{SUPPORTED_1} {SUPPORTED_2}"
    assert [s.citations[0].chunk_id for s in out.sentences] == ["d1#0", "d1#0"]
    assert out.unsupported_claims == (UNSUPPORTED,)
    assert out.faithfulness is not None
    assert out.faithfulness > 0.5
    assert len(fn.prompts) == 1
    log = out.trace_details()["attempt_log"]
    assert log[0]["accepted"]
    assert log[0]["rejection"] is None
    assert log[0]["unsupported_claims"] == [UNSUPPORTED]
    assert out.trace_details()["faithfulness"] == round(out.faithfulness, 4)


def test_paranoid_retries_with_feedback_then_abstains() -> None:
    fn = Scripted(THREE)
    out = _retry(fn).answer(QUESTION, HITS, strictness="paranoid")
    assert not out.accepted
    assert out.abstain_reason == "rejected"
    assert out.answer is None
    assert out.unsupported_claims == ()
    assert out.faithfulness is None
    assert len(fn.prompts) == 3
    assert UNSUPPORTED in fn.prompts[1]  # the feedback names the claim
    assert [a.rejection for a in out.attempts] == ["unfaithful"] * 3


def test_no_level_is_paranoid() -> None:
    out = _retry(Scripted(THREE)).answer(QUESTION, HITS)
    assert out.strictness == "paranoid"
    assert not out.accepted
    assert _retry(Scripted(GOOD)).answer(QUESTION, HITS).accepted


def test_paranoid_accepts_a_retry_that_is_fully_supported() -> None:
    out = _retry(Scripted(THREE, GOOD)).answer(QUESTION, HITS, strictness="paranoid")
    assert out.accepted
    assert out.chosen == 1
    assert out.unsupported_claims == ()
    assert out.faithfulness == 1.0


def test_balanced_refuses_when_too_little_of_the_answer_is_supported() -> None:
    fn = Scripted(MOSTLY_INVENTED)
    out = _retry(fn).answer(QUESTION, HITS, strictness="balanced")
    assert not out.accepted
    assert len(fn.prompts) == 3
    assert all(a.rejection == "unfaithful" and a.faithfulness < 0.5 for a in out.attempts)
    # the same answer passes at loose
    assert _retry(Scripted(MOSTLY_INVENTED)).answer(QUESTION, HITS, strictness="loose").accepted


def test_strict_needs_more_of_the_answer_than_balanced() -> None:
    # faithfulness of THREE is about 0.85: over strict's 0.80
    out = _retry(Scripted(THREE)).answer(QUESTION, HITS, strictness="strict")
    assert out.accepted
    assert out.faithfulness is not None
    assert out.faithfulness >= 0.8


def test_a_verifier_error_refuses_as_verifier_error() -> None:
    out = _retry(Scripted(THREE), MarkedWord(error=True)).answer(QUESTION, HITS, strictness="balanced")
    assert not out.accepted
    assert out.attempts[-1].rejection == "verifier_error"


def test_an_unknown_level_is_rejected_before_generating() -> None:
    fn = Scripted(THREE)
    with pytest.raises(InvalidInputError, match="strictness"):
        _retry(fn).answer(QUESTION, HITS, strictness="sloppy")
    assert fn.prompts == []


def test_best_of_n_applies_the_level_and_prefers_the_most_faithful() -> None:
    fn = Scripted(THREE, GOOD, MOSTLY_INVENTED)
    out = BestOfN(LLMGenerator(fn), MarkedWord(), n=3).answer(QUESTION, HITS, strictness="balanced")
    assert out.accepted
    assert out.chosen == 1  # GOOD: every sentence supported beats THREE with one dropped
    assert [a.accepted for a in out.attempts] == [False, True, False]
    assert out.attempts[2].rejection == "unfaithful"
    # Without GOOD, THREE wins with its unsupported sentence dropped.
    out = BestOfN(LLMGenerator(Scripted(THREE, MOSTLY_INVENTED)), MarkedWord(), n=2).answer(
        QUESTION, HITS, strictness="balanced"
    )
    assert out.chosen == 0
    assert out.answer == f"{SUPPORTED_1} {SUPPORTED_2}"
    assert out.unsupported_claims == (UNSUPPORTED,)


def test_best_of_n_paranoid_by_default_and_loose_keeps_everything() -> None:
    strategy = BestOfN(LLMGenerator(Scripted(THREE)), MarkedWord(), n=2)
    assert not strategy.answer(QUESTION, HITS).accepted
    out = BestOfN(LLMGenerator(Scripted(THREE)), MarkedWord(), n=2).answer(QUESTION, HITS, strictness="loose")
    assert out.accepted
    assert len(out.sentences) == 3
    assert out.unsupported_claims == (UNSUPPORTED,)
