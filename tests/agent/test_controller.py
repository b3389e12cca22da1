"""AgentController through a small real pipeline: the bounded loop, every abstain reason, the trace.

One pipeline per module holds the first 150 documents of the committed SQuAD corpus
(Super Bowl 50, Nikola Tesla, Oxygen) with the bundled sentence selector and
sufficiency gate. Tests that need another gate, checker or model build their own
controller from it and never change the shared pipeline.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from verityrag import AbstainReason, InvalidInputError, Settings, VerityRAGPipeline
from verityrag.agent.controller import GROUNDING_THRESHOLDS, AgentConfig, AgentController
from verityrag.agent.sufficiency import GATE_FEATURES, SufficiencyGate
from verityrag.errors import NotFittedError
from verityrag.generation.reading import EvidenceReader
from verityrag.models.span_reader import ReaderResult, ReaderSpan
from verityrag.retrieval.reranker import KEEP_RERANKER_ALPHA, sign_test_p
from verityrag.types import Chunk, CitedSentence, GroundingReport, QueryResult, TraceStep
from verityrag.verify.grounding import GroundingChecker
from verityrag.verify.strictness import STRICTNESS_TABLE

pytestmark = pytest.mark.integration

N_DOCS = 150
CALIBRATION = Path(__file__).resolve().parents[2] / "data" / "built" / "questions" / "calibration.jsonl"
# Plainly covered by the corpus slice: the bundled gate answers them (one is enough).
EASY = (
    "What anniversary of the Pokémon franchise was celebrated during the Super Bowl?",
    "Who did the Carolina Panthers beat in the 2015 NFC Championship game?",
    "In 2011, who was the first player to be chosen in the NFL draft?",
)
# Covered, and without the title of its document (so both reformulations apply).
REFORMULABLE = "What position does Jerricho Cotchery play?"
UNRELATED = "Who won the 1998 chess championship in Moscow?"
ANY_QUESTIONS = (REFORMULABLE, *EASY, UNRELATED, "Who was the Super Bowl 50 halftime show headliner?")
ATTEMPT_DETAILS = {"query", "strategy", "probability", "top_chunks", "features", "timings_ms"}
TIMINGS = {"retrieve", "rerank", "select", "gate"}


# ---------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def documents(corpus_slice: list[dict[str, str]]) -> list[dict[str, str]]:
    return corpus_slice[:N_DOCS]


@pytest.fixture(scope="module")
def pipeline(documents: list[dict[str, str]]) -> VerityRAGPipeline:
    """The loop, the gates and the checks after them, without the extractive reader (its decisions
    are tested in test_reader_decisions.py): an answer here is the selector's sentence."""
    p = VerityRAGPipeline(settings=Settings(reader=False))
    p.ingest_documents(documents)
    return p


@pytest.fixture(scope="module")
def answered(pipeline: VerityRAGPipeline) -> QueryResult:
    results = [pipeline.query(q) for q in EASY]
    answers = [r for r in results if not r.abstained]
    assert answers, f"the bundled gate refused every easy question: {[r.abstain_reason for r in results]}"
    return answers[0]


@pytest.fixture(scope="module")
def calibration_questions(documents: list[dict[str, str]]) -> list[tuple[str, list[str]]]:
    """Answerable questions about the slice, then questions no document of it answers."""
    ids = {d["doc_id"] for d in documents}
    with CALIBRATION.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    answerable: list[tuple[str, list[str]]] = [
        (r["question"], r["answers"]) for r in rows if r["source_doc_id"] in ids and r["answers"]
    ]
    unanswerable: list[tuple[str, list[str]]] = [(r["question"], []) for r in rows if not r["answers"]]
    return answerable[:40] + unanswerable[:25]


# ------------------------------------------------------------------------- stubs


class FixedGate(SufficiencyGate):
    """A gate whose probability per attempt is given (the last one repeats) and whose threshold is set."""

    def __init__(self, probabilities: Sequence[float], threshold: float) -> None:
        super().__init__()
        self.probabilities = list(probabilities)
        self.threshold_ = threshold
        self.rows: list[list[float]] = []

    def predict_proba(self, features: npt.ArrayLike) -> npt.NDArray[np.float64]:
        rows = np.atleast_2d(np.asarray(features, dtype=np.float64))
        self.rows.extend(rows.tolist())
        p = self.probabilities[min(len(self.rows), len(self.probabilities)) - 1]
        return np.full(len(rows), p)


class LowGrounding(GroundingChecker):
    def check(self, sentences: Sequence[CitedSentence], evidence: Any) -> GroundingReport:
        return GroundingReport(0.1)


class ScoreStub:
    """An answerability model or answer guard that always scores 0.0 against a 0.9 threshold."""

    threshold = 0.9

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def score(self, first: str, second: str) -> float:
        self.calls.append((first, second))
        return 0.0


class ReaderStub:
    """A reader check scoring ``value`` against a 0.5 threshold; records (question, evidence, answer)."""

    threshold = 0.5

    def __init__(self, value: float = 0.0) -> None:
        self.value = value
        self.calls: list[tuple[str, str, str]] = []

    def score(self, question: str, evidence: str, answer: str) -> float:
        self.calls.append((question, evidence, answer))
        return self.value


PASSING = (0.95, 0.5)  # a gate that always answers: (probability, threshold)
UNREACHABLE = (0.5, 1.1)  # probability above the signal floor, threshold never reached


