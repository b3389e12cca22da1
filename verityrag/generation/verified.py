"""Verified LLM answers: reject-and-retry and best-of-N over any ``Verifier``.

    RejectAndRetry   generate -> verify every sentence against the passages it cites
                     -> apply the strictness level (verityrag.verify.strictness)
                     refused -> regenerate with feedback (which claim, which passages, why)
                     at most ``max_attempts`` (3) -> else abstain with every attempt's log
    BestOfN          ``n`` sampled candidates -> verify each -> apply the level -> the best
                     accepted one whose weakest kept sentence scores >= ``threshold`` -> else abstain

The strictness level comes per request (``answer(question, hits, strictness=...)``; the
agent passes ``Settings.strictness``). ``loose`` keeps every sentence (verification is
informational); ``balanced``, ``strict`` and ``paranoid`` drop unsupported sentences and
refuse an attempt when its faithfulness (the supported share of the original answer's
characters) is under the level's minimum.
Either way the unsupported sentences are the answer's ``unsupported_claims``. Without a
level, ``paranoid``: an attempt stands only when every sentence is supported.

Each sentence is verified against the passages it cites, each passage as its title and
text (``"<title>\n<text>"``): the prompt shows the model the title too, and the agent's
grounding check reads it. A sentence that cites nothing is rejected without asking the
verifier. A verifier may attach ``details["annotation"]`` to a verdict (the fail-open
LLM judge: ``" [Confidence: N%]"`` and a low-confidence warning): a kept sentence's
annotation follows it in the answer text (:attr:`VerifiedAnswer.answer`) and in the trace,
while ``sentences`` stay plain for the agent's own checks. The model
saying the evidence does not hold the answer is an abstention, not a retry. Every
attempt keeps its text, verdicts, tokens and timings for the trace
(:meth:`VerifiedAnswer.trace_details`). Provider errors (``LLMError``) propagate: the
provider already retried, and a backend that is down is the caller's to handle.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from verityrag.config import Strictness
from verityrag.errors import InvalidInputError, VerityRAGError
from verityrag.generation.extractive import ExtractiveGenerator
from verityrag.generation.llm import Feedback, LLMAnswer, LLMGenerator
from verityrag.text.analyzer import Analyzer
from verityrag.types import CitedSentence, Hit
from verityrag.verify.grounding_verifier import GroundingVerifier
from verityrag.verify.protocols import VerificationResult, Verifier
from verityrag.verify.strictness import (
    StrictnessOutcome,
    apply_strictness,
    strictness_policy,
)

__all__ = [
    "DEFAULT_STRICTNESS",
    "AnswerStrategy",
    "AttemptRecord",
    "BestOfN",
    "RejectAndRetry",
    "VerifiedAnswer",
    "evidence_document",
    "verify_answer",
]

# The level a strategy applies when the caller names none: every sentence must be supported.
DEFAULT_STRICTNESS: Strictness = "paranoid"

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AttemptRecord:
    """One generated answer and what the verifier said about it."""

    attempt: int  # from 1
    text: str
    sentences: tuple[CitedSentence, ...]
    cited_numbers: tuple[tuple[int, ...], ...]
    verdicts: tuple[VerificationResult, ...]
    accepted: bool
    score: float  # the weakest sentence's score (0.0 for an empty answer)
    refused: bool = False
    feedback_given: tuple[Feedback, ...] = ()  # the feedback this attempt was generated with
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    generate_ms: float = 0.0
    verify_ms: float = 0.0
    unsupported_claims: tuple[str, ...] = ()  # the sentences the verifier did not support
    faithfulness: float = 0.0  # supported share of the answer's characters
    # Why this attempt was not accepted: the strictness refusal ("verifier_error",
    # "unfaithful", "nothing_supported"), "below_threshold" (best-of-N), or None.
    rejection: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "text": self.text,
            "sentences": [
                {"text": s.text, "cites": list(n), "chunk_ids": [c.chunk_id for c in s.citations]}
                for s, n in zip(self.sentences, self.cited_numbers, strict=True)
            ],
            "verdicts": [
                {
                    "sentence": v.sentence,
                    "score": round(v.score, 4),
                    "supported": v.supported,
                    "stage": v.stage,
                    "reason": v.reason,
                    "error": v.error,
                    "annotation": _annotation(v) or None,
                }
                for v in self.verdicts
            ],
            "accepted": self.accepted,
            "score": round(self.score, 4),
            "refused": self.refused,
            "unsupported_claims": list(self.unsupported_claims),
            "faithfulness": round(self.faithfulness, 4),
            "rejection": self.rejection,
            "feedback_given": [f.render() for f in self.feedback_given],
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "generate_ms": round(self.generate_ms, 1),
            "verify_ms": round(self.verify_ms, 3),
        }


@dataclass(frozen=True, slots=True)
class VerifiedAnswer:
    """The outcome: accepted sentences, or an abstention with every attempt's log.

    ``sentences`` are the accepted attempt's kept sentences (all of them under ``loose``);
    ``unsupported_claims`` are its sentences the verifier did not support (dropped, or kept
    under ``loose``) and ``faithfulness`` its supported share of characters. Both are empty /
    ``None`` on an abstention; every attempt's own figures are in ``attempts``.
    ``annotations`` go with ``sentences`` one for one (``""`` for none): what the verifier
    asked to show after each sentence (the fail-open judge's confidence and warning).
    :attr:`answer` is the text for the user, annotations included; ``sentences`` stay plain.
    """

    strategy: str
    sentences: tuple[CitedSentence, ...]
    accepted: bool
    attempts: tuple[AttemptRecord, ...]
    chosen: int | None = None  # index into attempts of the accepted one
    abstain_reason: str | None = None  # "rejected" | "refused"
    latency_ms: float = 0.0
    evidence: tuple[Hit, ...] = field(default=())
    strictness: Strictness = DEFAULT_STRICTNESS
    unsupported_claims: tuple[str, ...] = ()
    faithfulness: float | None = None
    annotations: tuple[str, ...] = ()

    @property
    def answer(self) -> str | None:
        """The answer text for the user: each kept sentence followed by its annotation, if any."""
        if not self.accepted:
            return None
        notes = self.annotations or ("",) * len(self.sentences)
        return " ".join(s.text + note for s, note in zip(self.sentences, notes, strict=True))

    def accounting(self) -> dict[str, Any]:
        """Per-request cost: attempts, tokens (``None`` when the provider does not report them), latency."""

        def total(values: Sequence[int | None]) -> int | None:
            return None if any(v is None for v in values) else sum(v or 0 for v in values)

        return {
            "attempts": len(self.attempts),
            "prompt_tokens": total([a.prompt_tokens for a in self.attempts]),
            "completion_tokens": total([a.completion_tokens for a in self.attempts]),
            "generate_ms": round(sum(a.generate_ms for a in self.attempts), 1),
            "verify_ms": round(sum(a.verify_ms for a in self.attempts), 3),
            "latency_ms": round(self.latency_ms, 1),
        }

    def trace_details(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "accepted": self.accepted,
            "chosen_attempt": None if self.chosen is None else self.attempts[self.chosen].attempt,
            "abstain_reason": self.abstain_reason,
            "strictness": self.strictness,
            "answer": self.answer,
            "annotations": list(self.annotations),
            "unsupported_claims": list(self.unsupported_claims),
            "faithfulness": None if self.faithfulness is None else round(self.faithfulness, 4),
            "evidence": [h.chunk_id for h in self.evidence],
            **self.accounting(),
            "attempt_log": [a.as_dict() for a in self.attempts],
        }


class AnswerStrategy(Protocol):
    """What the agent calls after its gates: an answer over the evidence, verified, or an abstention.

    ``strictness`` is the request's level (a :data:`~verityrag.verify.strictness.STRICTNESS_TABLE`
    name or alias); the agent always passes it. ``reader_span`` is the extractive reader's answer
    when the agent's reader found one (a strategy may show it to the model or ignore it).
    """

    def answer(
        self, question: str, hits: Sequence[Hit], strictness: str = ..., reader_span: str | None = ...
    ) -> VerifiedAnswer: ...


def evidence_document(hit: Hit) -> str:
    """A cited passage as the verifier reads it: ``"<title>\n<text>"`` (the text alone when untitled).

    The prompt shows the model each passage with its title, and the agent's grounding check
    reads titles, so a name the answer takes from the title is in the verifier's evidence too.
    """
    title, text = hit.chunk.title.strip(), hit.chunk.text
    return f"{title}\n{text}" if title else text


def _annotation(verdict: VerificationResult) -> str:
    note = verdict.details.get("annotation")
    return note if isinstance(note, str) else ""


def verify_answer(answer: LLMAnswer, verifier: Verifier) -> list[VerificationResult]:
    """One verdict per sentence, each judged against the passages that sentence cites only
    (each with its title, :func:`evidence_document`)."""
    verdicts: list[VerificationResult] = []
    for sentence, numbers in zip(answer.sentences, answer.numbers, strict=True):
        if not sentence.citations:
            verdicts.append(
                VerificationResult(sentence.text, 0.0, False, "citation", "cites no evidence passage")
            )
            continue
        documents = [evidence_document(answer.evidence[n - 1]) for n in numbers]
        try:
            verdicts.append(verifier.verify([sentence.text], documents)[0])
        except VerityRAGError as exc:  # a verifier that cannot decide does not pass anything
            verdicts.append(
                VerificationResult(
                    sentence.text, 0.0, False, "verifier_error", "", error=f"{type(exc).__name__}: {exc}"
                )
            )
    return verdicts


def _feedback(answer: LLMAnswer, verdicts: Sequence[VerificationResult]) -> tuple[Feedback, ...]:
    if not answer.sentences:
        return (Feedback("(empty answer)", (), "the answer had no sentence"),)
    out = []
    for numbers, verdict in zip(answer.numbers, verdicts, strict=True):
        if not verdict.supported:
            reason = verdict.reason or f"not supported by the cited passage(s) (score {verdict.score:.2f})"
            out.append(Feedback(verdict.sentence, numbers, reason))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class _Judged:
    """The level's outcome for one attempt, the sentences it keeps (in order) and their annotations."""

    outcome: StrictnessOutcome
    kept: tuple[CitedSentence, ...]
    annotations: tuple[str, ...]


