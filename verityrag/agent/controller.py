"""``AgentController``: the bounded answer-or-abstain loop.

    loop <= 1 + max_reformulations:
        retrieve (hybrid) -> rerank (LightGBM) -> rank sentences -> reader (answer span or none)
        -> sufficiency gate (retrieval, sentence and reader features)
        sufficient -> leave the loop
        insufficient, some signal, retries left -> reformulate, loop again
        otherwise -> ABSTAIN(sufficiency)
    reader: no span above its threshold, or a span of the wrong kind -> ABSTAIN(answerability)
    answerability gate (optional) -> answer (the span's sentence(s), or an LLM's) -> grounding
    check -> guard (optional) -> reader check (optional: does the answer say what a reader finds?)

Every attempt and stage is recorded in the trace with its figures and timing.
An abstention is a normal result with a reason, never an exception.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from verityrag.agent.confidence import ConfidenceModel
from verityrag.agent.interfaces import (
    AnswerabilityModel,
    Answerer,
    AnswerGuard,
    Gate,
    ReaderAgreementCheck,
    Reranker,
    Retriever,
)
from verityrag.agent.reformulation import Reformulator
from verityrag.agent.sufficiency import GATE_FEATURES, READER_FEATURES, SELECTOR_FEATURES_FOR_GATE
from verityrag.checks.grounding import GroundingChecker
from verityrag.checks.strictness import strictness_policy
from verityrag.config import STRICTNESS_LEVELS, Strictness
from verityrag.errors import NotFittedError
from verityrag.generation.reading import EvidenceReader, Reading, probability
from verityrag.generation.sentence_selector import ScoredSentence
from verityrag.generation.verified import AnswerStrategy
from verityrag.index.protocol import AnyIndex, SnapshotView
from verityrag.retrieval.features import ChunkTermCache, QueryTerms, chunk_features
from verityrag.types import (
    AbstainReason,
    CitedSentence,
    GroundingReport,
    Hit,
    QueryResult,
    ShortAnswer,
    TraceStep,
)

logger = logging.getLogger(__name__)

__all__ = [
    "GROUNDING_THRESHOLDS",
    "AgentController",
    "AnswerGuard",
    "AnswerabilityModel",
    "Attempt",
    "ReaderAgreementCheck",
    "gate_features",
]

# Minimum grounding score per strictness level (claims are scored 0..1), from the one table
# in verityrag.checks.strictness.
GROUNDING_THRESHOLDS: dict[str, float] = {
    level: strictness_policy(level).grounding_threshold for level in STRICTNESS_LEVELS
}


#: What each abstention tells the user, unless the stage that refused says more.
ABSTAIN_EXPLANATIONS: dict[AbstainReason, str] = {
    AbstainReason.NO_EVIDENCE: "nothing in the documents matches the question",
    AbstainReason.SUFFICIENCY: "the documents found do not cover the question well enough to answer it",
    AbstainReason.ANSWERABILITY: "the documents do not say: no passage answers the question",
    AbstainReason.GROUNDING: "the answer could not be checked against the documents closely enough",
    AbstainReason.GUARD: "the answer is not supported by the documents it cites",
    AbstainReason.READER: "the answer does not say what the documents give for the question",
    AbstainReason.VERIFIER_ERROR: "the answer could not be verified (the verifier failed)",
    AbstainReason.CONFLICT: "the documents disagree on the answer",
}

#: Top chunks the question-side checks (answerability, reader) read: enough for the answer,
#: few enough for one model window once trimmed to the question.
QUESTION_CHECK_CHUNKS = 3


def _title_of(reading: Reading, chunk_id: str) -> str:
    """The title of the document the answer's sentences cite (the chunk id when none says)."""
    for sentence in reading.sentences:
        for citation in sentence.citations:
            if citation.chunk_id == chunk_id:
                return citation.title or citation.doc_id
    return chunk_id