def controller(
    pipeline: VerityRAGPipeline, gate: tuple[float, float] | None = None, **changes: Any
) -> AgentController:
    """The pipeline's own controller (its parts and reformulators) with some parts swapped."""
    settings = pipeline.settings.replace(
        **{k: changes.pop(k) for k in ("max_reformulations", "verify", "strictness") if k in changes}
    )
    ctrl = pipeline.new_controller(settings)
    # These tests are about the loop itself, whatever calibrate() decided for this corpus.
    ctrl.config = dataclasses.replace(ctrl.config, max_reformulations=settings.max_reformulations)
    if gate is not None:
        ctrl.gate = FixedGate([gate[0]], gate[1])
    for name, value in changes.items():
        assert hasattr(ctrl, name), name
        setattr(ctrl, name, value)
    return ctrl


def attempts(result: QueryResult) -> list[TraceStep]:
    return [s for s in result.trace if s.stage.startswith("attempt_")]


def stages(result: QueryResult) -> list[str]:
    return [s.stage for s in result.trace]


# ------------------------------------------------------------------ bounded loop


@pytest.mark.parametrize("max_reformulations", [0, 1, 2, 3])
@pytest.mark.parametrize("question", ANY_QUESTIONS)
def test_loop_max_reformulations_bounds_attempts(
    pipeline: VerityRAGPipeline, question: str, max_reformulations: int
) -> None:
    ctrl = controller(pipeline, UNREACHABLE, max_reformulations=max_reformulations)
    result = ctrl.run(question)
    steps = attempts(result)
    assert 1 <= len(steps) <= 1 + max_reformulations
    assert [s.stage for s in steps] == [f"attempt_{i}" for i in range(len(steps))]
    assert result.abstain_reason is AbstainReason.SUFFICIENCY
    assert result.trace[-1].details["attempts"] == len(steps)


@pytest.mark.parametrize(
    ("max_reformulations", "strategies"),
    [
        (0, ["original"]),
        (1, ["original", "salient_expansion"]),
        (2, ["original", "salient_expansion", "title_anchored"]),
        (5, ["original", "salient_expansion", "title_anchored"]),  # as many as there are reformulators
    ],
)
def test_loop_some_signal_reformulates_and_records_strategies(
    pipeline: VerityRAGPipeline, max_reformulations: int, strategies: list[str]
) -> None:
    result = controller(pipeline, UNREACHABLE, max_reformulations=max_reformulations).run(REFORMULABLE)
    details = [s.details for s in attempts(result)]
    assert [d["strategy"] for d in details] == strategies
    queries = [d["query"] for d in details]
    assert queries[0] == REFORMULABLE
    assert len(set(queries)) == len(queries)  # every rewrite is new
    if len(queries) > 1:
        assert queries[1].startswith(REFORMULABLE)  # expansion appends
        assert len(queries[1]) > len(REFORMULABLE)
    if len(queries) > 2:
        assert queries[2].endswith(f": {REFORMULABLE}")  # title anchoring prefixes the title


def test_loop_gate_judges_the_original_question_on_every_attempt(pipeline: VerityRAGPipeline) -> None:
    ctrl = controller(pipeline, UNREACHABLE, max_reformulations=2)
    result = ctrl.run(REFORMULABLE)
    assert isinstance(ctrl.gate, FixedGate)
    assert len(ctrl.gate.rows) == len(attempts(result)) == 3
    query_terms = GATE_FEATURES.index("query_terms")
    assert {row[query_terms] for row in ctrl.gate.rows} == {
        attempts(result)[0].details["features"]["query_terms"]
    }


@pytest.mark.parametrize("question", ANY_QUESTIONS)
def test_loop_probability_below_signal_floor_makes_one_attempt(
    pipeline: VerityRAGPipeline, question: str
) -> None:
    ctrl = controller(pipeline, max_reformulations=2)
    ctrl.gate = FixedGate([ctrl.config.signal_floor / 2], 0.5)
    result = ctrl.run(question)
    assert stages(result) == ["attempt_0", "abstain"]
    assert result.abstain_reason is AbstainReason.SUFFICIENCY


def test_loop_probability_at_signal_floor_counts_as_signal(pipeline: VerityRAGPipeline) -> None:
    ctrl = controller(pipeline, max_reformulations=2)
    ctrl.gate = FixedGate([ctrl.config.signal_floor], 0.5)
    assert len(attempts(ctrl.run(REFORMULABLE))) == 3


class Echo:
    """A reformulator that declines by returning the question unchanged, or None."""

    name = "echo"

    def __init__(self, same: bool) -> None:
        self.same = same

    def __call__(self, q: Any, hits: Any) -> str | None:
        return q.text if self.same else None


@pytest.mark.parametrize("same", [True, False])
def test_loop_reformulator_without_new_query_stops(pipeline: VerityRAGPipeline, same: bool) -> None:
    ctrl = controller(pipeline, UNREACHABLE, max_reformulations=2, reformulators=[Echo(same), Echo(same)])
    assert stages(ctrl.run(REFORMULABLE)) == ["attempt_0", "abstain"]


def test_loop_sufficient_first_attempt_stops(pipeline: VerityRAGPipeline) -> None:
    result = controller(pipeline, PASSING, max_reformulations=2).run(REFORMULABLE)
    assert len(attempts(result)) == 1
    assert not result.abstained


