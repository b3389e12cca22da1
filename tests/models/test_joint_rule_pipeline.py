"""``calibrate`` fits the answerability gate jointly with the sufficiency gate (verityrag.thresholds.learned).

The check is an oracle that knows which questions the corpus can answer: what is under test is
the wiring (one pass with both gates open, the out-of-fold probabilities, the paired threshold
applying only while that very check is attached), not a model.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from _questions import labelled_questions

from verityrag import Settings, VerityRAGPipeline
from verityrag.thresholds.learned import SWEEP_THRESHOLDS, PairedSufficiency, fit_thresholds

pytestmark = pytest.mark.integration


class _OracleCheck:
    """Scores 1.0 for a question the corpus answers, 0.0 for one it cannot."""

    def __init__(self, answerable: set[str], threshold: float = 0.5) -> None:
        self.answerable = answerable
        self.threshold = threshold
        self.calls = 0

    def score(self, question: str, evidence: str) -> float:
        self.calls += 1
        return 1.0 if question in self.answerable else 0.0


def _labelled(
    corpus_slice: list[dict[str, str]], test_questions: list[dict[str, Any]]
) -> list[tuple[str, list[str]]]:
    return labelled_questions(corpus_slice, test_questions, answerable=30, unanswerable=30)


@pytest.fixture
def calibrated(
    corpus_slice: list[dict[str, str]], test_questions: list[dict[str, Any]]
) -> tuple[VerityRAGPipeline, _OracleCheck, dict[str, Any]]:
    labelled = _labelled(corpus_slice, test_questions)
    pipeline = VerityRAGPipeline(settings=Settings(max_reformulations=0))
    pipeline.ingest_documents(corpus_slice, progress=False)
    check = _OracleCheck({q for q, answers in labelled if answers})
    pipeline.answerability = check
    pipeline.check_threshold_sources["answerability"] = "metadata"  # as the settings attach it
    summary = pipeline.calibrate(labelled)
    return pipeline, check, summary


def test_calibrate_fits_both_gates_together_on_every_labelled_question(
    calibrated: tuple[VerityRAGPipeline, _OracleCheck, dict[str, Any]],
) -> None:
    pipeline, check, summary = calibrated
    fit = summary["learned_checks"]["answerability"]
    assert fit["rule"] == "joint"
    assert fit["questions"] == 60  # answerable and unanswerable: the abstention target needs both
    assert fit["abstention"] >= pipeline.settings.abstention_target
    assert fit["coverage"] >= fit["coverage_floor"]
    # The oracle stops every unanswerable question, so the strictest threshold is free; the
    # lexical gate moves only as far as coverage allows (on a tie the rule takes the stricter),
    # and its own threshold stays what the gate alone would use.
    assert check.threshold == fit["threshold"] == max(SWEEP_THRESHOLDS)
    assert fit["sufficiency_threshold_alone"] == pipeline.gate.threshold_
    assert fit["coverage"] >= fit["coverage_check_off"]
    checks = pipeline.stats()["learned_checks"]
    assert checks["answerability"]["threshold_from"] == "calibration"
    assert checks["answerability"]["sufficiency_threshold"] == fit["sufficiency_threshold"]


def test_the_paired_threshold_applies_only_while_its_check_is_attached(
    calibrated: tuple[VerityRAGPipeline, _OracleCheck, dict[str, Any]],
    answered_question: str,
) -> None:
    pipeline, check, summary = calibrated
    paired = summary["learned_checks"]["answerability"]["sufficiency_threshold"]
    own = pipeline.gate.threshold_
    if paired == own:  # the fit moved nothing: a paired threshold of its own
        paired = own - 0.1
        pipeline.use_calibration(
            replace(pipeline.calibration, paired_sufficiency=PairedSufficiency(check, paired))
        )
    assert pipeline.sufficiency_threshold == paired
    assert pipeline.query(answered_question).trace[-1].details["threshold"] == paired

    pipeline.answerability = _OracleCheck(check.answerable)  # another check: the gate's own threshold
    assert pipeline.sufficiency_threshold == own
    assert pipeline.query(answered_question).trace[-1].details["threshold"] == own
    pipeline.answerability = None
    assert pipeline.sufficiency_threshold == own
    assert "sufficiency_threshold" not in pipeline.stats()["learned_checks"].get("answerability", {})


def test_without_out_of_fold_probabilities_or_unanswerable_questions_the_rule_is_sequential(
    corpus_slice: list[dict[str, str]], test_questions: list[dict[str, Any]]
) -> None:
    labelled = _labelled(corpus_slice, test_questions)
    pipeline = VerityRAGPipeline(settings=Settings(max_reformulations=0))
    pipeline.ingest_documents(corpus_slice, progress=False)
    pipeline.calibrate(labelled)
    pipeline.answerability = _OracleCheck({q for q, answers in labelled if answers})
    # What calibrate passes when reformulation stays on: no out-of-fold probabilities.
    fit = fit_thresholds(pipeline.query_with, pipeline.checks(), labelled, ["answerability"]).report[
        "answerability"
    ]
    assert (fit["rule"], fit["questions"]) == ("sequential", 30)
    assert pipeline.calibration.paired_sufficiency is None
    answerable_only = [(q, a) for q, a in labelled if a]
    oof = [0.5] * len(answerable_only)
    joint = {"sufficiency_reference": pipeline.gate.threshold_, "abstention_target": 0.9}
    fit = fit_thresholds(
        pipeline.query_with,
        pipeline.checks(),
        answerable_only,
        ["answerability"],
        sufficiency_oof=oof,
        **joint,
    ).report["answerability"]
    assert fit["rule"] == "sequential"
    with pytest.raises(ValueError, match="out-of-fold"):
        fit_thresholds(
            pipeline.query_with, pipeline.checks(), labelled, ["answerability"], sufficiency_oof=oof
        )


def test_a_new_calibration_drops_the_old_pairing(
    calibrated: tuple[VerityRAGPipeline, _OracleCheck, dict[str, Any]],
    corpus_slice: list[dict[str, str]],
    test_questions: list[dict[str, Any]],
) -> None:
    pipeline, _, _ = calibrated
    assert pipeline.calibration.paired_sufficiency is not None
    pipeline.check_threshold_sources["answerability"] = "settings"  # now fixed: not refitted
    pipeline.calibrate(_labelled(corpus_slice, test_questions))
    assert pipeline.calibration.paired_sufficiency is None
    assert pipeline.sufficiency_threshold == pipeline.gate.threshold_
