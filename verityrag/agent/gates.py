"""The agent's gates: every refusal is one, a small object with one method, ``decide(case)``.

A gate reads the question's :class:`Case` (the best attempt, its evidence, and once written the
answer) and returns a :class:`Decision`: a :class:`Refusal` or none, and the trace step that
records what it decided (the controller writes the trace). The controller runs two lists in
order, the first refusal ending the question:

- before an answer is written (:meth:`AgentController.evidence_gates`): evidence found at all,
  the sufficiency gate, the documents' disagreement, the reader's decision (no span above its
  threshold, or one of the wrong kind), the answer check (the short answer against its quoted
  sentence) and the learned answerability check;
- after it (:meth:`AgentController.answer_gates`): the LLM's own refusal, claim-level grounding,
  the learned guard and the reader check (when answers are verified), then corroboration by
  independent sources (when the settings ask for it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from verityrag.agent.attempt import Attempt
from verityrag.agent.interfaces import AnswerabilityModel, AnswerCheckModel, AnswerGuard, ReaderCheckModel
from verityrag.generation.reading import Reading, probability
from verityrag.generation.verified import VerifiedAnswer
from verityrag.types import (
    AbstainReason,
    Chunk,
    CitedSentence,
    GroundingReport,
    ReplyCase,
    ShortAnswer,
    TraceStep,
)
from verityrag.verify.sources import ProvenanceLookup, corroboration

#: Top chunks the question-side checks (answerability, reader) read: enough for the answer,
#: few enough for one model window once trimmed to the question.
QUESTION_CHECK_CHUNKS = 3


@dataclass(frozen=True)
class WrittenAnswer:
    """The answer as written (the reader's sentences, or an LLM's), before the gates after it."""

    sentences: tuple[CitedSentence, ...]
    text: str  # what the user reads: the sentences, or an LLM answer with its verifier's notes
    short_answer: ShortAnswer | None  # the reader's span (None for an LLM's answer)
    # The claim-level grounding of the sentences (None: there are none, the LLM did not answer),
    # and what computing it took; an extractive sentence unverified is verbatim evidence (1.0).
    report: GroundingReport | None
    grounding_ms: float = 0.0
    unsupported_claims: tuple[str, ...] = ()
    generated: VerifiedAnswer | None = None  # the LLM strategy's outcome (None: extractive)


@dataclass(frozen=True)
class HopTried:
    """What a second hop found when it read no answer: the bridges' link and targets, or the
    things of a comparison that no document dates (or that tie)."""

    link: str = ""  # the title of the passage that named the targets
    targets: tuple[str, ...] = ()
    undated: tuple[str, ...] = ()
    death: bool = False  # the comparison was of when they died
    tie: bool = False
    unnamed: bool = False  # the earlier thing's document does not write its name as the question does
    undecided: str = ""  # why two things' documents do not decide what is asked of them


@dataclass
class Case:
    """One question on its way to a reply: what the gates read."""

    question: str
    best: Attempt
    sufficiency_threshold: float
    n_live: int  # chunks in the index the question was asked of
    answer: WrittenAnswer | None = None  # set once the answer is written
    hop: HopTried | None = None  # a second hop that read no answer

    @cached_property
    def evidence_text(self) -> str:
        """The top chunks the question-side checks read."""
        return " ".join(h.chunk.text for h in self.best.hits[:QUESTION_CHECK_CHUNKS])

    @cached_property
    def evidence(self) -> Mapping[str, Chunk]:
        """Chunk id -> chunk, of the best attempt."""
        return {h.chunk_id: h.chunk for h in self.best.hits}

    @property
    def answer_sentences(self) -> Sequence[CitedSentence]:
        return self.answer.sentences if self.answer is not None else ()


@dataclass(frozen=True)
class Refusal:
    """Why a gate refused: the reason, and what the trace and the user are told."""

    reason: AbstainReason
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    """A gate's decision: a refusal or none, and the trace step recording it (none: nothing to record)."""

    refusal: Refusal | None = None
    step: TraceStep | None = None


#: A gate that lets the question go on and records nothing.
GO_ON = Decision()


class AgentGate(Protocol):
    """One decision on a question."""

    def decide(self, case: Case) -> Decision: ...


@dataclass(frozen=True)
class EvidenceFound:
    """Retrieval must find something."""

    def decide(self, case: Case) -> Decision:
        return GO_ON if case.best.hits else Decision(Refusal(AbstainReason.NO_EVIDENCE))