def test_loop_gate_unreachable_on_default_gate_question_never_exceeds_bound(
    pipeline: VerityRAGPipeline,
) -> None:
    # The bundled gate with its threshold forced out of reach: the loop still ends.
    ctrl = controller(pipeline, max_reformulations=2)
    gate = SufficiencyGate.from_dict(pipeline.gate.to_dict())
    gate.threshold_ = 1.1
    ctrl.gate = gate
    for question in ANY_QUESTIONS:
        result = ctrl.run(question)
        assert len(attempts(result)) <= 3
        assert result.abstain_reason is AbstainReason.SUFFICIENCY


def test_controller_negative_max_reformulations_raises() -> None:
    with pytest.raises(ValueError, match="max_reformulations must be >= 0"):
        AgentConfig(max_reformulations=-1)


def test_controller_without_gate_raises_not_fitted(pipeline: VerityRAGPipeline) -> None:
    no_gate = pipeline.new_controller()
    no_gate.gate = None
    with pytest.raises(NotFittedError, match="needs a fitted sufficiency gate"):
        no_gate.run(REFORMULABLE)


# ------------------------------------------------------------------ confidence


def test_confidence_is_best_attempt_probability_and_evidence_its_hits(pipeline: VerityRAGPipeline) -> None:
    ctrl = controller(pipeline, max_reformulations=2)
    ctrl.gate = FixedGate([0.2, 0.6, 0.4], 1.1)
    result = ctrl.run(REFORMULABLE)
    steps = attempts(result)
    assert [s.details["probability"] for s in steps] == [0.2, 0.6, 0.4]
    assert result.confidence == pytest.approx(0.6)
    assert [h.chunk_id for h in result.evidence[:3]] == steps[1].details["top_chunks"]
    assert result.trace[-1].details["probability"] == pytest.approx(0.6)


def test_trace_probability_is_exact_so_a_tie_with_the_threshold_reads_as_answered(
    pipeline: VerityRAGPipeline,
) -> None:
    # Calibrated gate probabilities are steps; one equal to the threshold answers, and the
    # trace must say so (a rounded 0.8222 < 0.8222... made the threshold sweeps count it as refused).
    ctrl = controller(pipeline, max_reformulations=0)
    ctrl.gate = FixedGate([37 / 45], 37 / 45)
    result = ctrl.run(REFORMULABLE)
    assert not result.abstained
    assert attempts(result)[0].details["probability"] >= result.trace[-1].details["threshold"]


def test_confidence_answered_equals_max_attempt_probability(answered: QueryResult) -> None:
    best = max(s.details["probability"] for s in attempts(answered))
    assert answered.confidence == pytest.approx(best, abs=1e-4)


# --------------------------------------------------------------- abstain reasons


def _no_evidence(pipeline: VerityRAGPipeline) -> QueryResult:
    return VerityRAGPipeline(settings=Settings()).query("Where do aardvarks live?")


def _sufficiency(pipeline: VerityRAGPipeline) -> QueryResult:
    return pipeline.query(UNRELATED)


def _answerability(pipeline: VerityRAGPipeline) -> QueryResult:
    return controller(pipeline, PASSING, answerability=ScoreStub()).run(REFORMULABLE)


def _grounding(pipeline: VerityRAGPipeline) -> QueryResult:
    return controller(pipeline, PASSING, grounding=LowGrounding()).run(REFORMULABLE)


def _guard(pipeline: VerityRAGPipeline) -> QueryResult:
    return controller(pipeline, PASSING, answer_guard=ScoreStub()).run(REFORMULABLE)


def _reader(pipeline: VerityRAGPipeline) -> QueryResult:
    return controller(pipeline, PASSING, reader_check=ReaderStub()).run(REFORMULABLE)


def _corroboration(pipeline: VerityRAGPipeline) -> QueryResult:
    # The agent's last gate: more independent documents asked for than the evidence holds
    # (verityrag.verify.sources).
    question = next(q for q in EASY if not pipeline.query(q).abstained)
    return pipeline.query(question, settings=pipeline.settings.replace(min_sources=10))


class _TwoLengths:
    """A stand-in reader model: "64 metres" (the better span) and "88 metres", where the evidence has them."""

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def read_batch(self, pairs: Sequence[tuple[str, str]], k: int = 1) -> list[ReaderResult]:
        out = []
        for _, evidence in pairs:
            found = [(a, s) for a, s in (("64 metres", 4.0), ("88 metres", 3.0)) if a in evidence]
            spans = [ReaderSpan(a, evidence.find(a), evidence.find(a) + len(a), s, 0.5) for a, s in found]
            out.append(ReaderResult(spans, 0.0))
        return out


def _conflict(
    pipeline: VerityRAGPipeline, other_title: str = "Ferry facts", sources: tuple[str, str] | None = None
) -> QueryResult:
    # Two documents give the ship different lengths, both read as answers (report_conflicts on).
    p = VerityRAGPipeline(settings=Settings(report_conflicts=True))
    wren, facts = ({"source": s} for s in sources) if sources else ({}, {})
    p.ingest_document(
        "wren", "MV Lissa Wren", "The MV Lissa Wren is 64 metres long. She sails from Hollin Isle.", wren
    )
    p.ingest_document(
        "facts", other_title, "The MV Lissa Wren is 88 metres long, says the harbour office.", facts
    )
    p.reader = EvidenceReader(_TwoLengths())
    p.use_calibration(dataclasses.replace(p.calibration, reader_logit_threshold=0.0))
    p.gate.set_threshold(0.0)
    return p.query("How long is the MV Lissa Wren?")


