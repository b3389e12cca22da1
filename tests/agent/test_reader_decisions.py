"""The reader in the agent: no span, a span of the wrong kind, strictness, the short answer."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import verityrag
from verityrag import VerityRAGPipeline
from verityrag.agent.calibration import choose_reader_threshold
from verityrag.generation.reading import EvidenceReader, logit
from verityrag.models.span_reader import ReaderResult, ReaderSpan
from verityrag.text.answer_types import AnswerType, expected_type
from verityrag.thresholds.learned import GateOutcome
from verityrag.types import AbstainReason, ReplyCase

pytestmark = pytest.mark.integration


class _FirstWords:
    """A stand-in reader: the evidence's ``words`` first words as the span, at a fixed answer logit."""

    def __init__(self, logit: float, words: int = 2) -> None:
        self.logit = logit
        self.words = words

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def read_batch(self, pairs: Sequence[tuple[str, str]], k: int = 1) -> list[ReaderResult]:
        out = []
        for _, evidence in pairs:
            span = " ".join(evidence.split()[: self.words])
            at = evidence.index(span)
            # The span's score less the no-answer score (0) is the answer logit.
            out.append(ReaderResult([ReaderSpan(span, at, at + len(span), self.logit, 1.0)], 0.0))
        return out


@pytest.fixture
def pipeline(corpus_slice: list[dict[str, Any]]) -> VerityRAGPipeline:
    p = VerityRAGPipeline()
    p.ingest_documents(corpus_slice, progress=False)
    return p


def _with_reader(pipeline: VerityRAGPipeline, logit: float, words: int = 2) -> VerityRAGPipeline:
    pipeline.reader = EvidenceReader(_FirstWords(logit, words))
    # Answer when the reader prefers an answer to none.
    pipeline.use_calibration(replace(pipeline.calibration, reader_logit_threshold=0.0))
    return pipeline


@pytest.fixture
def untyped_question(
    pipeline: VerityRAGPipeline, corpus_slice: list[dict[str, Any]], test_questions: list[dict[str, Any]]
) -> str:
    """An answerable question that asks for no particular kind of answer (the stand-in's span is
    two words of prose, which a "when" or "how many" question would refuse), past the gate."""
    _with_reader(pipeline, 4.0)
    in_slice = {d["doc_id"] for d in corpus_slice}
    for q in test_questions:
        question = str(q["question"])
        if (
            q["answers"]
            and q["source_doc_id"] in in_slice
            and expected_type(question) is AnswerType.ANY
            and not pipeline.query(question).abstained
        ):
            return question
    pytest.fail("no untyped question answered in the corpus slice")


def test_no_answer_from_the_reader_is_an_answerability_refusal_that_says_why(
    pipeline: VerityRAGPipeline, untyped_question: str
) -> None:
    result = _with_reader(pipeline, -4.0).query(untyped_question)
    assert result.abstained
    assert result.abstain_reason is AbstainReason.ANSWERABILITY
    assert result.explanation is not None
    # The reader read a span far under its threshold (p 0.02): no lead, the documents do not say.
    assert "do not say" in result.explanation
    assert result.case is ReplyCase.NOT_FOUND
    assert result.candidate is None
    decision = next(s for s in result.trace if s.stage == "reader_decision")
    assert decision.details["answers"] is False
    assert decision.details["score"] < decision.details["threshold"]


def test_an_answer_carries_the_span_as_a_short_answer_inside_its_cited_sentence(
    pipeline: VerityRAGPipeline, untyped_question: str
) -> None:
    result = _with_reader(pipeline, 4.0).query(untyped_question)
    assert not result.abstained
    short = result.short_answer
    assert short is not None
    chunk = next(h.chunk for h in result.evidence if h.chunk_id == short.chunk_id)
    assert chunk.text[short.start : short.end] == short.text
    assert short.text in (result.answer or "")
    assert all(c.chunk_id == short.chunk_id for c in result.citations)


def test_a_span_of_the_wrong_kind_is_refused_naming_the_kind(pipeline: VerityRAGPipeline) -> None:
    _with_reader(pipeline, 4.0, words=1)
    pipeline.gate.set_threshold(0.0)  # every attempt reaches the reader
    result = pipeline.query("How many wins did the Broncos have in the regular season?")
    span = next(s for s in result.trace if s.stage == "reader_decision").details["short_answer"]
    assert not any(c.isdigit() for c in span)  # the evidence's first word
    assert result.abstain_reason is AbstainReason.ANSWERABILITY
    assert result.explanation is not None
    assert "asks for a number" in result.explanation