def _judge(answer: LLMAnswer, verdicts: Sequence[VerificationResult], level: Strictness) -> _Judged:
    outcome = apply_strictness(verdicts, level)
    keep_all = not strictness_policy(level).drops_unsupported
    pairs = [(s, v) for s, v in zip(answer.sentences, verdicts, strict=True) if keep_all or v.supported]
    return _Judged(outcome, tuple(s for s, _ in pairs), tuple(_annotation(v) for _, v in pairs))


def _record(
    attempt: int,
    answer: LLMAnswer,
    verdicts: Sequence[VerificationResult],
    accepted: bool,
    feedback_given: tuple[Feedback, ...],
    verify_ms: float,
    outcome: StrictnessOutcome | None = None,
) -> AttemptRecord:
    score = min((v.score for v in verdicts), default=0.0)
    return AttemptRecord(
        attempt=attempt,
        text=answer.raw_text,
        sentences=answer.sentences,
        cited_numbers=answer.numbers,
        verdicts=tuple(verdicts),
        accepted=accepted,
        score=score,
        refused=answer.refused,
        feedback_given=feedback_given,
        prompt_tokens=answer.completion.prompt_tokens,
        completion_tokens=answer.completion.completion_tokens,
        generate_ms=answer.latency_ms,
        verify_ms=verify_ms,
        unsupported_claims=outcome.unsupported_claims if outcome is not None else (),
        faithfulness=outcome.faithfulness if outcome is not None else 0.0,
        rejection=outcome.refusal if outcome is not None else None,
    )