FOUNDER = "Rustomji Mehra was a hotelier who founded the Lotus Group in 1934."
FOUNDED = "Rustomji Mehra founded a hotel company with its head office in what city?"


class _CityReader:
    """A stand-in reader model: "Delhi" (a city) wherever the evidence has it."""

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def read_batch(self, pairs: Sequence[tuple[str, str]], k: int = 1) -> list[ReaderResult]:
        out = []
        for _, evidence in pairs:
            at = evidence.find("Delhi")
            out.append(ReaderResult([ReaderSpan("Delhi", at, at + 5, 4.0, 0.9)] if at >= 0 else [], 0.0))
        return out


def _missing_hop(pipeline: VerityRAGPipeline) -> QueryResult:
    # Mehra's passage names the Lotus Group, which no document is about; the city the reader finds
    # is in a passage that does not name Mehra.
    p = VerityRAGPipeline(settings=Settings(max_hops=2))
    p.ingest_document("founder", "Rustomji Mehra", FOUNDER)
    p.ingest_document("city", "Delhi", "Delhi is a large city in the north of India.")
    p.reader = EvidenceReader(_CityReader())
    p.use_calibration(dataclasses.replace(p.calibration, reader_logit_threshold=0.0))
    p.gate.set_threshold(0.0)
    return p.query(FOUNDED)


SCENARIOS: dict[AbstainReason, Callable[[VerityRAGPipeline], QueryResult]] = {
    AbstainReason.NO_EVIDENCE: _no_evidence,
    AbstainReason.SUFFICIENCY: _sufficiency,
    AbstainReason.ANSWERABILITY: _answerability,
    AbstainReason.GROUNDING: _grounding,
    AbstainReason.GUARD: _guard,
    AbstainReason.READER: _reader,
    AbstainReason.CORROBORATION: _corroboration,
    AbstainReason.CONFLICT: _conflict,
    AbstainReason.MISSING_HOP: _missing_hop,
}


@pytest.mark.parametrize("reason", list(SCENARIOS), ids=str)
def test_abstain_reason_is_reachable_and_recorded(pipeline: VerityRAGPipeline, reason: AbstainReason) -> None:
    result = SCENARIOS[reason](pipeline)
    assert result.abstained
    assert result.abstain_reason is reason
    assert result.answer is None
    assert result.sentences == ()
    last = result.trace[-1]
    assert last.stage == "abstain"
    assert last.details["reason"] == reason.value
    assert {"probability", "threshold", "attempts", "snapshot_version"} <= set(last.details)


def test_stages_stream_in_trace_order_whether_corroboration_answers_or_refuses(
    pipeline: VerityRAGPipeline,
) -> None:
    question = next(q for q in EASY if not pipeline.query(q).abstained)
    for min_sources, last in ((1, "answer"), (10, "abstain")):
        streamed: list[TraceStep] = []
        settings = pipeline.settings.replace(min_sources=min_sources)
        result = pipeline.query(question, settings=settings, on_stage=streamed.append)
        assert streamed == list(result.trace)
        assert streamed[-1].stage == last
        assert ("corroboration" in [s.stage for s in streamed]) is (min_sources > 1)


def _bridged(max_hops: int) -> QueryResult:
    p = VerityRAGPipeline(settings=Settings(max_hops=max_hops))
    p.ingest_document("founder", "Rustomji Mehra", FOUNDER)
    p.ingest_document(
        "group", "The Lotus Group", "The Lotus Group is a hotel company with its head office in Delhi."
    )
    p.ingest_document("rail", "Rail in India", "Trains run from Mumbai to Chennai every day.")
    p.reader = EvidenceReader(_CityReader())
    p.use_calibration(dataclasses.replace(p.calibration, reader_logit_threshold=0.0))
    p.gate.set_threshold(0.0)
    return p.query(FOUNDED)


def test_a_bridge_answers_through_the_passage_that_names_the_answers_document() -> None:
    result = _bridged(max_hops=2)
    assert not result.abstained, result.explanation
    assert result.short_answer is not None
    assert result.short_answer.text == "Delhi"
    (hop,) = [s for s in result.trace if s.stage.startswith("hop_")]
    assert hop.details["asked"] == "The Lotus Group"
    assert hop.details["span"] == "Delhi"
    # The answer cites the link, then the target's sentence.
    assert [c.doc_id for c in result.citations] == ["founder", "group"]


def test_one_hop_by_default_the_bridge_is_not_followed() -> None:
    result = _bridged(max_hops=1)
    assert result.abstain_reason is AbstainReason.ANSWERABILITY
    assert not any(s.stage.startswith("hop_") for s in result.trace)


def test_abstain_reasons_every_reason_but_verifier_error_has_a_scenario() -> None:
    assert set(SCENARIOS) == set(AbstainReason) - {AbstainReason.VERIFIER_ERROR}
    assert AbstainReason("verifier_error") is AbstainReason.VERIFIER_ERROR  # reserved, not emitted yet