def _unnamed_subjects(reading: Reading | None) -> str | None:
    """Why nothing answers when the question names what no passage holding a span names."""
    if reading is None or reading.short_answer is not None or not reading.missing_subjects:
        return None
    names = " or ".join(repr(name) for name in reading.missing_subjects)
    return f"the documents do not say: no passage found that answers it names {names}"


class _ObservedTrace(list[TraceStep]):
    """A trace that reports each step as it is appended (live SSE stages), in order."""

    def __init__(self, on_stage: Callable[[TraceStep], None]) -> None:
        super().__init__()
        self._on_stage = on_stage

    def append(self, step: TraceStep) -> None:
        super().append(step)
        self._on_stage(step)


@dataclass
class Attempt:
    query: str
    strategy: str
    hits: list[Hit]
    sentences: list[ScoredSentence]
    probability: float
    features: list[float]
    timings_ms: dict[str, float] = field(default_factory=dict)
    reading: Reading | None = None  # what the extractive reader found (None: no reader)

    def trace_details(self) -> dict[str, Any]:
        names = GATE_FEATURES + (READER_FEATURES if len(self.features) > len(GATE_FEATURES) else ())
        details = {
            "query": self.query,
            "strategy": self.strategy,
            # Exact, not rounded: the gate's calibrated probabilities come in steps and often sit
            # exactly on the threshold (37/45 = 0.8222...); a rounded one reads as under it.
            "probability": self.probability,
            "top_chunks": [h.chunk_id for h in self.hits[:3]],
            "features": dict(zip(names, (round(f, 4) for f in self.features), strict=True)),
            "timings_ms": {k: round(v, 3) for k, v in self.timings_ms.items()},
        }
        if self.reading is not None:
            details["reader"] = self.reading.trace_details()
        return details


def reader_features(reading: Reading) -> list[float]:
    """One row of :data:`READER_FEATURES`."""
    return [reading.answer_logit, float(reading.type_ok)]


def gate_features(
    q: QueryTerms,
    hits: Sequence[Hit],
    sentences: Sequence[ScoredSentence],
    cache: ChunkTermCache,
    analyze: Callable[[str], list[str]],
) -> list[float]:
    """One row of :data:`GATE_FEATURES`."""
    if not hits or not sentences:
        return [0.0] * len(GATE_FEATURES)
    top = hits[0]
    top_row = chunk_features(q, top, cache.get(top.chunk))
    best = sentences[0]
    sentence_terms = frozenset(analyze(best.sentence.text))
    second_score = sentences[1].score if len(sentences) > 1 else best.score - 1.0
    return [
        best.score,
        best.score - second_score,
        q.weighted_coverage(sentence_terms),
        q.coverage(sentence_terms),
        top_row[5],  # cov_w
        top_row[7],  # title_cov
        top_row[0],  # bm25_norm
        top_row[1],  # dense
        q.oov_fraction,
        top_row[10],  # max_missing_idf
        float(len(q.terms)),
        float(len({h.chunk.doc_id for h in hits[:5]})),
        *(best.feature(name) for name in SELECTOR_FEATURES_FOR_GATE),
    ]


def _passes(
    stage: str,
    model: AnswerGuard | AnswerabilityModel | ReaderAgreementCheck,
    args: tuple[str, str] | tuple[str, str, str],
    trace: list[TraceStep],
) -> bool:
    """Score with a learned check, record the score and threshold in the trace, compare."""
    t0 = time.perf_counter()
    score = model.score(*args)
    trace.append(
        TraceStep(stage, (time.perf_counter() - t0) * 1000, {"score": score, "threshold": model.threshold})
    )
    return score >= model.threshold


