"""The reader's threshold swept on the main eval: coverage against in-domain abstention.

Calibration and test questions are each run once with the reader refusing nothing for want of
confidence (:meth:`~verityrag.pipeline.VerityRAGPipeline.reader_open_query`); every threshold's
outcome follows exactly, since the reader only ever turns an answer into an abstention. The
threshold in force was chosen by ``calibrate`` on the calibration questions only
(:func:`~verityrag.agent.calibration.choose_reader_threshold`); the test sweep shows what other
thresholds would have given, never to choose one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verityrag.agent.calibration import WRONG_ANSWER_COST, reader_thresholds
from verityrag.generation.reading import probability
from verityrag.pipeline import VerityRAGPipeline
from verityrag.serve.bundled_corpus import EvalQuestion
from verityrag.thresholds.learned import GateOutcome, gate_outcomes, sweep_row

#: Answer-probability thresholds of the table (the chosen one is added).
SWEEP = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.98, 0.99)


def _outcomes(
    pipeline: VerityRAGPipeline, questions: Sequence[EvalQuestion], progress: bool
) -> list[GateOutcome]:
    query = pipeline.reader_open_query()
    return gate_outcomes(
        query, [(q.question, q.kind, q.answers) for q in questions], "reader_decision", progress
    )


def sweep_reader(
    pipeline: VerityRAGPipeline,
    calibration: Sequence[EvalQuestion],
    test: Sequence[EvalQuestion],
    progress: bool = False,
) -> dict[str, Any]:
    """Rows of :func:`~verityrag.thresholds.learned.sweep_row` per threshold, on calibration and test."""
    chosen = probability(pipeline.reader_logit_threshold)
    cal = _outcomes(pipeline, calibration, progress)
    tst = _outcomes(pipeline, test, progress)
    grid = sorted({*SWEEP, round(chosen, 6)})
    return {
        "threshold": chosen,
        "threshold_rule": _rule(pipeline),
        "candidates_on_calibration": len(reader_thresholds(cal)),
        "calibration_sweep": [_row(cal, t) for t in grid],
        "test_sweep": [_row(tst, t) for t in grid],
    }


def _rule(pipeline: VerityRAGPipeline) -> str:
    """How the threshold in use was chosen, in words."""
    metadata = getattr(pipeline.reader.model, "metadata", None) if pipeline.reader is not None else None
    models_own = (
        "the model's own: its best SQuAD 2.0 F1 on its validation articles, chosen when it was trained"
    )
    if pipeline.settings.reader_answer_threshold is not None:
        return "set in the settings"
    if pipeline.calibration.reader_logit_threshold is not None:
        return f"most right answers less {WRONG_ANSWER_COST:g} x wrong ones on the calibration questions"
    if metadata is not None:
        return models_own
    return "an answer preferred to none (the reader records no threshold)"


def _row(outcomes: Sequence[GateOutcome], threshold: float) -> dict[str, Any]:
    row = sweep_row(outcomes, threshold)
    answered = [o for o in outcomes if o.answered and (o.score is None or o.score >= threshold)]
    right = sum(o.correct for o in answered)
    row["accuracy_of_all_answers"] = right / len(answered) if answered else None
    return row