def test_a_conflict_names_both_answers_and_their_documents(pipeline: VerityRAGPipeline) -> None:
    result = _conflict(pipeline)
    assert result.explanation is not None
    assert "'64 metres' (MV Lissa Wren)" in result.explanation
    assert "'88 metres' (Ferry facts)" in result.explanation
    assert [c["answer"] for c in result.trace[-1].details["conflict"]] == ["64 metres", "88 metres"]


def test_documents_of_one_declared_source_are_one_source_and_do_not_conflict(
    pipeline: VerityRAGPipeline,
) -> None:
    # An article's paragraphs: two right answers to a question that has several, not a dispute.
    result = _conflict(pipeline, sources=("Ferry register", "Ferry register"))
    assert not result.abstained
    assert result.short_answer is not None
    assert result.short_answer.text == "64 metres"


def test_a_copied_title_does_not_make_documents_one_source(pipeline: VerityRAGPipeline) -> None:
    # Anyone can give a document the title of another: a title is no source, so a planted value
    # under a copied title is reported beside the true one, not hidden as "the same article".
    for sources in (None, ("wren.html", "upload")):
        result = _conflict(pipeline, other_title="MV Lissa Wren", sources=sources)
        assert result.abstain_reason is AbstainReason.CONFLICT
        assert "64 metres" in (result.explanation or "")
        assert "88 metres" in (result.explanation or "")


class _Everywhere:
    """A stand-in reader model: one span at each occurrence of ``answer`` in the evidence."""

    def __init__(self, answer: str, score: float) -> None:
        self.answer, self.score = answer, score

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def read_batch(self, pairs: Sequence[tuple[str, str]], k: int = 1) -> list[ReaderResult]:
        out = []
        for _, evidence in pairs:
            at = [m.start() for m in re.finditer(re.escape(self.answer), evidence)]
            out.append(
                ReaderResult(
                    [ReaderSpan(self.answer, i, i + len(self.answer), self.score, 0.5) for i in at], 0.0
                )
            )
        return out


def test_an_answer_another_source_gives_too_counts_for_it() -> None:
    def ask(*docs: tuple[str, str, str], source: str | None = None) -> QueryResult:
        p = VerityRAGPipeline(settings=Settings())
        for doc_id, title, text in docs:
            p.ingest_document(doc_id, title, text, {"source": source} if source else {})
        p.reader = EvidenceReader(_Everywhere("Ewan Tolley", -0.5))  # probability 0.38 per span
        # Answer at 0.5 and above.
        p.use_calibration(dataclasses.replace(p.calibration, reader_logit_threshold=0.0))
        p.gate.set_threshold(0.0)
        return p.query("Who is the captain of the MV Corran Bell?")

    bell = ("bell", "MV Corran Bell", "The MV Corran Bell's captain is Ewan Tolley.")
    crew = ("crew", "Crew list", "On the MV Corran Bell the captain is Ewan Tolley, since 2019.")
    alone = ask(bell)
    assert alone.abstained
    assert alone.abstain_reason is AbstainReason.ANSWERABILITY  # the reader found no answer
    both = ask(bell, crew)
    assert not both.abstained
    assert both.short_answer is not None
    assert both.short_answer.text == "Ewan Tolley"
    decision = next(s.details for s in both.trace if s.stage == "reader_decision")
    assert [c["title"] for c in decision["corroborations"]] in (["Crew list"], ["MV Corran Bell"])
    p = 1 / (1 + np.exp(0.5))
    assert decision["score"] == pytest.approx(1 - (1 - p) ** 2)  # either source right: 0.62
    # One declared source twice is one source (an article's paragraphs): no corroboration; one
    # title twice is not (anyone can copy a title).
    bell_2 = ("bell-2", "MV Corran Bell", "Her captain, Ewan Tolley, joined in 2019.")
    assert ask(bell, bell_2, source="Ship register").abstained
    assert not ask(bell, bell_2).abstained


def test_abstain_no_evidence_records_empty_attempt() -> None:
    result = VerityRAGPipeline(settings=Settings()).query("Where do aardvarks live?")
    assert stages(result) == ["attempt_0", "abstain"]
    details = result.trace[0].details
    assert details["top_chunks"] == []
    assert details["probability"] == 0.0
    assert set(details["features"].values()) == {0.0}
    assert result.evidence == ()
    assert result.grounding.overall_score == 0.0


def test_abstain_answerability_stage_records_score_and_threshold(pipeline: VerityRAGPipeline) -> None:
    model = ScoreStub()
    result = controller(pipeline, PASSING, answerability=model).run(REFORMULABLE)
    assert stages(result)[-2:] == ["answerability", "abstain"]
    assert result.trace[-2].details == {"score": 0.0, "threshold": 0.9}
    ((question, evidence),) = model.calls
    assert question == REFORMULABLE
    assert evidence == " ".join(h.chunk.text for h in result.evidence[:3])


def test_abstain_grounding_keeps_the_report_and_threshold(pipeline: VerityRAGPipeline) -> None:
    result = controller(pipeline, PASSING, grounding=LowGrounding(), strictness="loose").run(REFORMULABLE)
    assert stages(result)[-2:] == ["grounding", "abstain"]
    assert result.grounding.overall_score == 0.1
    assert result.trace[-2].details["threshold"] == GROUNDING_THRESHOLDS["loose"]