def unnamed_subjects(reading: Reading | None) -> str | None:
    """Why nothing answers when the question names what no passage holding a span names."""
    if reading is None or reading.short_answer is not None or not reading.missing_subjects:
        return None
    names = " or ".join(repr(name) for name in reading.missing_subjects)
    return f"the documents do not say: no passage found that answers it names {names}"


@dataclass(frozen=True)
class EnoughEvidence:
    """The evidence must be sufficient by the gate's probability; below ``min_chunks`` chunks in
    the index, with a reader, the gate scores but the reader decides."""

    min_chunks: int
    reader_decides_small_corpora: bool

    def decide(self, case: Case) -> Decision:
        gated = not self.reader_decides_small_corpora or case.n_live >= self.min_chunks
        if case.best.probability >= case.sufficiency_threshold or not gated:
            return GO_ON
        # Said in the reader's words when what the question names is in no passage it read, or
        # when it read a span of the kind asked: what a passage may say.
        reading = case.best.reading
        said = unnamed_subjects(reading) or (may_say(reading) if reading is not None else None)
        details = {} if said is None else {"explanation": said}
        return Decision(Refusal(AbstainReason.SUFFICIENCY, details))


#: The reader's probability from which a span it read, under its bar for an answer, is what a
#: passage may say ("not sure enough"); under it, the documents do not say (a span read at 1e-8
#: over a question the documents never touch is no lead).
MAY_SAY = 0.5


def lead(reading: Reading) -> ShortAnswer | None:
    """The span the reader read of the kind asked and at least :data:`MAY_SAY` likely: what a
    passage may say (None: no lead)."""
    span = reading.short_answer
    if span is None or not reading.type_ok or reading.answer_probability < MAY_SAY:
        return None
    return span


def may_say(reading: Reading) -> str | None:
    """What a passage may say, in words, when the reader read a lead (:func:`lead`) but not
    surely enough to answer; None when it read none."""
    span = lead(reading)
    if span is None:
        return None
    return f"not sure enough to answer: {_title_of(reading, span.chunk_id)} may say {span.text!r}"


def reply_case(reason: AbstainReason, reading: Reading | None) -> tuple[ReplyCase, ShortAnswer | None]:
    """Which case a refusal for ``reason`` is, for a person (:class:`ReplyCase`), and the span a
    passage may give when it is one not sure enough."""
    if reason is AbstainReason.CONFLICT:
        return ReplyCase.SOURCES_DISAGREE, None
    if reason in (AbstainReason.NO_EVIDENCE, AbstainReason.MISSING_HOP) or reading is None:
        return ReplyCase.NOT_FOUND, None
    if reading.short_answer is None:
        return (ReplyCase.UNKNOWN_NAME if reading.missing_subjects else ReplyCase.NOT_FOUND), None
    span = lead(reading)
    return (ReplyCase.NOT_FOUND, None) if span is None else (ReplyCase.NOT_SURE, span)


def _unanswered(reading: Reading, logit_threshold: float) -> str | None:
    """Why the reader's span is no answer (below the threshold, or of the wrong kind), or None."""
    if reading.short_answer is None:
        return "the documents do not say: no passage answers the question"
    if reading.answer_logit < logit_threshold:
        return may_say(reading) or "the documents do not say: no passage answers the question"
    if not reading.type_ok:
        return (
            f"the documents do not say: the question asks for a {reading.expected.value}, and the best "
            f"passage offers {reading.short_answer.text!r}"
        )
    return None


@dataclass(frozen=True)
class ReaderDecision:
    """The reader must find a span above its threshold (on the answer logit), of the kind asked."""

    logit_threshold: float

    def decide(self, case: Case) -> Decision:
        reading = case.best.reading
        if reading is None:
            return GO_ON
        explanation = unnamed_subjects(reading) or _unanswered(reading, self.logit_threshold)
        details: dict[str, Any] = {
            **reading.trace_details(),
            # On the probability scale, as every check's score and threshold in the trace.
            "score": reading.answer_probability,
            "threshold": probability(self.logit_threshold),
            "answers": explanation is None,
        }
        step = TraceStep("reader_decision", 0.0, details)
        if explanation is None:
            return Decision(step=step)
        return Decision(Refusal(AbstainReason.ANSWERABILITY, {"explanation": explanation}), step)