def _check(answer: LLMAnswer, verifier: Verifier) -> tuple[list[VerificationResult], float]:
    t0 = time.perf_counter()
    verdicts = verify_answer(answer, verifier) if answer.sentences else []
    return verdicts, (time.perf_counter() - t0) * 1000


class RejectAndRetry:
    """Generate, verify, regenerate with specific feedback; at most ``max_attempts`` tries."""

    name = "reject_and_retry"

    def __init__(
        self,
        generator: LLMGenerator,
        verifier: Verifier | None = None,
        max_attempts: int = 3,
        retry_temperature: float | None = None,
    ) -> None:
        if max_attempts < 1:
            raise InvalidInputError("max_attempts", f"must be >= 1, got {max_attempts!r}")
        self.generator = generator
        self.verifier: Verifier = verifier or GroundingVerifier()
        self.max_attempts = max_attempts
        self.retry_temperature = retry_temperature  # None: the generator's own temperature

    def __repr__(self) -> str:
        return f"RejectAndRetry({self.generator!r}, verifier={self.verifier!r}, max_attempts={self.max_attempts})"

    def answer(
        self,
        question: str,
        hits: Sequence[Hit],
        strictness: str = DEFAULT_STRICTNESS,
        reader_span: str | None = None,
    ) -> VerifiedAnswer:
        """Answer at ``strictness`` (default ``paranoid``: every sentence supported).

        An attempt the level refuses is regenerated with feedback on its unsupported
        sentences; the accepted one answers with the sentences the level keeps.
        """
        level = strictness_policy(strictness).level
        started = time.perf_counter()
        records: list[AttemptRecord] = []
        feedback: tuple[Feedback, ...] = ()
        answer: LLMAnswer | None = None
        for attempt in range(1, self.max_attempts + 1):
            temperature = self.retry_temperature if attempt > 1 else None
            answer = self.generator.generate(
                question, hits, feedback, temperature=temperature, reader_span=reader_span
            )
            if answer.refused:
                records.append(_record(attempt, answer, [], False, feedback, 0.0))
                logger.debug("attempt %d: the model says the evidence does not answer %r", attempt, question)
                return _verified_answer(self.name, level, answer, records, None, "refused", started)
            verdicts, verify_ms = _check(answer, self.verifier)
            judged = _judge(answer, verdicts, level)
            outcome = judged.outcome
            accepted = not outcome.refused
            records.append(_record(attempt, answer, verdicts, accepted, feedback, verify_ms, outcome))
            if accepted:
                chosen = len(records) - 1
                return _verified_answer(self.name, level, answer, records, chosen, None, started, judged)
            feedback = _feedback(answer, verdicts)
            logger.debug(
                "attempt %d rejected (%s): %s", attempt, outcome.refusal, [f.render() for f in feedback]
            )
        assert answer is not None
        return _verified_answer(self.name, level, answer, records, None, "rejected", started)