@pytest.mark.parametrize("strictness", ["loose", "balanced", "strict", "paranoid"])
def test_abstain_grounding_threshold_follows_strictness(
    pipeline: VerityRAGPipeline, monkeypatch: pytest.MonkeyPatch, strictness: str
) -> None:
    unreachable = dataclasses.replace(STRICTNESS_TABLE[strictness], grounding_threshold=1.01)
    monkeypatch.setitem(STRICTNESS_TABLE, strictness, unreachable)  # at this level only
    result = controller(pipeline, PASSING, strictness=strictness).run(REFORMULABLE)
    assert result.abstain_reason is AbstainReason.GROUNDING
    assert result.trace[-2].details["threshold"] == 1.01


def test_abstain_guard_scores_answer_against_its_cited_chunks(pipeline: VerityRAGPipeline) -> None:
    guard = ScoreStub()
    result = controller(pipeline, PASSING, answer_guard=guard).run(REFORMULABLE)
    assert stages(result)[-3:] == ["grounding", "guard", "abstain"]
    assert result.trace[-2].details == {"score": 0.0, "threshold": 0.9}
    ((cited, answer),) = guard.calls
    assert answer
    assert answer in cited
    assert result.grounding.overall_score >= GROUNDING_THRESHOLDS["balanced"]


def test_abstain_reader_reads_question_top_evidence_and_answer_after_the_guard(
    pipeline: VerityRAGPipeline,
) -> None:
    reader = ReaderStub()
    passing_guard = ScoreStub()
    passing_guard.threshold = 0.0
    result = controller(pipeline, PASSING, answer_guard=passing_guard, reader_check=reader).run(REFORMULABLE)
    assert stages(result)[-4:] == ["grounding", "guard", "reader", "abstain"]
    assert result.abstain_reason is AbstainReason.READER
    assert result.trace[-2].details == {"score": 0.0, "threshold": 0.5}
    ((question, evidence, answer),) = reader.calls
    assert question == REFORMULABLE
    assert evidence == " ".join(h.chunk.text for h in result.evidence[:3])
    assert answer
    assert answer in evidence


def test_reader_passing_answers_and_is_skipped_when_verify_off(pipeline: VerityRAGPipeline) -> None:
    passing = controller(pipeline, PASSING, reader_check=ReaderStub(0.5)).run(REFORMULABLE)
    assert not passing.abstained
    assert stages(passing)[-2:] == ["reader", "answer"]
    reader = ReaderStub()
    unverified = controller(pipeline, PASSING, reader_check=reader, verify=False).run(REFORMULABLE)
    assert not unverified.abstained
    assert reader.calls == []


def test_guard_skipped_when_verify_off(pipeline: VerityRAGPipeline) -> None:
    guard = ScoreStub()
    result = controller(pipeline, PASSING, answer_guard=guard, verify=False).run(REFORMULABLE)
    assert not result.abstained
    assert guard.calls == []
    assert "guard" not in stages(result)


# ---------------------------------------------------------------------- trace


def test_trace_answered_has_complete_attempt_and_grounding(
    pipeline: VerityRAGPipeline, answered: QueryResult
) -> None:
    assert stages(answered)[-2:] == ["grounding", "answer"]
    first = answered.trace[0]
    assert first.stage == "attempt_0"
    assert set(first.details) == ATTEMPT_DETAILS
    assert first.details["query"] == answered.question
    assert first.details["strategy"] == "original"
    assert 0.0 <= first.details["probability"] <= 1.0
    assert 1 <= len(first.details["top_chunks"]) <= 3
    assert list(first.details["features"]) == list(GATE_FEATURES)
    assert all(isinstance(v, float) for v in first.details["features"].values())
    assert set(first.details["timings_ms"]) == TIMINGS
    assert all(v >= 0.0 for v in first.details["timings_ms"].values())
    assert first.duration_ms == pytest.approx(sum(first.details["timings_ms"].values()), abs=0.01)
    grounding = answered.trace[-2].details
    assert grounding["score"] == answered.grounding.overall_score
    assert grounding["threshold"] == GROUNDING_THRESHOLDS[pipeline.settings.strictness]
    assert grounding["score"] >= grounding["threshold"]
    assert grounding["claims"] == len(answered.grounding.claims) >= 1


def test_trace_answered_features_are_in_range(pipeline: VerityRAGPipeline, answered: QueryResult) -> None:
    features = answered.trace[0].details["features"]
    for name in ("sentence_cov_w", "sentence_cov", "top_cov_w", "top_title_cov", "oov_fraction"):
        assert 0.0 <= features[name] <= 1.0, name
    assert features["selector_margin"] >= 0.0  # the chosen sentence is the selector's best
    assert features["oov_fraction"] == 0.0  # every term of an easy question is in the corpus
    assert features["query_terms"] == len(set(pipeline.analyzer.analyze(answered.question)))
    assert 1 <= features["distinct_docs_top5"] <= min(5, len(answered.evidence))


def test_trace_every_attempt_has_the_same_details(pipeline: VerityRAGPipeline) -> None:
    result = controller(pipeline, UNREACHABLE, max_reformulations=2).run(REFORMULABLE)
    for step in attempts(result):
        assert set(step.details) == ATTEMPT_DETAILS
        assert list(step.details["features"]) == list(GATE_FEATURES)
        assert set(step.details["timings_ms"]) == TIMINGS