def _title_of(reading: Reading, chunk_id: str) -> str:
    """The title of the document the answer's sentences cite (the chunk id when none says)."""
    for sentence in reading.sentences:
        for citation in sentence.citations:
            if citation.chunk_id == chunk_id:
                return citation.title or citation.doc_id
    return chunk_id


@dataclass(frozen=True)
class AnswerChecked:
    """The reader's short answer, with the sentences quoted for it, must pass the answer check
    (:class:`~verityrag.checks.answer_check.AnswerCheck`): a span the reader found for a nearby
    question (the other clinic's price, another attribute of the same thing) is refused."""

    check: AnswerCheckModel

    def decide(self, case: Case) -> Decision:
        reading = case.best.reading
        if reading is None or reading.short_answer is None or not reading.sentences:
            return GO_ON
        t0 = time.perf_counter()
        answer = reading.short_answer.text
        score = self.check.score(case.question, answer, " ".join(s.text for s in reading.sentences))
        threshold = self.check.threshold
        details = {"score": score, "threshold": threshold, "answer": answer}
        step = TraceStep("answer_check", (time.perf_counter() - t0) * 1000, details)
        if score >= threshold:
            return Decision(step=step)
        explanation = (
            f"not sure enough to answer: {_title_of(reading, reading.short_answer.chunk_id)} may say "
            f"{answer!r}, but not clearly for this question"
        )
        return Decision(Refusal(AbstainReason.ANSWERABILITY, {"explanation": explanation}), step)


@dataclass(frozen=True)
class SourcesAgree:
    """No other document may give a different answer that the reader supports above
    ``logit_threshold`` beside an answer it supports as well: the documents' disagreement is
    reported, naming both."""

    logit_threshold: float

    def decide(self, case: Case) -> Decision:
        reading = case.best.reading
        if reading is None or reading.short_answer is None or reading.answer_logit < self.logit_threshold:
            return GO_ON
        others = [a for a in reading.alternatives if a.answer_logit >= self.logit_threshold]
        if not others:
            return GO_ON
        answer = reading.short_answer
        said = [f"{answer.text!r} ({_title_of(reading, answer.chunk_id)})"]
        said += [f"{a.text!r} ({a.title or a.doc_id})" for a in others]
        details = {
            "conflict": [
                {
                    "answer": answer.text,
                    "chunk_id": answer.chunk_id,
                    "title": _title_of(reading, answer.chunk_id),
                }
            ]
            + [a.trace_details() for a in others],
            "explanation": "the documents disagree: " + " or ".join(said),
        }
        return Decision(Refusal(AbstainReason.CONFLICT, details))


def _answer_text(case: Case) -> str:
    return " ".join(s.text for s in case.answer_sentences)


def _cited_text(case: Case) -> str:
    cited_ids = dict.fromkeys(c.chunk_id for s in case.answer_sentences for c in s.citations)
    return " ".join(case.evidence[cid].text for cid in cited_ids if cid in case.evidence)


def answerability_inputs(case: Case) -> tuple[str, ...]:
    """(question, evidence): can the evidence answer the question?"""
    return (case.question, case.evidence_text)


def guard_inputs(case: Case) -> tuple[str, ...]:
    """(the passages the answer cites, the answer): do they support it? The question is not read."""
    return (_cited_text(case), _answer_text(case))


def reader_check_inputs(case: Case) -> tuple[str, ...]:
    """(question, evidence, answer): does the answer say what a reader finds for the question?"""
    return (case.question, case.evidence_text, _answer_text(case))


@dataclass(frozen=True)
class LearnedCheckGate:
    """A learned check's score (recorded in the trace under ``stage``) must reach its threshold."""

    stage: str
    check: AnswerGuard | AnswerabilityModel | ReaderCheckModel
    reason: AbstainReason
    inputs: Callable[[Case], tuple[str, ...]]

    def decide(self, case: Case) -> Decision:
        t0 = time.perf_counter()
        score = self.check.score(*self.inputs(case))
        details = {"score": score, "threshold": self.check.threshold}
        step = TraceStep(self.stage, (time.perf_counter() - t0) * 1000, details)
        return Decision(None if score >= self.check.threshold else Refusal(self.reason), step)


