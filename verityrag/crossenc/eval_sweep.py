"""The main eval's support for the learned gates (``--answerability``, ``--guard``, ``--reader``).

For a gate, every calibration and test question is run once with the gate's threshold
at 0 (it scores every question that reaches it and blocks none); the score is read
from the trace. At threshold t a question that reached the gate with score < t would
have abstained there and nothing else changes (the gate only ever turns an answer into
an abstention), so one pass gives the whole sweep exactly. The threshold is chosen on
the *calibration* split with answerable questions only: the highest threshold that
keeps the calibration coverage within ``MAX_COVERAGE_LOSS`` of the gate-off coverage
(the in-domain-unanswerable calibration questions are not used, as
data/corpus_manifest.json asks). The test split is then run again, for real, at the
chosen threshold; those are the report's headline figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verityrag.crossenc.answerability import LearnedAnswerability
from verityrag.eval.dataset import EvalQuestion
from verityrag.guard import LearnedGuard
from verityrag.learned_checks import (
    CHECK_ATTRIBUTES,
    MAX_COVERAGE_LOSS,
    SWEEP_THRESHOLDS,
    GateOutcome,
    choose_threshold,
    gate_outcomes,
    load_check,
    sweep_row,
)
from verityrag.pipeline import VerityRAGPipeline
from verityrag.reader_check import ReaderCheck

__all__ = [
    "MAX_COVERAGE_LOSS",
    "SWEEP_THRESHOLDS",
    "GateOutcome",
    "attach_learned_gates",
    "check_learned_gates",
    "choose_threshold",
    "render_sweep_markdown",
    "sweep_row",
]


def check_learned_gates(answerability: bool, guard: bool, reader: bool = False) -> None:
    """Fail at startup (before ingesting) when a requested model folder is incomplete."""
    if answerability:
        LearnedAnswerability().scorer.check_files()
    if guard:
        LearnedGuard().scorer.check_files()
    if reader:
        ReaderCheck().reader.check_files()


def _run(
    pipeline: VerityRAGPipeline, questions: Sequence[EvalQuestion], stage: str, progress: bool
) -> list[GateOutcome]:
    return gate_outcomes(pipeline, [(q.question, q.kind, q.answers) for q in questions], stage, progress)


def attach_learned_gates(
    pipeline: VerityRAGPipeline,
    calibration: Sequence[EvalQuestion],
    test: Sequence[EvalQuestion],
    answerability: bool,
    guard: bool,
    answerability_threshold: float | None = None,
    progress: bool = True,
    reader: bool = False,
) -> dict[str, Any]:
    """Sweep each requested gate, choose its threshold on calibration, attach it to ``pipeline``.

    Gates are swept one after the other, each with the ones before it already attached at
    their chosen thresholds.
    """
    report: dict[str, Any] = {}
    requested = {"answerability": answerability, "guard": guard, "reader": reader}
    for stage in [s for s in CHECK_ATTRIBUTES if requested[s]]:
        model = load_check(stage)
        fixed = answerability_threshold if stage == "answerability" else None
        model.threshold = 0.0
        setattr(pipeline, CHECK_ATTRIBUTES[stage], model)
        cal = _run(pipeline, calibration, stage, progress)
        tst = _run(pipeline, test, stage, progress)
        reached = sum(o.score is not None and o.kind == "answerable" for o in cal)
        if fixed is not None:
            chosen, rule = fixed, "given on the command line"
        elif reached == 0:  # nothing to choose on: keep the model's own threshold
            chosen, rule = (
                model.recorded_threshold(),
                "metadata.json (no calibration question reached the gate)",
            )
        else:
            chosen = choose_threshold(cal)
            rule = (
                f"highest sweep threshold with calibration coverage >= gate-off coverage - {MAX_COVERAGE_LOSS} "
                "(answerable calibration questions only)"
            )
        model.threshold = chosen
        pipeline.check_threshold_sources[stage] = (
            "settings" if fixed is not None else "calibration" if reached else "metadata"
        )
        report[stage] = {
            "model_dir": str(model.model_dir),
            "threshold": chosen,
            "threshold_rule": rule,
            "metadata_threshold": model.recorded_threshold(),
            "calibration_sweep": [sweep_row(cal, t) for t in SWEEP_THRESHOLDS],
            "test_sweep": [sweep_row(tst, t) for t in SWEEP_THRESHOLDS],
            "questions_reaching_gate": {
                "calibration": sum(o.score is not None for o in cal),
                "test": sum(o.score is not None for o in tst),
            },
        }
    return report


def render_sweep_markdown(gates: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for stage, g in gates.items():
        lines += [
            "",
            f"## Learned gate: {stage} (threshold {g['threshold']}; {g['threshold_rule']})",
            "",
            "Test split, one pass with the gate at threshold 0, abstention applied per threshold "
            "(exact: the gate only turns answers into abstentions).",
            "",
            "| threshold | coverage | answered & correct | correct abstention | in-domain unanswerable | held-out | p50 ms |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for r in g["test_sweep"]:
            cells = [
                f"{100 * v:.1f}%" if isinstance(v, float) else "-"
                for v in (
                    r["coverage"],
                    r["answered_and_correct"],
                    r["correct_abstention"],
                    r["in_domain_unanswerable_abstention"],
                    r["held_out_abstention"],
                )
            ]
            mark = " **(chosen)**" if r["threshold"] == g["threshold"] else ""
            lines.append(
                f"| {r['threshold']}{mark} | " + " | ".join(cells) + f" | {r['latency_p50_ms']:.1f} |"
            )
    return lines