class AgentController:
    """Runs one question through the bounded loop and the checks after it."""

    def __init__(
        self,
        index: AnyIndex,
        retriever: Retriever,
        generator: Answerer,
        gate: Gate | None,
        grounding: GroundingChecker,
        cache: ChunkTermCache,
        reranker: Reranker | None = None,
        reformulators: Sequence[Reformulator] = (),
        answer_guard: AnswerGuard | None = None,
        answerability: AnswerabilityModel | None = None,
        answer_reader: ReaderAgreementCheck | None = None,
        max_reformulations: int = 2,
        candidates: int = 20,
        top_k: int = 5,
        signal_floor: float = 0.05,
        strictness: Strictness = "balanced",
        verify: bool = True,
        answer_strategy: AnswerStrategy | None = None,
        sufficiency_threshold: float | None = None,
        reader: EvidenceReader | None = None,
        reader_threshold: float = 0.0,
        reader_subjects: bool = True,
        confidence: ConfidenceModel | None = None,
        report_conflicts: bool = False,
        gate_min_chunks: int = 0,
    ) -> None:
        if max_reformulations < 0:
            raise ValueError("max_reformulations must be >= 0")
        if gate is not None and getattr(gate, "reads", False) and reader is None:
            raise ValueError(
                "this sufficiency gate was fitted with the reader's features: give the agent a reader"
            )
        self.index = index
        self.retriever = retriever
        self.generator = generator
        self.gate = gate
        self.grounding = grounding
        self.cache = cache
        self.reranker = reranker
        self.reformulators = list(reformulators)
        self.answer_guard = answer_guard
        self.answerability = answerability
        self.answer_reader = answer_reader
        self.max_reformulations = max_reformulations
        self.candidates = candidates
        self.top_k = top_k
        self.signal_floor = signal_floor
        self.strictness = strictness
        self.verify = verify
        # An LLM answer path (verityrag.generation.verified); None: the extractive sentence.
        self.answer_strategy = answer_strategy
        # Set when it was fitted together with the answerability check (verityrag.checks.thresholds);
        # None: the gate's own threshold.
        self.sufficiency_threshold = sufficiency_threshold
        # The extractive reader and its threshold on the answer logit at the balanced level; the
        # strictness level moves it (verityrag.checks.strictness: reader_margin).
        self.reader = reader
        self.reader_threshold = reader_threshold
        # The question's names, titles and numbers must be in the answer's passage (or its title).
        self.reader_subjects = reader_subjects
        # What a reply's `confidence` is: P(it is right), fitted on labelled questions; without a
        # model, the gate's probability (which is not that, decision 0062).
        self.confidence = confidence
        # Refuse, naming both, when another document gives a different answer of the same kind
        # that the reader supports as well as it must support an answer (AbstainReason.CONFLICT).
        self.report_conflicts = report_conflicts
        # Below this many chunks in the index the gate scores but does not refuse: the reader decides.
        self.gate_min_chunks = gate_min_chunks

    def attempt(
        self,
        q: QueryTerms,
        query: str,
        strategy: str,
        snap: SnapshotView,
        doc_ids: Collection[str] | None = None,
    ) -> Attempt:
        """One retrieval (``query``, a rewrite of ``q`` or ``q`` itself): hits, sentences, gate features
        and the gate's probability (0 without a gate). ``doc_ids``: search only those documents."""
        timings: dict[str, float] = {}
        t0 = time.perf_counter()
        # At least top_k: with k over the candidate count the evidence was cut to the candidates.
        if doc_ids is None:  # a retriever of the user's may predate filters: called as before
            hits = self.retriever.search(query, max(self.candidates, self.top_k), snap)
        else:
            hits = self.retriever.search(query, max(self.candidates, self.top_k), snap, doc_ids=doc_ids)
        t1 = time.perf_counter()
        timings["retrieve"] = (t1 - t0) * 1000
        if self.reranker is not None and self.reranker.is_fitted and hits:
            rq = q if query == q.text else self.query_terms(query, snap)
            hits = self.reranker.rerank(rq, hits, self.cache)
        t2 = time.perf_counter()
        timings["rerank"] = (t2 - t1) * 1000
        top = hits[: self.top_k]
        idf = self._idf(snap)
        sentences = self.generator.generate(q.text, top, idf) if top else []
        t3 = time.perf_counter()
        timings["select"] = (t3 - t2) * 1000
        features = gate_features(q, top, sentences, self.cache, self.index.analyzer.analyze)
        reading = None
        if self.reader is not None:
            # The user's question, not a rewrite: the rewrite only finds other evidence.
            reading = self.reader.read(q.text, top, sentences, self.reader_subjects)
            t4 = time.perf_counter()
            timings["read"] = (t4 - t3) * 1000
            t3 = t4
            # Calibration (no gate yet) collects them too: the gate it fits reads them.
            if self.gate is None or getattr(self.gate, "reads", False):
                features = features + reader_features(reading)
        # The probability alone: the loop compares it with the threshold it is given (the fold
        # gates of calibrate's out-of-fold loop check score without a threshold of their own).
        probability = float(self.gate.predict_proba([features])[0]) if top and self.gate is not None else 0.0
        timings["gate"] = (time.perf_counter() - t3) * 1000
        return Attempt(query, strategy, top, sentences, probability, features, timings, reading)

    def _idf(self, snap: SnapshotView) -> Callable[[str], float]:
        return lambda term: self.index.idf(term, snap)

    def query_terms(self, text: str, snap: SnapshotView) -> QueryTerms:
        """The question's terms with their IDF in ``snap`` (what the features and rewrites read)."""
        return QueryTerms.from_index(text, self.index, snap)

    def search(
        self,
        q: QueryTerms,
        snap: SnapshotView,
        threshold: float,
        trace: list[TraceStep],
        doc_ids: Collection[str] | None = None,
    ) -> Attempt:
        """The bounded loop. Returns the attempt the gate trusts most; every attempt goes in ``trace``."""
        attempts: list[Attempt] = []
        query, strategy = q.text, "original"
        for round_no in range(1 + self.max_reformulations):
            attempt = self.attempt(q, query, strategy, snap, doc_ids)
            attempts.append(attempt)
            trace.append(
                TraceStep(f"attempt_{round_no}", sum(attempt.timings_ms.values()), attempt.trace_details())
            )
            if attempt.probability >= threshold or not attempt.hits:
                break
            # Reformulate only when the gate sees some signal.
            if attempt.probability < self.signal_floor or round_no >= min(
                self.max_reformulations, len(self.reformulators)
            ):
                break
            rewritten = self.reformulators[round_no](q, attempt.hits)
            if rewritten is None or rewritten == query:
                break
            query, strategy = rewritten, self.reformulators[round_no].name
        return max(attempts, key=lambda a: a.probability)

    def run(
        self,
        question: str,
        on_stage: Callable[[TraceStep], None] | None = None,
        doc_ids: Collection[str] | None = None,
    ) -> QueryResult:
        """Answer or abstain. ``on_stage`` sees each trace step the moment it is recorded; ``doc_ids``
        limits the evidence to those documents (a metadata filter's; empty: nothing is found)."""
        snap = self.index.snapshot()
        trace: list[TraceStep] = [] if on_stage is None else _ObservedTrace(on_stage)
        q = self.query_terms(question, snap)
        if self.gate is None:
            raise NotFittedError("AgentController.run needs a fitted sufficiency gate")
        threshold = self.gate.threshold_ if self.sufficiency_threshold is None else self.sufficiency_threshold
        best = self.search(q, snap, threshold, trace, doc_ids)
        attempts = [s for s in trace if s.stage.startswith("attempt_")]
        base = {"snapshot_version": snap.version, "threshold": threshold, "attempts": len(attempts)}
        if not best.hits:
            return self._abstain(question, AbstainReason.NO_EVIDENCE, best, trace, base)
        gated = self.reader is None or snap.n_live >= self.gate_min_chunks
        if best.probability < threshold and gated:
            # Said in the reader's words when what the question names is in no passage it read.
            unnamed = _unnamed_subjects(best.reading)
            details = base if unnamed is None else {**base, "explanation": unnamed}
            return self._abstain(question, AbstainReason.SUFFICIENCY, best, trace, details)

        short_answer: ShortAnswer | None = None
        if best.reading is not None:
            refusal = self._reader_refusal(best.reading, trace)
            if refusal is not None:
                return self._abstain(question, AbstainReason.ANSWERABILITY, best, trace, base | refusal)
            short_answer = best.reading.short_answer
            conflict = self._conflict(best.reading) if self.report_conflicts else None
            if conflict is not None:
                return self._abstain(question, AbstainReason.CONFLICT, best, trace, base | conflict)

        evidence_text = " ".join(h.chunk.text for h in best.hits[:QUESTION_CHECK_CHUNKS])
        if self.answerability is not None and not _passes(
            "answerability", self.answerability, (question, evidence_text), trace
        ):
            return self._abstain(question, AbstainReason.ANSWERABILITY, best, trace, base)

        evidence = {h.chunk_id: h.chunk for h in best.hits}
        answer_sentences: list[CitedSentence] = (
            list(best.reading.sentences)
            if best.reading is not None and best.reading.sentences
            else [best.sentences[0].sentence]
        )
        unsupported_claims: tuple[str, ...] = ()
        # An LLM answer's text for the user: its kept sentences with the verifier's annotations
        # (a fail-open judge's "[Confidence: N%]"). The checks below read the plain sentences.
        annotated_answer: str | None = None
        report = GroundingReport(1.0)  # an extractive sentence is verbatim evidence when unverified
        if self.answer_strategy is not None:
            # The LLM writes the answer from the same evidence; its strategy verifies (and
            # retries) itself at this request's strictness level, which decides what happens
            # to unsupported sentences. A refusal by the model is an answerability abstention.
            t0 = time.perf_counter()
            generated = self.answer_strategy.answer(
                question,
                best.hits,
                strictness=self.strictness,
                reader_span=short_answer.text if short_answer is not None else None,
            )
            trace.append(
                TraceStep("llm_generation", (time.perf_counter() - t0) * 1000, generated.trace_details())
            )
            if not generated.accepted:
                reason = (
                    AbstainReason.ANSWERABILITY
                    if generated.abstain_reason == "refused"
                    else AbstainReason.GROUNDING
                )
                # A fail-closed verifier that could not decide (timeout, malformed verdict) is
                # its own reason; the error text is in the trace's attempt_log verdicts.
                last = generated.attempts[-1] if generated.attempts else None
                if (
                    reason is AbstainReason.GROUNDING
                    and last is not None
                    and last.rejection == "verifier_error"
                ):
                    reason = AbstainReason.VERIFIER_ERROR
                return self._abstain(question, reason, best, trace, base)
            answer_sentences = list(generated.sentences)
            short_answer = None  # the LLM's answer is not the reader's span
            unsupported_claims = generated.unsupported_claims
            annotated_answer = generated.answer
            if not self.verify:  # reported, not enforced: a generated answer is not verbatim evidence
                report = self.grounding.check(answer_sentences, evidence)
        # A level that keeps unsupported sentences (loose) makes an LLM answer's checks
        # informational: its strategy already verified it; the report and trace show the result.
        enforce = self.answer_strategy is None or strictness_policy(self.strictness).drops_unsupported
        if self.verify:
            t0 = time.perf_counter()
            report = self.grounding.check(answer_sentences, evidence)
            g_threshold = GROUNDING_THRESHOLDS[self.strictness]
            trace.append(
                TraceStep(
                    "grounding",
                    (time.perf_counter() - t0) * 1000,
                    {
                        "score": report.overall_score,
                        "threshold": g_threshold,
                        "claims": len(report.claims),
                        "enforced": enforce,
                    },
                )
            )
            if enforce and report.overall_score < g_threshold:
                return self._abstain(question, AbstainReason.GROUNDING, best, trace, base, report)

        if self.verify and enforce and self.answer_guard is not None:
            cited_ids = dict.fromkeys(c.chunk_id for s in answer_sentences for c in s.citations)
            cited = " ".join(evidence[cid].text for cid in cited_ids if cid in evidence)
            answer_text = " ".join(s.text for s in answer_sentences)
            if not _passes("guard", self.answer_guard, (cited, answer_text), trace):
                return self._abstain(question, AbstainReason.GUARD, best, trace, base, report)

        # The support checks never see the question: a copied sentence that answers something
        # else passes them. The reader check does see it.
        if self.verify and enforce and self.answer_reader is not None:
            answer_text = " ".join(s.text for s in answer_sentences)
            if not _passes("reader", self.answer_reader, (question, evidence_text, answer_text), trace):
                return self._abstain(question, AbstainReason.READER, best, trace, base, report)

        logger.debug("answer %r with p=%.3f >= %.3f", question, best.probability, threshold)
        confidence = self.reply_confidence(True, best)
        trace.append(
            TraceStep("answer", 0.0, {"probability": best.probability, "confidence": confidence, **base})
        )
        return QueryResult(
            question=question,
            answer=annotated_answer or " ".join(s.text for s in answer_sentences),
            abstained=False,
            abstain_reason=None,
            grounding=report,
            confidence=confidence,
            sentences=tuple(answer_sentences),
            evidence=tuple(best.hits),
            trace=tuple(trace),
            unsupported_claims=unsupported_claims,
            short_answer=short_answer,
        )

    def reply_confidence(self, answered: bool, best: Attempt) -> float:
        """The probability that answering (or refusing) on ``best`` is right (see ``confidence``)."""
        if self.confidence is None:
            return best.probability
        logit = best.reading.answer_logit if best.reading is not None else None
        return self.confidence.probability(answered, best.probability, logit)

    def effective_reader_threshold(self) -> float:
        """The reader's threshold on the answer logit at this agent's strictness level."""
        return self.reader_threshold + strictness_policy(self.strictness).reader_margin

    def _reader_refusal(self, reading: Reading, trace: list[TraceStep]) -> dict[str, Any] | None:
        """Why the reader's finding cannot be answered from (trace details), or None to go on."""
        threshold = self.effective_reader_threshold()
        details: dict[str, Any] = {
            **reading.trace_details(),
            # On the probability scale, as every check's score and threshold in the trace.
            "score": reading.answer_probability,
            "threshold": probability(threshold),
        }
        explanation = _unnamed_subjects(reading) or self._unanswered(reading, threshold)
        trace.append(TraceStep("reader_decision", 0.0, {**details, "answers": explanation is None}))
        return None if explanation is None else {"explanation": explanation}

    @staticmethod
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

    def _conflict(self, reading: Reading) -> dict[str, Any] | None:
        """The documents' disagreement (trace details and explanation), or None: other documents'
        answers the reader supports above its threshold that differ from the answer."""
        threshold = self.effective_reader_threshold()
        others = [a for a in reading.alternatives if a.answer_logit >= threshold]
        answer = reading.short_answer
        if not others or answer is None:
            return None
        said = [f"{answer.text!r} ({_title_of(reading, answer.chunk_id)})"]
        said += [f"{a.text!r} ({a.title or a.doc_id})" for a in others]
        return {
            "conflict": [{"answer": answer.text, "chunk_id": answer.chunk_id}]
            + [a.trace_details() for a in others],
            "explanation": "the documents disagree: " + " or ".join(said),
        }

    def _abstain(
        self,
        question: str,
        reason: AbstainReason,
        best: Attempt,
        trace: list[TraceStep],
        details: dict[str, Any],
        report: GroundingReport | None = None,
    ) -> QueryResult:
        logger.debug("abstain (%s) on %r: p=%.3f", reason.value, question, best.probability)
        explanation = details.get("explanation") or ABSTAIN_EXPLANATIONS[reason]
        confidence = self.reply_confidence(False, best)
        trace.append(
            TraceStep(
                "abstain",
                0.0,
                {
                    "reason": reason.value,
                    "probability": best.probability,
                    "confidence": confidence,
                    **details,
                    "explanation": explanation,
                },
            )
        )
        return QueryResult(
            question=question,
            answer=None,
            abstained=True,
            abstain_reason=reason,
            grounding=report or GroundingReport(0.0),
            confidence=confidence,
            evidence=tuple(best.hits),
            trace=tuple(trace),
            explanation=explanation,
        )