@dataclass(frozen=True)
class ModelAnswered:
    """An LLM's answer must have been given and kept by its strategy's verification: a refusal by
    the model is an answerability abstention, one its verifier could not decide (a fail-closed
    timeout or malformed verdict, whose text is in the trace's attempt log) a verifier error, and
    one it rejected a grounding abstention."""

    def decide(self, case: Case) -> Decision:
        generated = case.answer.generated if case.answer is not None else None
        if generated is None or generated.accepted:
            return GO_ON
        if generated.abstain_reason == "refused":
            return Decision(Refusal(AbstainReason.ANSWERABILITY))
        last = generated.attempts[-1] if generated.attempts else None
        undecided = last is not None and last.rejection == "verifier_error"
        return Decision(Refusal(AbstainReason.VERIFIER_ERROR if undecided else AbstainReason.GROUNDING))


@dataclass(frozen=True)
class Grounded:
    """The answer's claim-level grounding must reach ``threshold``; with ``enforced`` off (an LLM
    answer at a level that keeps unsupported sentences, already verified by its strategy) it is
    recorded, not enforced."""

    threshold: float
    enforced: bool

    def decide(self, case: Case) -> Decision:
        answer = case.answer
        if answer is None or answer.report is None:
            return GO_ON
        report = answer.report
        details = {
            "score": report.overall_score,
            "threshold": self.threshold,
            "claims": len(report.claims),
            "enforced": self.enforced,
        }
        step = TraceStep("grounding", answer.grounding_ms, details)
        refused = self.enforced and report.overall_score < self.threshold
        return Decision(Refusal(AbstainReason.GROUNDING) if refused else None, step)


@dataclass(frozen=True)
class Corroborated:
    """At least ``min_sources`` independent documents among the evidence must say the answer
    (:func:`verityrag.verify.sources.corroboration`): a planted document alone does not answer."""

    provenance: ProvenanceLookup
    min_sources: int

    def decide(self, case: Case) -> Decision:
        answer = case.answer
        if answer is None:
            return GO_ON
        t0 = time.perf_counter()
        hits = case.best.hits
        doc_ids = list(dict.fromkeys(h.chunk.doc_id for h in hits))
        claim, agreeing, independent = corroboration(
            case.question, answer.short_answer, answer.text, hits, self.provenance(doc_ids)
        )
        details = {
            "min_sources": self.min_sources,
            "claim": claim,
            "agreeing": agreeing,
            "independent": independent,
        }
        step = TraceStep("corroboration", (time.perf_counter() - t0) * 1000, details)
        if len(independent) >= self.min_sources:
            return Decision(step=step)
        explanation = (
            f"only {len(independent)} independent document(s) among the evidence say this; "
            f"{self.min_sources} must agree (min_sources)"
        )
        refusal = Refusal(AbstainReason.CORROBORATION, {"corroboration": details, "explanation": explanation})
        return Decision(refusal, step)


@dataclass(frozen=True)
class HopAnswered:
    """A second hop must read an answer: bridges whose targets' documents hold none, or a thing a
    comparison names that no document dates, are a missing hop, named; a comparison whose things
    tie is no answer."""

    def decide(self, case: Case) -> Decision:
        tried = case.hop
        if tried is None:
            return GO_ON
        if tried.tie:
            tie = "the documents do not say: they give both the same year"
            return Decision(Refusal(AbstainReason.ANSWERABILITY, {"explanation": tie}))
        if tried.unnamed:
            return Decision(Refusal(AbstainReason.ANSWERABILITY))
        if tried.undecided:
            return Decision(Refusal(AbstainReason.ANSWERABILITY, {"explanation": tried.undecided}))
        if tried.undated:
            names = " or ".join(repr(t) for t in tried.undated)
            said = f"the documents do not say: no document says when {names} {'died' if tried.death else 'began'}"
            return Decision(Refusal(AbstainReason.MISSING_HOP, {"explanation": said}))
        named = " or ".join(repr(t) for t in tried.targets)
        said = (
            f"the documents do not say: {tried.link} names {named}, and no document about "
            f"{'it' if len(tried.targets) == 1 else 'them'} answers the question"
        )
        return Decision(Refusal(AbstainReason.MISSING_HOP, {"explanation": said, "bridges": named}))


def first_refusal(gates: Sequence[AgentGate], case: Case, trace: list[TraceStep]) -> Refusal | None:
    """The first gate's refusal, in order, each gate's step recorded in ``trace``; None when every
    gate lets the question go on."""
    for gate in gates:
        decision = gate.decide(case)
        if decision.step is not None:
            trace.append(decision.step)
        if decision.refusal is not None:
            return decision.refusal
    return None