def test_trace_abstained_ends_with_reason_and_gate_threshold(pipeline: VerityRAGPipeline) -> None:
    result = pipeline.query(UNRELATED)
    assert result.abstain_reason is AbstainReason.SUFFICIENCY
    last = result.trace[-1]
    assert last.stage == "abstain"
    assert last.details["reason"] == "sufficiency"
    assert last.details["threshold"] == pipeline.gate.threshold_
    assert last.details["probability"] < last.details["threshold"]
    assert last.details["attempts"] == len(attempts(result))
    assert "grounding" not in stages(result)


def test_answer_citations_point_into_chunk_text(pipeline: VerityRAGPipeline, answered: QueryResult) -> None:
    assert answered.answer
    assert answered.citations
    evidence_ids = {h.chunk_id for h in answered.evidence}
    for citation in answered.citations:
        chunk = pipeline.index.get_chunk(citation.chunk_id)
        assert isinstance(chunk, Chunk)
        assert citation.chunk_id in evidence_ids
        assert (citation.doc_id, citation.title) == (chunk.doc_id, chunk.title)
        assert chunk.text[citation.start : citation.end] == answered.answer


def test_query_verify_off_has_no_grounding_step(pipeline: VerityRAGPipeline, answered: QueryResult) -> None:
    result = pipeline.query(answered.question, settings=pipeline.settings.replace(verify=False))
    assert "grounding" not in stages(result)
    assert not result.abstained
    assert result.answer == answered.answer
    assert result.grounding.overall_score == 1.0


def test_query_verify_off_abstention_has_no_grounding_step(pipeline: VerityRAGPipeline) -> None:
    result = pipeline.query(UNRELATED, settings=pipeline.settings.replace(verify=False))
    assert result.abstained
    assert "grounding" not in stages(result)


# ------------------------------------------------------------ calibrate, train


@pytest.fixture(scope="module")
def calibrated(
    documents: list[dict[str, str]], calibration_questions: list[tuple[str, list[str]]]
) -> tuple[VerityRAGPipeline, dict[str, Any]]:
    p = VerityRAGPipeline(settings=Settings())
    p.ingest_documents(documents)
    p.train_reranker(n_queries=150)
    return p, p.calibrate(calibration_questions)


def test_calibrate_returns_threshold_and_reranker_check(
    calibrated: tuple[VerityRAGPipeline, dict[str, Any]], calibration_questions: list[tuple[str, list[str]]]
) -> None:
    p, summary = calibrated
    assert 0.0 <= summary["threshold"] <= 1.0 + 1e-9
    assert summary["threshold"] == p.gate.threshold_
    assert summary["examples"] == len(calibration_questions)
    assert summary["must_abstain"] == sum(not answers for _, answers in calibration_questions)
    check = summary["reranker"]
    assert check["trained"] is True
    assert check["used"] is p.calibration.use_reranker
    assert check["used"] is (check["p_value"] < KEEP_RERANKER_ALPHA)  # the stated rule
    assert check["p_value"] == sign_test_p(check["wins"], check["losses"])
    assert check["questions"] == sum(bool(answers) for _, answers in calibration_questions)
    difference = (check["gold_at_1_reranked"] - check["gold_at_1_fused"]) * check["questions"]
    assert check["wins"] - check["losses"] == pytest.approx(difference)
    assert 0.0 <= check["gold_at_1_fused"] <= 1.0
    assert 0.0 <= check["gold_at_1_reranked"] <= 1.0


def test_calibrate_keeps_reformulation_only_when_the_loop_beats_one_attempt(
    calibrated: tuple[VerityRAGPipeline, dict[str, Any]],
) -> None:
    p, summary = calibrated
    check = summary["reformulation"]
    assert check["used"] is p.reformulate
    assert check["used"] is (check["objective_loop"] > check["objective_single"])  # the stated rule
    loops = p.controller().config.max_reformulations
    assert loops == (p.settings.max_reformulations if check["used"] else 0)
    if check["used"]:
        assert summary["threshold_single_attempt"] <= 1.0 + 1e-9
    else:
        assert "threshold_single_attempt" not in summary


def test_default_gate_sets_reformulation_as_it_was_fitted() -> None:
    p = VerityRAGPipeline()
    used = p.gate.fit_summary_["reformulation"]["used"]
    assert p.reformulate is used


def test_calibrate_then_query_uses_the_fitted_gate(
    calibrated: tuple[VerityRAGPipeline, dict[str, Any]],
) -> None:
    p, summary = calibrated
    for question in (*EASY, UNRELATED):
        result = p.query(question)
        assert 0.0 <= result.confidence <= 1.0
        if result.abstained:
            assert result.trace[-1].details["threshold"] == summary["threshold"]
        else:  # the gate's probability passed the fitted threshold (confidence is P(right) now)
            gate = max(s.details["probability"] for s in result.trace if s.stage.startswith("attempt_"))
            assert gate >= summary["threshold"]
            assert result.citations


def test_calibrate_untrained_reranker_reports_not_used(
    documents: list[dict[str, str]], calibration_questions: list[tuple[str, list[str]]]
) -> None:
    p = VerityRAGPipeline(settings=Settings())
    p.ingest_documents(documents)
    summary = p.calibrate(calibration_questions)
    assert summary["reranker"] == {"trained": False, "used": False}
    assert p.calibration.use_reranker is False


