"""The agent's gates: each a small object with one method, ``refuse(case)``, composed as a list.

A gate reads the question's :class:`Case` (the best attempt, its evidence, and once written the
answer) and returns a :class:`Refusal` or None to let the question go on. The controller runs
two lists in order, the first refusal ending the question:

- before an answer is written (:meth:`AgentController.evidence_gates`): the sufficiency gate, the
  documents' disagreement, the reader's decision (no span above its threshold, or one of the
  wrong kind), the answer check (the short answer against its quoted sentence) and the learned
  answerability check;
- after it, when answers are verified (:meth:`AgentController.answer_gates`): the learned guard
  and the reader check. Claim-level grounding runs between the two lists: its report is part of
  every reply, not only of a refusal.

Each gate records what it decided in the trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from verityrag.agent.attempt import Attempt
from verityrag.agent.interfaces import AnswerabilityModel, AnswerCheckModel, AnswerGuard, ReaderAgreementCheck
from verityrag.generation.reading import Reading, probability
from verityrag.types import AbstainReason, Chunk, CitedSentence, TraceStep


@dataclass
class Case:
    """One question on its way to a reply: what the gates read."""

    question: str
    best: Attempt
    trace: list[TraceStep]
    evidence_text: str  # the top chunks the question-side checks read
    sufficiency_threshold: float
    n_live: int  # chunks in the index the question was asked of
    answer_sentences: Sequence[CitedSentence] = ()  # set once the answer is written
    evidence: Mapping[str, Chunk] = field(default_factory=dict)  # chunk id -> chunk, of the best attempt


@dataclass(frozen=True)
class Refusal:
    """Why a gate refused: the reason, and what the trace and the user are told."""

    reason: AbstainReason
    details: Mapping[str, Any] = field(default_factory=dict)


class AgentGate(Protocol):
    """One decision on a question: a refusal, or None to go on."""

    def refuse(self, case: Case) -> Refusal | None: ...


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

    def refuse(self, case: Case) -> Refusal | None:
        gated = not self.reader_decides_small_corpora or case.n_live >= self.min_chunks
        if case.best.probability >= case.sufficiency_threshold or not gated:
            return None
        # Said in the reader's words when what the question names is in no passage it read.
        unnamed = unnamed_subjects(case.best.reading)
        return Refusal(AbstainReason.SUFFICIENCY, {} if unnamed is None else {"explanation": unnamed})


def _unanswered(reading: Reading, threshold: float) -> str | None:
    """Why the reader's span is no answer (below the threshold, or of the wrong kind), or None."""
    if reading.short_answer is None or reading.answer_logit < threshold:
        return "the documents do not say: no passage answers the question"
    if not reading.type_ok:
        return (
            f"the documents do not say: the question asks for a {reading.expected.value}, and the best "
            f"passage offers {reading.short_answer.text!r}"
        )
    return None


@dataclass(frozen=True)
class ReaderDecision:
    """The reader must find a span above its threshold (on the answer logit), of the kind asked."""

    threshold: float

    def refuse(self, case: Case) -> Refusal | None:
        reading = case.best.reading
        if reading is None:
            return None
        details: dict[str, Any] = {
            **reading.trace_details(),
            # On the probability scale, as every check's score and threshold in the trace.
            "score": reading.answer_probability,
            "threshold": probability(self.threshold),
        }
        explanation = unnamed_subjects(reading) or _unanswered(reading, self.threshold)
        case.trace.append(TraceStep("reader_decision", 0.0, {**details, "answers": explanation is None}))
        return (
            None
            if explanation is None
            else Refusal(AbstainReason.ANSWERABILITY, {"explanation": explanation})
        )


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

    def refuse(self, case: Case) -> Refusal | None:
        reading = case.best.reading
        if reading is None or reading.short_answer is None or not reading.sentences:
            return None
        t0 = time.perf_counter()
        answer = reading.short_answer.text
        score = self.check.score(case.question, answer, " ".join(s.text for s in reading.sentences))
        threshold = self.check.threshold
        details = {"score": score, "threshold": threshold, "answer": answer}
        case.trace.append(TraceStep("answer_check", (time.perf_counter() - t0) * 1000, details))
        if score >= threshold:
            return None
        explanation = (
            f"not sure enough to answer: {_title_of(reading, reading.short_answer.chunk_id)} may say "
            f"{answer!r}, but not clearly for this question"
        )
        return Refusal(AbstainReason.ANSWERABILITY, {"explanation": explanation})


@dataclass(frozen=True)
class SourcesAgree:
    """No other document may give a different answer that the reader supports above ``threshold``
    (on the answer logit) beside an answer it supports as well: the documents' disagreement is
    reported, naming both."""

    threshold: float

    def refuse(self, case: Case) -> Refusal | None:
        reading = case.best.reading
        if reading is None or reading.short_answer is None or reading.answer_logit < self.threshold:
            return None
        others = [a for a in reading.alternatives if a.answer_logit >= self.threshold]
        if not others:
            return None
        answer = reading.short_answer
        said = [f"{answer.text!r} ({_title_of(reading, answer.chunk_id)})"]
        said += [f"{a.text!r} ({a.title or a.doc_id})" for a in others]
        details = {
            "conflict": [{"answer": answer.text, "chunk_id": answer.chunk_id}]
            + [a.trace_details() for a in others],
            "explanation": "the documents disagree: " + " or ".join(said),
        }
        return Refusal(AbstainReason.CONFLICT, details)


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
    check: AnswerGuard | AnswerabilityModel | ReaderAgreementCheck
    reason: AbstainReason
    inputs: Callable[[Case], tuple[str, ...]]

    def refuse(self, case: Case) -> Refusal | None:
        t0 = time.perf_counter()
        score = self.check.score(*self.inputs(case))
        details = {"score": score, "threshold": self.check.threshold}
        case.trace.append(TraceStep(self.stage, (time.perf_counter() - t0) * 1000, details))
        return None if score >= self.check.threshold else Refusal(self.reason)


def first_refusal(gates: Sequence[AgentGate], case: Case) -> Refusal | None:
    """The first gate's refusal, in order; None when every gate lets the question go on."""
    for gate in gates:
        refusal = gate.refuse(case)
        if refusal is not None:
            return refusal
    return None