def test_a_name_no_passage_holds_is_refused_naming_it(pipeline: VerityRAGPipeline) -> None:
    _with_reader(pipeline, 4.0)
    pipeline.gate.set_threshold(0.0)  # every attempt reaches the reader
    result = pipeline.query("Who designed the MV Corran Bell for the Broncos?")
    assert result.abstain_reason is AbstainReason.ANSWERABILITY
    assert result.explanation is not None
    assert "'MV Corran Bell'" in result.explanation
    decision = next(s for s in result.trace if s.stage == "reader_decision")
    assert decision.details["missing_subjects"] == ["MV Corran Bell"]
    # Off, the reader's span stands (the stand-in answers with the evidence's first words).
    off = pipeline.query(
        "Who designed the MV Corran Bell for the Broncos?",
        settings=pipeline.settings.replace(reader_subjects=False),
    )
    assert "Corran" not in (off.explanation or "")
    assert next(s for s in off.trace if s.stage == "reader_decision").details["missing_subjects"] == []


def test_a_stricter_level_wants_a_surer_reader(pipeline: VerityRAGPipeline, untyped_question: str) -> None:
    _with_reader(pipeline, 1.0)  # above the balanced threshold (0), below the paranoid one (0 + 3)
    assert not pipeline.query(untyped_question).abstained
    paranoid = pipeline.query(untyped_question, settings=pipeline.settings.replace(strictness="paranoid"))
    assert paranoid.abstain_reason is AbstainReason.ANSWERABILITY
    loose = _with_reader(pipeline, -1.0).query(
        untyped_question, settings=pipeline.settings.replace(strictness="loose")
    )
    assert not loose.abstained


def test_the_reader_threshold_weighs_right_answers_against_wrong_ones() -> None:
    outcomes = [
        GateOutcome("answerable", True, True, 0.9, 1.0),
        GateOutcome("answerable", True, True, 0.6, 1.0),
        GateOutcome("unanswerable", True, False, 0.5, 1.0),
        GateOutcome("unanswerable", True, False, 0.7, 1.0),
        GateOutcome("answerable", False, False, None, 1.0),  # refused before the reader
    ]
    # right less wrong: 0 at 0 and 0.5, 1 at 0.6, 0 at 0.7, 1 at 0.9: the lower of the best two.
    assert choose_reader_threshold(outcomes, wrong_cost=1.0) == 0.6
    # A wrong answer worth three right ones: 0.6 gives 2 - 3, 0.9 gives 1 - 0.
    assert choose_reader_threshold(outcomes, wrong_cost=3.0) == 0.9


Labelled = list[tuple[str, list[str]]]


@pytest.fixture
def labelled_kinds(
    corpus_slice: list[dict[str, Any]], test_questions: list[dict[str, Any]]
) -> tuple[Labelled, Labelled, Labelled]:
    """Answerable questions about the slice, held-out ones, and on-topic ones it does not answer."""
    in_slice = {d["doc_id"] for d in corpus_slice}
    answerable = [
        (q["question"], q["answers"])
        for q in test_questions
        if q["answers"] and q["source_doc_id"] in in_slice
    ]
    held_out: Labelled = [(q["question"], []) for q in test_questions if q["kind"] == "held_out"]
    on_topic: Labelled = [
        (q["question"], []) for q in test_questions if q["kind"] == "unanswerable_in_domain"
    ]
    return answerable, held_out, on_topic


def test_calibrate_refits_the_reader_threshold_only_given_reader_questions(
    pipeline: VerityRAGPipeline, labelled_kinds: tuple[Labelled, Labelled, Labelled]
) -> None:
    answerable, held_out, on_topic = labelled_kinds
    labelled = answerable[:20] + held_out[:10]
    assert pipeline.reader is not None
    models_own = logit(float(pipeline.reader.model.metadata.threshold))

    summary = pipeline.calibrate(labelled)
    assert summary["reader"]["fitted"] is False
    assert pipeline.reader_logit_threshold == pytest.approx(models_own)
    assert pipeline.calibration.reader_logit_threshold is None

    summary = pipeline.calibrate(labelled, reader_questions=on_topic[:15])
    assert summary["reader"]["questions"] == len(labelled) + 15
    assert pipeline.reader_logit_threshold == pytest.approx(logit(summary["reader"]["threshold"]))
    assert pipeline.calibration.reader_logit_threshold is not None

    pipeline.calibrate(labelled)  # without them again: the model's own, not the last fit
    assert pipeline.reader_logit_threshold == pytest.approx(models_own)
    assert pipeline.calibration.reader_logit_threshold is None