def test_calibrate_no_questions_raises_invalid_input(pipeline: VerityRAGPipeline) -> None:
    with pytest.raises(InvalidInputError, match="questions: need at least one labelled question"):
        pipeline.calibrate([])


def test_calibrate_only_unanswerable_questions_raises(documents: list[dict[str, str]]) -> None:
    p = VerityRAGPipeline(settings=Settings())
    p.ingest_documents(documents[:20])
    with pytest.raises(InvalidInputError, match="both correct and incorrect"):
        p.calibrate([(UNRELATED, []), ("What is the capital of Mongolia?", [])])


def test_train_reranker_empty_pipeline_raises_naming_corpus() -> None:
    with pytest.raises(InvalidInputError, match=r"corpus: is empty.*train_reranker") as err:
        VerityRAGPipeline(settings=Settings()).train_reranker()
    assert err.value.field == "corpus"


def test_query_k_over_candidates_keeps_k_chunks(pipeline: VerityRAGPipeline) -> None:
    # The evidence was cut to Settings.candidates (20): k=30 returned 20 chunks.
    settings = pipeline.settings.replace(candidates=4)
    result = pipeline.query(EASY[0], k=8, settings=settings)
    assert len(result.evidence) == 8


def test_calibrate_one_unanswerable_question_fits_the_gate(
    documents: list[dict[str, str]], calibration_questions: list[tuple[str, list[str]]]
) -> None:
    # The reformulation check's fold gates were fitted with fit(), which refuses a training part
    # without an unanswerable question: calibrate failed saying none was given.
    p = VerityRAGPipeline(settings=Settings())
    p.ingest_documents(documents)
    answerable = [item for item in calibration_questions if item[1]]
    summary = p.calibrate([*answerable, (UNRELATED, [])])
    assert summary["must_abstain"] == 1
    assert "reformulation" in summary
    assert p.gate.threshold_ == summary["threshold"]


@pytest.mark.parametrize(
    ("item", "field"),
    [
        (("When was Tesla born?", "1856"), "questions[1].answers"),
        (("When was Tesla born?", ["1856", 1856]), "questions[1].answers"),
        (("When was Tesla born?",), "questions[1]"),
        (("   ", ["1856"]), "questions[1].question"),
        ((None, ["1856"]), "questions[1].question"),
        (("x" * 2_001, ["1856"]), "questions[1].question"),
    ],
)
def test_calibrate_bad_labelled_question_raises_naming_it(
    pipeline: VerityRAGPipeline, item: tuple[Any, ...], field: str
) -> None:
    # A bare string as the answers matched its characters ("1", "8"...) as gold answers.
    with pytest.raises(InvalidInputError) as err:
        pipeline.calibrate([(EASY[0], ["Pokémon"]), item])
    assert err.value.field == field


def test_calibrate_empty_corpus_raises_naming_corpus() -> None:
    # Every question found nothing: "need both correct and incorrect examples" hid the cause.
    with pytest.raises(InvalidInputError, match=r"corpus: is empty.*calibrate") as err:
        VerityRAGPipeline(settings=Settings()).calibrate([(EASY[0], ["Pokémon"]), (UNRELATED, [])])
    assert err.value.field == "corpus"


@pytest.mark.parametrize("n_queries", [0, -5, 2.5])
def test_train_reranker_bad_n_queries_raises_naming_it(pipeline: VerityRAGPipeline, n_queries: Any) -> None:
    with pytest.raises(InvalidInputError) as err:
        pipeline.train_reranker(n_queries=n_queries)
    assert err.value.field == "n_queries"


def _two_bands(max_hops: int, question: str, documents: Sequence[str] = ("kol", "np")) -> QueryResult:
    bands = {
        "kol": ("Kings of Leon", "Kings of Leon is an American rock band that formed in Nashville in 1999."),
        "np": (
            "The New Pornographers",
            "The New Pornographers are a Canadian indie rock band from Vancouver.",
        ),
    }
    p = VerityRAGPipeline(settings=Settings(max_hops=max_hops))
    for doc_id in documents:
        p.ingest_document(doc_id, *bands[doc_id])
    p.ingest_document("rail", "Rail in India", "Trains run from Mumbai to Chennai every day.")
    p.reader = EvidenceReader(_CityReader())
    p.gate.set_threshold(0.0)
    return p.query(question)


def test_a_yes_no_question_about_two_things_is_decided_by_their_documents_citing_both() -> None:
    result = _two_bands(2, "Are both Kings of Leon and The New Pornographers American rock bands?")
    assert not result.abstained, result.explanation
    assert result.short_answer is not None
    assert result.short_answer.text == "No"
    assert {c.doc_id for c in result.citations} == {"kol", "np"}
    (hop,) = [s for s in result.trace if s.stage.startswith("hop_")]
    assert hop.details["asked"] == ["Kings of Leon", "New Pornographers"]
    assert hop.details["verdict"] is False
    same = _two_bands(2, "Are Kings of Leon and The New Pornographers from different countries?")
    assert same.short_answer is not None
    assert same.short_answer.text == "Yes"


def test_a_question_about_two_things_is_refused_when_one_has_no_document_or_hops_are_off() -> None:
    question = "Are both Kings of Leon and The New Pornographers American rock bands?"
    assert _two_bands(2, question, documents=("kol",)).abstained
    off = _two_bands(1, question)
    assert off.abstained
    assert not any(s.stage.startswith("hop_") for s in off.trace)