class BestOfN:
    """``n`` candidates sampled at ``temperature``, each verified and judged by the strictness
    level; among the accepted ones whose weakest kept sentence scores >= ``threshold`` (not
    checked under ``loose``), the most faithful wins, then the one with the best weakest kept
    sentence. At ``paranoid`` (the default) that is: every sentence supported, ranked by the
    weakest sentence."""

    name = "best_of_n"

    def __init__(
        self,
        generator: LLMGenerator,
        verifier: Verifier | None = None,
        n: int = 3,
        threshold: float = 0.5,
        temperature: float = 0.7,
    ) -> None:
        if n < 1:
            raise InvalidInputError("n", f"must be >= 1, got {n!r}")
        if not 0.0 <= threshold <= 1.0:
            raise InvalidInputError("threshold", f"must be in [0, 1], got {threshold!r}")
        self.generator = generator
        self.verifier: Verifier = verifier or GroundingVerifier()
        self.n = n
        self.threshold = threshold
        self.temperature = temperature

    def __repr__(self) -> str:
        return f"BestOfN({self.generator!r}, verifier={self.verifier!r}, n={self.n})"

    def answer(
        self,
        question: str,
        hits: Sequence[Hit],
        strictness: str = DEFAULT_STRICTNESS,
        reader_span: str | None = None,
    ) -> VerifiedAnswer:
        """Answer at ``strictness`` (default ``paranoid``: every sentence supported)."""
        policy = strictness_policy(strictness)
        started = time.perf_counter()
        records: list[AttemptRecord] = []
        answers: list[LLMAnswer] = []
        judged: dict[int, _Judged] = {}
        rank: dict[int, tuple[float, float]] = {}
        seen: dict[str, tuple[list[VerificationResult], float]] = {}
        for attempt in range(1, self.n + 1):
            answer = self.generator.generate(
                question, hits, temperature=self.temperature, reader_span=reader_span
            )
            answers.append(answer)
            if answer.refused:
                records.append(_record(attempt, answer, [], False, (), 0.0))
                continue
            # Identical candidates (common at low temperature) are verified once.
            verdicts, verify_ms = seen.get(answer.raw_text) or _check(answer, self.verifier)
            seen[answer.raw_text] = (verdicts, verify_ms)
            this = _judge(answer, verdicts, policy.level)
            outcome = this.outcome
            # The weakest sentence the answer would keep that the verifier supports.
            weakest = min((v.score for v in verdicts if v.supported), default=0.0)
            ok = not outcome.refused and (not policy.drops_unsupported or weakest >= self.threshold)
            if ok:
                judged[len(records)] = this
                rank[len(records)] = (outcome.faithfulness, weakest)
            elif not outcome.refused:
                outcome = dataclasses.replace(outcome, refusal="below_threshold")
            records.append(_record(attempt, answer, verdicts, ok, (), verify_ms, outcome))
        chosen = max(rank, key=lambda i: (*rank[i], -i)) if rank else None
        # Only the winner stays "accepted" in the log; the others were ranked below it.
        final = [r if i == chosen else _replace_accepted(r, False) for i, r in enumerate(records)]
        if chosen is None:
            reason = "refused" if records and all(r.refused for r in records) else "rejected"
            return _verified_answer(self.name, policy.level, answers[-1], final, None, reason, started)
        return _verified_answer(
            self.name, policy.level, answers[chosen], final, chosen, None, started, judged[chosen]
        )