def test_calibrate_fits_what_confidence_means_and_the_state_keeps_it(
    pipeline: VerityRAGPipeline, labelled_kinds: tuple[Labelled, Labelled, Labelled]
) -> None:
    answerable, held_out, _ = labelled_kinds
    summary = pipeline.calibrate(answerable[:20] + held_out[:10])
    fit = summary["confidence"]
    assert fit["questions"] == 30
    assert pipeline.confidence_model is not None
    # P(the reply is right), fitted on these replies: over the refusals (and over the answers) its
    # mean is the share of them that were right, as a fitted logistic model's is on its data.
    replies = [pipeline.query(q) for q, _ in answerable[:20] + held_out[:10]]
    refusals = [r for r in replies if r.abstained]
    assert len(refusals) == fit["questions"] - fit["answers"]
    mean_refusal_confidence = sum(r.confidence for r in refusals) / len(refusals)
    assert mean_refusal_confidence == pytest.approx(fit["refusals_right"] / len(refusals), abs=0.1)
    state = pipeline.calibration_state()
    restored = VerityRAGPipeline(settings=pipeline.settings).load_calibration_state(state)
    assert restored.confidence_model is not None
    assert restored.confidence_model.to_dict() == pipeline.confidence_model.to_dict()


def test_a_fresh_pipeline_states_the_shipped_confidence_and_only_for_the_shipped_parts(
    pipeline: VerityRAGPipeline, labelled_kinds: tuple[Labelled, Labelled, Labelled]
) -> None:
    from verityrag.agent.confidence import shipped_confidence
    from verityrag.config import Settings

    shipped = shipped_confidence()
    assert shipped is not None
    assert pipeline.confidence_model is shipped
    _, held_out, _ = labelled_kinds
    refusal = pipeline.query(held_out[0][0])
    assert refusal.abstained
    # P(the refusal is right): an off-topic question refused is right, and the model says so (the
    # gate's own probability, which this replaced, said "the evidence holds an answer": low)
    assert refusal.confidence > 0.8
    assert VerityRAGPipeline(settings=Settings(reader=False)).confidence_model is None
    # fitted for the shipped reader's logits: a reader named in the settings may mean others
    folder = Path(verityrag.__file__).parent / "resources" / "reader"
    assert VerityRAGPipeline(settings=Settings(reader_model=str(folder))).confidence_model is None


def test_calibrating_on_a_split_fits_confidence_on_every_kind_and_keeps_the_readers_threshold(
    corpus_slice: list[dict[str, Any]], labelled_kinds: tuple[Labelled, Labelled, Labelled]
) -> None:
    from verityrag.serve.bundled import calibrate_on_split
    from verityrag.serve.bundled_corpus import EvalQuestion

    answerable, held_out, on_topic = labelled_kinds
    kinds = (
        ("answerable", answerable[:20]),
        ("held_out", held_out[:10]),
        ("unanswerable_in_domain", on_topic[:10]),
    )
    split = [
        EvalQuestion(f"{kind}-{i}", question, tuple(answers), kind)
        for kind, labelled in kinds
        for i, (question, answers) in enumerate(labelled)
    ]
    pipeline = VerityRAGPipeline()
    pipeline.ingest_documents(corpus_slice, progress=False)
    models_own = pipeline.reader_logit_threshold
    summary = calibrate_on_split(pipeline, split)
    assert summary["confidence"]["questions"] == 40  # every kind
    assert summary["examples"] == 30  # the gate: answerable and held out only
    assert pipeline.reader_logit_threshold == models_own  # kept, not refitted on the on-topic ones
    assert summary["reader"]["fitted"] is False
    assert pipeline.settings.reader_answer_threshold is None  # the settings are the caller's, untouched
    from verityrag.eval.reader_sweep import _rule

    assert _rule(pipeline).startswith("the model's own")


def test_the_reader_sweep_names_where_its_threshold_comes_from() -> None:
    from verityrag.config import Settings
    from verityrag.eval.reader_sweep import _rule

    fixed = VerityRAGPipeline(settings=Settings(reader_answer_threshold=0.7))
    assert fixed.reader_logit_threshold == pytest.approx(logit(0.7))
    assert _rule(fixed) == "set in the settings"
    shipped = VerityRAGPipeline()
    assert _rule(shipped).startswith("the model's own")
    # A fit equal to the model's own threshold is still a fit.
    shipped.use_calibration(
        replace(shipped.calibration, reader_logit_threshold=shipped.reader_logit_threshold)
    )
    assert _rule(shipped).startswith("most right answers")
    # A stand-in reader with no metadata: an answer preferred to none.
    bare = VerityRAGPipeline()
    bare.reader = EvidenceReader(_FirstWords(4.0))
    assert bare.reader_logit_threshold == 0.0
    assert _rule(bare).startswith("an answer preferred to none")
