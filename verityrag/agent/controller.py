"""``AgentController``: the bounded answer-or-abstain loop.

    loop <= 1 + max_reformulations:
        retrieve (hybrid) -> rerank (LightGBM) -> rank sentences -> reader (answer span or none)
        -> sufficiency gate (retrieval, sentence and reader features)
        sufficient -> leave the loop
        insufficient, some signal, retries left -> reformulate, loop again
        otherwise -> ABSTAIN(sufficiency)
    the gates before the answer (verityrag.agent.gates): evidence found, sufficient, sources
    agree, the reader's span (above its threshold, of the kind asked), the answer check and the
    answerability check (optional)
    -> refused, with max_hops=2: a comparison of time dates its two things by their documents
    (verityrag.agent.comparisons); a yes/no or "which" question about two things is decided by
    their documents (verityrag.agent.two_things); with a bridge's mark, a second hop
    (verityrag.agent.hops) through each bridge, its read through the gates after a hop; none
    answers -> ABSTAIN(missing_hop)
    -> the answer written (the span's sentence(s), or an LLM's) and grounded
    -> the gates after it: the LLM's own refusal, grounding, guard and reader check (optional),
    corroboration by independent sources (when asked)

Every refusal is a gate's; every attempt and stage is recorded in the trace with its figures
and timing. An abstention is a normal result with a reason, never an exception.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from verityrag.agent.attempt import Attempt
from verityrag.agent.comparisons import Dated, TimeComparison, dated, time_comparison, winner
from verityrag.agent.confidence import ConfidenceModel
from verityrag.agent.gates import (
    AgentGate,
    AnswerChecked,
    Case,
    Corroborated,
    EnoughEvidence,
    EvidenceFound,
    Grounded,
    HopAnswered,
    HopTried,
    LearnedCheckGate,
    ModelAnswered,
    ReaderDecision,
    Refusal,
    SourcesAgree,
    WrittenAnswer,
    answerability_inputs,
    first_refusal,
    guard_inputs,
    reader_check_inputs,
    reply_case,
)
from verityrag.agent.hops import Bridge, about, bridges, through
from verityrag.agent.interfaces import (
    AnswerabilityModel,
    AnswerCheckModel,
    AnswerGuard,
    ReaderCheckModel,
    Reranker,
    Retriever,
    SentenceRanker,
    SufficiencyModel,
)
from verityrag.agent.reformulation import Reformulator
from verityrag.agent.sufficiency import GATE_FEATURES, SELECTOR_FEATURES_FOR_GATE
from verityrag.agent.two_things import may_ask_two_things, said, two_things_asked, verdict, verdict_answer
from verityrag.config import STRICTNESS_LEVELS, Strictness
from verityrag.errors import NotFittedError
from verityrag.generation.reading import EvidenceReader, Reading, SourceOf, probability
from verityrag.generation.sentence_selector import ScoredSentence
from verityrag.generation.verified import AnswerStrategy
from verityrag.index.protocol import AnyIndex, SnapshotView
from verityrag.retrieval.features import ChunkTermCache, QueryTerms, chunk_features
from verityrag.text.answer_types import expected_type
from verityrag.types import (
    AbstainReason,
    CitedSentence,
    GroundingReport,
    Hit,
    QueryResult,
    ShortAnswer,
    TraceStep,
    source_key,
)
from verityrag.verify.grounding import GroundingChecker
from verityrag.verify.sources import ProvenanceLookup, source_details, with_provenance
from verityrag.verify.strictness import StrictnessPolicy, strictness_policy

logger = logging.getLogger(__name__)

__all__ = [
    "GROUNDING_THRESHOLDS",
    "AgentConfig",
    "AgentController",
    "AgentParts",
    "AnswerGuard",
    "AnswerabilityModel",
    "Attempt",
    "ReaderCheckModel",
    "gate_features",
]

# Minimum grounding score per strictness level (claims are scored 0..1), read from the one table
# in verityrag.verify.strictness (the agent reads its config's policy).
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
    AbstainReason.CORROBORATION: "fewer independent documents say the answer than the settings ask for",
    AbstainReason.MISSING_HOP: "a document leads to another that would answer, and none does",
}


class _ObservedTrace(list[TraceStep]):
    """A trace that reports each step as it is appended (live SSE stages), in order."""

    def __init__(self, on_stage: Callable[[TraceStep], None]) -> None:
        super().__init__()
        self._on_stage = on_stage

    def append(self, step: TraceStep) -> None:
        super().append(step)
        self._on_stage(step)


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


#: How far under the reader's threshold (on the answer logit) two sources' values still count as
#: a disagreement to report. Two documents that disagree make the reader less sure of each value:
#: on the dev domains at the loose level's margin (-1.5) 1 of 14 conflicts was reported; at -5
#: (about probability 0.88 for each value with the shipped reader), 5 of 14, for one answerable
#: question of 135 lost (-3: 4 and one lost; -6 and -7: 5 and five lost).
CONFLICT_MARGIN = -5.0

#: The refusals a second hop may turn into an answer: not enough evidence, or no span the reader
#: stands behind (a conflict, a refused check or no evidence at all are the question's answer).
HOP_AFTER = frozenset({AbstainReason.SUFFICIENCY, AbstainReason.ANSWERABILITY})
#: How much surer (on the answer logit) the reader must be of a span it read through a bridge.
HOP_MARGIN = 0.0


@dataclass(frozen=True)
class AgentConfig:
    """How the agent decides, in one object: the loop's bounds, the evidence sizes and every
    threshold. The pipeline makes it from its ``Settings`` and what ``calibrate`` fitted."""

    max_reformulations: int = 2
    candidates: int = 20
    top_k: int = 5
    # Reformulate only when the gate's probability is at least this (some signal).
    signal_floor: float = 0.05
    strictness: Strictness = "balanced"
    verify: bool = True
    # An answer stands only when this many independent documents among the evidence say it
    # (verityrag.verify.sources; 1: no corroboration asked).
    min_sources: int = 1
    # Set when it was fitted together with the answerability check (verityrag.thresholds.learned);
    # None: the gate's own threshold.
    sufficiency_threshold: float | None = None
    # The reader's threshold on the answer logit at the balanced level; the strictness level moves
    # it (verityrag.verify.strictness: reader_margin).
    reader_logit_threshold: float = 0.0
    # The question's names, titles and numbers must be in the answer's passage (or its title).
    reader_subjects: bool = True
    # Refuse, naming both, when another document gives a different answer of the same kind that
    # the reader supports well enough (AbstainReason.CONFLICT; CONFLICT_MARGIN).
    report_conflicts: bool = False
    # The reader logit threshold the conflict bar is measured from (None: reader_logit_threshold): a sweep
    # that opens the reader (threshold -inf) keeps the conflicts of the threshold in effect, or
    # every rival would count and one pass would no longer give each threshold's outcome.
    conflict_reader_logit_threshold: float | None = None
    # Below this many chunks in the index the gate scores but does not refuse: the reader decides.
    gate_min_chunks: int = 0
    # Retrieval-and-read hops a question may take: 2 lets a refused question follow a bridge (a
    # passage naming what it names and the document that answers; verityrag.agent.hops).
    max_hops: int = 1
    # What ``strictness`` means (verityrag.verify.strictness), resolved once, here.
    policy: StrictnessPolicy = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_reformulations < 0:
            raise ValueError("max_reformulations must be >= 0")
        object.__setattr__(self, "policy", strictness_policy(self.strictness))


class AgentController:
    """Runs one question through the bounded loop and the gates after it.

    Its parts are the arguments (any object with the methods of :mod:`verityrag.agent.interfaces`);
    how it decides is one :class:`AgentConfig`.
    """

    def __init__(
        self,
        index: AnyIndex,
        retriever: Retriever,
        sentence_ranker: SentenceRanker,
        gate: SufficiencyModel | None,
        grounding: GroundingChecker,
        cache: ChunkTermCache,
        reranker: Reranker | None = None,
        reformulators: Sequence[Reformulator] = (),
        answer_guard: AnswerGuard | None = None,
        answerability: AnswerabilityModel | None = None,
        reader_check: ReaderCheckModel | None = None,
        answer_strategy: AnswerStrategy | None = None,
        reader: EvidenceReader | None = None,
        confidence: ConfidenceModel | None = None,
        sources: ProvenanceLookup | None = None,
        answer_check: AnswerCheckModel | None = None,
        config: AgentConfig | None = None,
    ) -> None:
        if gate is not None and gate.reads and reader is None:
            raise ValueError(
                "this sufficiency gate was fitted with the reader's features: give the agent a reader"
            )
        self.config = config or AgentConfig()
        self.index = index
        self.retriever = retriever
        self.sentence_ranker = sentence_ranker
        self.gate = gate
        self.grounding = grounding
        self.cache = cache
        self.reranker = reranker
        self.reformulators = list(reformulators)
        self.answer_guard = answer_guard
        self.answerability = answerability
        self.reader_check = reader_check
        # An LLM answer path (verityrag.generation.verified); None: the extractive sentence.
        self.answer_strategy = answer_strategy
        self.reader = reader
        # What a reply's `confidence` is: P(it is right), fitted on labelled questions; without a
        # model, the gate's probability (which is not that, decision 0062).
        self.confidence = confidence
        # The documents' declared sources (their metadata's ``source``): documents that declare
        # one source are one for conflicts and corroboration; None: each document is its own.
        self.sources = sources
        # Checks the reader's short answer against the sentence quoted for it (AnswerChecked).
        self.answer_check = answer_check

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
            hits = self.retriever.search(query, max(self.config.candidates, self.config.top_k), snap)
        else:
            hits = self.retriever.search(
                query, max(self.config.candidates, self.config.top_k), snap, doc_ids=doc_ids
            )
        t1 = time.perf_counter()
        timings["retrieve"] = (t1 - t0) * 1000
        if self.reranker is not None and self.reranker.is_fitted and hits:
            rq = q if query == q.text else self.query_terms(query, snap)
            hits = self.reranker.rerank(rq, hits, self.cache)
        t2 = time.perf_counter()
        timings["rerank"] = (t2 - t1) * 1000
        top = hits[: self.config.top_k]
        idf = self._idf(snap)
        sentences = self.sentence_ranker.generate(q.text, top, idf) if top else []
        t3 = time.perf_counter()
        timings["select"] = (t3 - t2) * 1000
        features = gate_features(q, top, sentences, self.cache, self.index.analyzer.analyze)
        reading = None
        if self.reader is not None:
            # The user's question, not a rewrite: the rewrite only finds other evidence.
            reading = self.reader.read(
                q.text, top, sentences, self.config.reader_subjects, self.source_of(top)
            )
            t4 = time.perf_counter()
            timings["read"] = (t4 - t3) * 1000
            t3 = t4
            # Calibration (no gate yet) collects them too: the gate it fits reads them.
            if self.gate is None or self.gate.reads:
                features = features + reader_features(reading)
        # The probability alone: the loop compares it with the threshold it is given (the fold
        # gates of calibrate's out-of-fold loop check score without a threshold of their own).
        probability = float(self.gate.predict_proba([features])[0]) if top and self.gate is not None else 0.0
        timings["gate"] = (time.perf_counter() - t3) * 1000
        return Attempt(query, strategy, top, sentences, probability, features, timings, reading, hits)

    def source_of(self, hits: Sequence[Hit]) -> SourceOf:
        """Each of ``hits``' documents' source: the one its metadata declares, else itself."""
        if self.sources is None or not hits:
            return source_key
        known = self.sources(list(dict.fromkeys(h.chunk.doc_id for h in hits)))
        return lambda doc_id: source_key(doc_id, known.get(doc_id))

    def read_other_sources(self, q: QueryTerms, best: Attempt, trace: list[TraceStep]) -> Attempt:
        """``best`` with the next other sources among its candidates (the hits past its top too)
        read for a disagreement, when conflicts are reported and its answer is read at least as
        surely as the conflict gate asks (:class:`~verityrag.agent.gates.SourcesAgree`): else as
        it is, at no cost."""
        reading = best.reading
        if (
            self.reader is None
            or not self.config.report_conflicts
            or reading is None
            or reading.short_answer is None
            or reading.answer_logit < self.conflict_threshold()
        ):
            return best
        t0 = time.perf_counter()
        pool = best.candidates or best.hits
        found = self.reader.read_other_sources(
            q.text, pool, best.sentences, reading, self.source_of(pool), self.config.reader_subjects
        )
        added = [a.trace_details() for a in found.alternatives if a not in reading.alternatives]
        trace.append(TraceStep("other_sources", (time.perf_counter() - t0) * 1000, {"alternatives": added}))
        return dataclasses.replace(best, reading=found)

    def conflict_threshold(self) -> float:
        """The answer logit at which two sources' values are a disagreement to report: this much
        under the reader's own threshold (:data:`CONFLICT_MARGIN`)."""
        config = self.config
        base = (
            config.reader_logit_threshold
            if config.conflict_reader_logit_threshold is None
            else config.conflict_reader_logit_threshold
        )
        return base + config.policy.reader_margin + CONFLICT_MARGIN

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
        for round_no in range(1 + self.config.max_reformulations):
            attempt = self.attempt(q, query, strategy, snap, doc_ids)
            attempts.append(attempt)
            trace.append(
                TraceStep(f"attempt_{round_no}", sum(attempt.timings_ms.values()), attempt.trace_details())
            )
            if attempt.probability >= threshold or not attempt.hits:
                break
            # Reformulate only when the gate sees some signal.
            if attempt.probability < self.config.signal_floor or round_no >= min(
                self.config.max_reformulations, len(self.reformulators)
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
        if self.gate is None:
            raise NotFittedError("AgentController.run needs a fitted sufficiency gate")
        snap = self.index.snapshot()
        trace: list[TraceStep] = [] if on_stage is None else _ObservedTrace(on_stage)
        q = self.query_terms(question, snap)
        threshold = self.sufficiency_threshold()
        best = self.search(q, snap, threshold, trace, doc_ids)
        attempts = sum(1 for s in trace if s.stage.startswith("attempt_"))
        best = self.read_other_sources(q, best, trace)
        base = {"snapshot_version": snap.version, "threshold": threshold, "attempts": attempts}
        case = Case(question, best, threshold, snap.n_live)
        refusal = first_refusal(self.evidence_gates(), case, trace)
        if refusal is not None and self.may_hop(case, refusal):
            hopped = self.second_hop(case, snap, trace, doc_ids)
            if hopped is not None:
                case, refusal = hopped, first_refusal(self.hop_gates(), hopped, trace)
        if refusal is None:
            case.answer = self.write_answer(case, trace)
            refusal = first_refusal(self.answer_gates(), case, trace)
        if refusal is not None:
            return self._abstain(case, refusal, trace, base)
        return self._answer(case, trace, base)

    def may_hop(self, case: Case, refusal: Refusal) -> bool:
        """Whether a refused question looks for a second hop: it compares two things in time, has
        the shape of a question about two things, or the reader found no span in a passage naming
        what the question names, though the question's names are not all in one passage (a
        bridge's mark: each passage names part of them)."""
        reading = case.best.reading
        return (
            self.config.max_hops > 1
            and refusal.reason in HOP_AFTER
            and reading is not None
            and (
                (reading.short_answer is None and bool(reading.missing_subjects))
                or time_comparison(case.question) is not None
                or may_ask_two_things(case.question)
            )
        )

    def second_hop(
        self, case: Case, snap: SnapshotView, trace: list[TraceStep], doc_ids: Collection[str] | None
    ) -> Case | None:
        """The question read again through a second hop: a comparison of time, each thing dated by
        its document (:meth:`compare`); a question about two things decided by their documents
        (:meth:`judge`); else each bridge of its first hop
        (:mod:`verityrag.agent.hops`) read across the link and the target's passages, the surest
        span of the kind asked answering. A case whose ``hop`` says what was tried when nothing
        was read; None when there is no bridge (the first refusal stands)."""

        def search(name: str) -> list[Hit]:
            k = self.config.candidates
            return (
                self.retriever.search(name, k, snap)
                if doc_ids is None
                else self.retriever.search(name, k, snap, doc_ids=doc_ids)
            )

        comparison = time_comparison(case.question)
        if comparison is not None:
            return self.compare(case, comparison, search, trace)
        judged = self.judge(case, search, trace)
        if judged is not None:
            return judged
        first = case.best
        found = bridges(case.question, first.candidates or first.hits, search)
        if not found:
            return None
        reads: list[Attempt] = []
        for hop, bridge in enumerate(b for b in found if b.passages):
            t0 = time.perf_counter()
            attempt = self.read_bridge(case.question, bridge, first, snap)
            reading = attempt.reading
            details = {
                "asked": bridge.target,
                "link": bridge.link.chunk_id,
                "passages": [h.chunk_id for h in bridge.passages],
                "span": reading.short_answer.text if reading and reading.short_answer else None,
            }
            trace.append(TraceStep(f"hop_{hop + 1}", (time.perf_counter() - t0) * 1000, details))
            if (
                reading is not None
                and reading.short_answer is not None
                and through(case.question, bridge, reading.short_answer.chunk_id)
            ):
                reads.append(attempt)
        if reads:
            surest = max(
                reads,
                key=lambda a: (a.reading.type_ok, a.reading.answer_logit) if a.reading else (False, 0.0),
            )
            return Case(case.question, surest, case.sufficiency_threshold, case.n_live)
        link = found[0].link.chunk
        tried = HopTried(link.title or link.doc_id, tuple(dict.fromkeys(b.target for b in found)))
        return dataclasses.replace(case, hop=tried)

    def compare(
        self,
        case: Case,
        comparison: TimeComparison,
        search: Callable[[str], Sequence[Hit]],
        trace: list[TraceStep],
    ) -> Case:
        """Which of two things came first (or last): each dated by its own document
        (:mod:`verityrag.agent.comparisons`), the years compared, both documents cited."""
        t0 = time.perf_counter()
        first = case.best
        found = dated(comparison, first.candidates or first.hits, search)
        details = {
            "asked": list(comparison.options),
            "dated": [
                {"option": f.option, "year": f.year, "chunk_id": f.hit.chunk_id}
                if isinstance(f, Dated)
                else {"option": f, "year": None}
                for f in found
            ],
        }
        trace.append(TraceStep("hop_1", (time.perf_counter() - t0) * 1000, details))
        both = [f for f in found if isinstance(f, Dated)]
        if len(both) < 2:
            undated = tuple(f for f in found if isinstance(f, str))
            return dataclasses.replace(case, hop=HopTried(undated=undated, death=comparison.death))
        chosen = winner(comparison, both)
        if chosen is None or chosen.name is None:
            return dataclasses.replace(case, hop=HopTried(tie=chosen is None, unnamed=chosen is not None))
        other = both[1] if chosen is both[0] else both[0]
        sentences = (*chosen.sentences, *other.sentences)
        query = " or ".join(comparison.options)
        return self.decided(case, chosen.name, sentences, query, "comparison", [chosen.hit, other.hit])

    def decided(
        self,
        case: Case,
        answer: ShortAnswer,
        sentences: Sequence[CitedSentence],
        query: str,
        strategy: str,
        hits: list[Hit],
    ) -> Case:
        """The case answered by what the documents decide (a comparison, a verdict), not by a span
        the reader scored: it stands at the reader's bar, so the reply's confidence is that of an
        answer read just surely enough."""
        at_bar = self.effective_reader_logit_threshold()
        reading = Reading(
            dataclasses.replace(answer, probability=probability(at_bar)),
            at_bar,
            tuple(sentences),
            expected_type(case.question),
            True,
            0,
        )
        attempt = dataclasses.replace(case.best, query=query, strategy=strategy, hits=hits, reading=reading)
        return Case(case.question, attempt, case.sufficiency_threshold, case.n_live)

    def judge(
        self, case: Case, search: Callable[[str], Sequence[Hit]], trace: list[TraceStep]
    ) -> Case | None:
        """A question about two named things (:mod:`verityrag.agent.two_things`) decided by each
        thing's document: "Yes" or "No", or the thing that is what is asked, each document's
        deciding sentence cited. None when the question asks no such thing of two things that
        have documents."""
        t0 = time.perf_counter()
        first = case.best
        candidates = first.candidates or first.hits
        documents: dict[str, tuple[Hit, ...]] = {}

        def document(name: str) -> tuple[Hit, ...]:
            if name not in documents:
                documents[name] = about(name, candidates, exclude="") or about(name, search(name), exclude="")
            return documents[name]

        asked = two_things_asked(case.question, lambda name: bool(document(name)))
        if asked is None or len({document(thing)[0].chunk.doc_id for thing in asked.things}) < 2:
            return None  # not about two things, or two names of one document
        both = [said(asked, thing, document(thing)) for thing in asked.things]
        decided = verdict(asked, both)
        details = {
            "asked": list(asked.things),
            "what": asked.asked,
            "said": [
                {"thing": s.thing, "holds": s.holds, "values": sorted(s.values), "chunk_id": s.hit.chunk_id}
                for s in both
            ],
            "verdict": decided,
        }
        trace.append(TraceStep("hop_1", (time.perf_counter() - t0) * 1000, details))
        if decided is None:
            return dataclasses.replace(case, hop=HopTried(undecided=asked.undecided()))
        answer = verdict_answer(asked, decided, both)
        sentences = tuple(dict.fromkeys(s.sentence for s in both))
        hits = [h for s in both for h in document(s.thing)]
        return self.decided(case, answer, sentences, " and ".join(asked.things), "two_things", hits)

    def read_bridge(self, question: str, bridge: Bridge, first: Attempt, snap: SnapshotView) -> Attempt:
        """The first hop's attempt with its evidence the link and the target's passages, read
        together, the target's passages naming what the link names."""
        assert self.reader is not None
        hits = [bridge.link, *bridge.passages]
        ranked = self.sentence_ranker.generate(question, hits, self._idf(snap))
        links = {h.chunk.doc_id: bridge.link.chunk for h in bridge.passages}
        reading = self.reader.read(
            question, hits, ranked, self.config.reader_subjects, self.source_of(hits), links=links
        )
        if reading.short_answer is not None and reading.short_answer.chunk_id != bridge.link.chunk_id:
            # The answer cites the passage that leads to it, then its own sentence(s).
            reading = dataclasses.replace(reading, sentences=(bridge.link_sentence(), *reading.sentences))
        return dataclasses.replace(
            first, query=bridge.target, strategy="bridge", hits=hits, sentences=ranked, reading=reading
        )

    def sufficiency_threshold(self) -> float:
        """The gate's threshold the loop and the sufficiency gate apply: the config's, else the gate's own."""
        if self.config.sufficiency_threshold is not None:
            return self.config.sufficiency_threshold
        if self.gate is None:
            raise NotFittedError("the agent has no sufficiency gate")
        return self.gate.threshold_

    def write_answer(self, case: Case, trace: list[TraceStep]) -> WrittenAnswer:
        """The answer to the question: the reader's sentence(s) (else the best-ranked one), or an
        LLM's from the same evidence, with its grounding report when answers are verified (or
        generated)."""
        best = case.best
        reading = best.reading
        short_answer = reading.short_answer if reading is not None else None
        if self.answer_strategy is None:
            sentences = (
                tuple(reading.sentences)
                if reading is not None and reading.sentences
                else (best.sentences[0].sentence,)
            )
            # An extractive sentence is verbatim evidence when unverified.
            written = WrittenAnswer(
                sentences, " ".join(s.text for s in sentences), short_answer, GroundingReport(1.0)
            )
            return self._grounded(written, case) if self.config.verify else written
        # The LLM writes the answer; its strategy verifies (and retries) itself at this level,
        # which decides what happens to unsupported sentences.
        t0 = time.perf_counter()
        generated = self.answer_strategy.answer(
            case.question,
            best.hits,
            strictness=self.config.policy.level,
            reader_span=short_answer.text if short_answer is not None else None,
        )
        trace.append(
            TraceStep("llm_generation", (time.perf_counter() - t0) * 1000, generated.trace_details())
        )
        if not generated.accepted:
            return WrittenAnswer((), "", None, None, generated=generated)
        sentences = tuple(generated.sentences)
        written = WrittenAnswer(
            sentences,
            # With the verifier's annotations (a fail-open judge's "[Confidence: N%]"); the
            # checks read the plain sentences.
            generated.answer or " ".join(s.text for s in sentences),
            None,  # the LLM's answer is not the reader's span
            None,
            unsupported_claims=generated.unsupported_claims,
            generated=generated,
        )
        # A generated answer is not verbatim evidence: grounded even when not verified (reported).
        return self._grounded(written, case)

    def _grounded(self, written: WrittenAnswer, case: Case) -> WrittenAnswer:
        t0 = time.perf_counter()
        report = self.grounding.check(written.sentences, case.evidence)
        return dataclasses.replace(written, report=report, grounding_ms=(time.perf_counter() - t0) * 1000)

    def reply_confidence(self, answered: bool, best: Attempt, conflict: bool = False) -> float:
        """The probability that answering (or refusing, or reporting a conflict) on ``best`` is
        right (see ``confidence``)."""
        if self.confidence is None:
            return best.probability
        logit = best.reading.answer_logit if best.reading is not None else None
        return self.confidence.probability(answered, best.probability, logit, conflict)

    def effective_reader_logit_threshold(self) -> float:
        """The reader's threshold on the answer logit at this agent's strictness level."""
        return self.config.reader_logit_threshold + self.config.policy.reader_margin

    def evidence_gates(self) -> list[AgentGate]:
        """The gates before an answer is written, in order (:mod:`verityrag.agent.gates`)."""
        gates: list[AgentGate] = [
            EvidenceFound(),
            EnoughEvidence(self.config.gate_min_chunks, self.reader is not None),
        ]
        if self.reader is not None:
            threshold = self.effective_reader_logit_threshold()
            if self.config.report_conflicts:
                # Sources disagree when the reader reads each of two values well enough (under its
                # own threshold: CONFLICT_MARGIN). Asked first: two values each read under the
                # threshold are a disagreement to report, not a "the documents do not say" (most
                # of the dev domains' conflicts).
                gates.append(SourcesAgree(self.conflict_threshold()))
            gates.append(ReaderDecision(threshold))
        return gates + self.question_checks()

    def question_checks(self) -> list[AgentGate]:
        """The learned checks of the question and its evidence, in order: the answer check (of the
        reader's short answer) and the answerability check."""
        gates: list[AgentGate] = []
        if self.answer_check is not None and self.reader is not None:
            gates.append(AnswerChecked(self.answer_check))
        if self.answerability is not None:
            gates.append(
                LearnedCheckGate(
                    "answerability", self.answerability, AbstainReason.ANSWERABILITY, answerability_inputs
                )
            )
        return gates

    def hop_gates(self) -> list[AgentGate]:
        """The gates a second hop must pass: an answer read (:class:`HopAnswered`: else a missing
        hop), the reader's decision (at its threshold moved by
        :data:`HOP_MARGIN`) and the question's learned checks; not the sufficiency gate, whose
        features are one passage's coverage, which a bridge splits."""
        reader = ReaderDecision(self.effective_reader_logit_threshold() + HOP_MARGIN)
        return [HopAnswered(), reader, *self.question_checks()]

    def answer_gates(self) -> list[AgentGate]:
        """The gates after the answer is written, in order."""
        gates: list[AgentGate] = [] if self.answer_strategy is None else [ModelAnswered()]
        policy = self.config.policy
        # A level that keeps unsupported sentences (loose) makes an LLM answer's checks
        # informational: its strategy already verified it; the report and trace show the result.
        enforced = self.answer_strategy is None or policy.drops_unsupported
        if self.config.verify:
            gates.append(Grounded(policy.grounding_threshold, enforced))
        if self.config.verify and enforced:
            if self.answer_guard is not None:
                gates.append(LearnedCheckGate("guard", self.answer_guard, AbstainReason.GUARD, guard_inputs))
            # The support checks never see the question: a copied sentence that answers something
            # else passes them. The reader check does see it.
            if self.reader_check is not None:
                gates.append(
                    LearnedCheckGate("reader", self.reader_check, AbstainReason.READER, reader_check_inputs)
                )
        if self.config.min_sources > 1:
            gates.append(Corroborated(self.sources or _no_provenance, self.config.min_sources))
        return gates

    def _answer(self, case: Case, trace: list[TraceStep], base: dict[str, Any]) -> QueryResult:
        """The reply that answers: the written answer, its citations with their documents' provenance."""
        answer = case.answer
        if answer is None or answer.report is None:
            raise RuntimeError("no answer was written")  # not expected: the gates refuse first
        best = case.best
        logger.debug("answer %r with p=%.3f", case.question, best.probability)
        confidence = self.reply_confidence(True, best)
        details: dict[str, Any] = {"probability": best.probability, "confidence": confidence, **base}
        t0 = time.perf_counter()
        sentences = answer.sentences
        if self.sources is not None:
            cited = list(dict.fromkeys(c.doc_id for s in sentences for c in s.citations))
            known = self.sources(cited)
            sentences = tuple(with_provenance(s, known) for s in sentences)
            details["sources"] = [source_details(doc_id, known.get(doc_id)) for doc_id in cited]
        trace.append(TraceStep("answer", (time.perf_counter() - t0) * 1000, details))
        return QueryResult(
            question=case.question,
            answer=answer.text,
            abstained=False,
            abstain_reason=None,
            grounding=answer.report,
            confidence=confidence,
            sentences=sentences,
            evidence=tuple(best.hits),
            trace=tuple(trace),
            unsupported_claims=answer.unsupported_claims,
            short_answer=answer.short_answer,
        )

    def _abstain(
        self, case: Case, refusal: Refusal, trace: list[TraceStep], base: dict[str, Any]
    ) -> QueryResult:
        reason, best = refusal.reason, case.best
        logger.debug("abstain (%s) on %r: p=%.3f", reason.value, case.question, best.probability)
        details = base | dict(refusal.details)
        explanation = details.get("explanation") or ABSTAIN_EXPLANATIONS[reason]
        confidence = self.reply_confidence(False, best, reason is AbstainReason.CONFLICT)
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
        report = case.answer.report if case.answer is not None else None
        said, candidate = reply_case(reason, best.reading)
        return QueryResult(
            question=case.question,
            answer=None,
            abstained=True,
            abstain_reason=reason,
            grounding=report or GroundingReport(0.0),
            confidence=confidence,
            evidence=tuple(best.hits),
            trace=tuple(trace),
            explanation=explanation,
            case=said,
            candidate=candidate,
        )


def _no_provenance(doc_ids: Sequence[str]) -> dict[str, Any]:
    """No document declares a source: each is its own."""
    return {}


@dataclass(frozen=True, eq=False)
class AgentParts:
    """What an agent is built over: each part any object with the methods of
    :mod:`verityrag.agent.interfaces` (None: that part is off)."""

    index: AnyIndex
    retriever: Retriever
    sentence_ranker: SentenceRanker
    gate: SufficiencyModel | None
    grounding: GroundingChecker
    cache: ChunkTermCache
    reranker: Reranker | None = None
    answer_guard: AnswerGuard | None = None
    answerability: AnswerabilityModel | None = None
    reader_check: ReaderCheckModel | None = None
    answer_strategy: AnswerStrategy | None = None
    reader: EvidenceReader | None = None
    confidence: ConfidenceModel | None = None
    sources: ProvenanceLookup | None = None
    answer_check: AnswerCheckModel | None = None

    def identity(self) -> tuple[int, ...]:
        """Which objects these are: parts are told apart by identity, not by value (a cache key)."""
        return tuple(id(getattr(self, f.name)) for f in fields(self))

    def controller(self, reformulators: Sequence[Reformulator], config: AgentConfig) -> AgentController:
        """An agent over these parts that decides by ``config``."""
        parts = {f.name: getattr(self, f.name) for f in fields(self)}
        return AgentController(**parts, reformulators=reformulators, config=config)