def _verified_answer(
    strategy: str,
    level: Strictness,
    answer: LLMAnswer,
    records: Sequence[AttemptRecord],
    chosen: int | None,
    reason: str | None,
    started: float,
    judged: _Judged | None = None,
) -> VerifiedAnswer:
    """The outcome of a strategy: the kept sentences of ``answer`` when one was chosen, else none."""
    accepted = chosen is not None and judged is not None
    outcome = judged.outcome if judged is not None else None
    return VerifiedAnswer(
        strategy=strategy,
        sentences=judged.kept if accepted and judged is not None else (),
        accepted=accepted,
        attempts=tuple(records),
        chosen=chosen if accepted else None,
        abstain_reason=reason,
        latency_ms=(time.perf_counter() - started) * 1000,
        evidence=answer.evidence,
        strictness=level,
        unsupported_claims=outcome.unsupported_claims if accepted and outcome is not None else (),
        faithfulness=outcome.faithfulness if accepted and outcome is not None else None,
        annotations=judged.annotations if accepted and judged is not None else (),
    )


def _replace_accepted(record: AttemptRecord, accepted: bool) -> AttemptRecord:
    return dataclasses.replace(record, accepted=accepted)


def answer_parts(
    generator: ExtractiveGenerator | LLMGenerator | AnswerStrategy | None, analyzer: Analyzer
) -> tuple[ExtractiveGenerator, AnswerStrategy | None]:
    """What a pipeline answers with: the extractive generator, which always ranks sentences (the
    gates read its features), and the strategy that writes the answer after the gates (None: the
    extractive answer). A bare LLMGenerator is wrapped in reject-and-retry with the grounding verifier."""
    extractive = (
        generator if isinstance(generator, ExtractiveGenerator) else ExtractiveGenerator(analyzer=analyzer)
    )
    if isinstance(generator, LLMGenerator):
        return extractive, RejectAndRetry(generator)
    if generator is None or isinstance(generator, ExtractiveGenerator):
        return extractive, None
    if not callable(getattr(generator, "answer", None)):
        raise InvalidInputError(
            "generator",
            "must be an ExtractiveGenerator, an LLMGenerator or have answer(question, hits, strictness)",
        )
    return extractive, generator
