"""The main eval's support for the learned gates (``--answerability``, ``--guard``, ``--reader``).

The gates are attached before ``pipeline.calibrate``, which fits their thresholds as it
does for any pipeline (:func:`verityrag.thresholds.learned.fit_thresholds`: the answerability
gate jointly with the sufficiency gate when calibration turns reformulation off, the
others by the sequential rule; calibration questions only, the in-domain-unanswerable
ones left out as data/built/corpus_manifest.json asks). This module then reports each gate's
sweep: every calibration and test question is run once with that gate at threshold 0
(the gates before it at their fitted thresholds, the ones after it detached) and the
score is read from the trace. At threshold t a question that reached the gate with
score < t would have abstained there and nothing else changes (the gate only ever turns
an answer into an abstention), so one pass gives the whole sweep exactly. The test split
is then run again, for real, with every gate at its threshold; those are the report's
headline figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from verityrag.checks.answerability import LearnedAnswerability
from verityrag.checks.guard import LearnedGuard
from verityrag.checks.reader_check import ReaderCheck
from verityrag.checks.registry import CHECK_ATTRIBUTES, load_check
from verityrag.config import Settings
from verityrag.pipeline import VerityRAGPipeline
from verityrag.serve.bundled_corpus import EvalQuestion
from verityrag.thresholds.learned import (
    MAX_COVERAGE_LOSS,
    SWEEP_THRESHOLDS,
    AtThreshold,
    GateOutcome,
    ScoredCheck,
    bind,
    choose_threshold,
    gate_outcomes,
    sweep_row,
)

__all__ = [
    "MAX_COVERAGE_LOSS",
    "SWEEP_THRESHOLDS",
    "GateOutcome",
    "attach_learned_gates",
    "check_learned_gates",
    "choose_threshold",
    "render_sweep_markdown",
    "sweep_learned_gates",
    "sweep_row",
]


def check_learned_gates(
    answerability: bool, guard: bool, reader: bool = False, settings: Settings | None = None
) -> None:
    """Fail at startup (before ingesting) when a requested model folder (those ``settings`` name,
    None: the defaults) is incomplete."""
    settings = settings if settings is not None else Settings()
    if answerability:
        LearnedAnswerability.from_settings(settings).scorer.check_files()
    if guard:
        LearnedGuard.from_settings(settings).scorer.check_files()
    if reader:
        ReaderCheck.from_settings(settings).reader.check_files()


def _run(
    pipeline: VerityRAGPipeline,
    attached: dict[str, ScoredCheck],
    questions: Sequence[EvalQuestion],
    stage: str,
    progress: bool,
) -> list[GateOutcome]:
    query = bind(pipeline.query_with, attached, pipeline.sufficiency_threshold)
    return gate_outcomes(query, [(q.question, q.kind, q.answers) for q in questions], stage, progress)


def attach_learned_gates(
    pipeline: VerityRAGPipeline,
    answerability: bool,
    guard: bool,
    reader: bool = False,
    answerability_threshold: float | None = None,
) -> None:
    """Attach each requested gate before ``calibrate``: a fixed threshold is kept, the others are fitted."""
    requested = {"answerability": answerability, "guard": guard, "reader": reader}
    for stage in [s for s in CHECK_ATTRIBUTES if requested.get(s)]:
        fixed = answerability_threshold if stage == "answerability" else None
        pipeline.attach_check(stage, load_check(stage, fixed, settings=pipeline.settings), fixed is not None)


def _rule(fit: dict[str, Any] | None) -> str:
    """The threshold rule in words, from ``calibrate``'s ``learned_checks`` entry (None: not fitted)."""
    if fit is None:
        return "given on the command line"
    if not fit["fitted"]:
        return "metadata.json (no calibration question reached the gate)"
    if fit["rule"] == "joint":
        return (
            f"joint with the sufficiency gate (at {fit['sufficiency_threshold']:.3g}, alone "
            f"{fit['sufficiency_threshold_alone']:.3g}): highest threshold with calibration abstention "
            f">= {fit['abstention_target']} and coverage >= the sufficiency gate alone - {MAX_COVERAGE_LOSS}"
        )
    fallback = (
        " (the joint rule found no pair meeting the abstention target)" if fit["rule"] != "sequential" else ""
    )
    return (
        f"highest sweep threshold with calibration coverage >= gate-off coverage - {MAX_COVERAGE_LOSS} "
        f"(answerable calibration questions only){fallback}"
    )


def sweep_learned_gates(
    pipeline: VerityRAGPipeline,
    calibration: Sequence[EvalQuestion],
    test: Sequence[EvalQuestion],
    fits: dict[str, dict[str, Any]],
    progress: bool = True,
) -> dict[str, Any]:
    """Each attached gate's calibration and test sweep; ``fits`` is ``calibrate``'s ``learned_checks``."""
    report: dict[str, Any] = {}
    checks = pipeline.checks()
    order = list(checks)
    for i, stage in enumerate(order):
        model = checks[stage]
        chosen = model.threshold
        # The gates before it at their thresholds, this one at 0, the ones after it detached.
        attached: dict[str, ScoredCheck] = {s: checks[s] for s in order[:i]}
        attached[stage] = AtThreshold(model, 0.0)
        cal = _run(pipeline, attached, calibration, stage, progress)
        tst = _run(pipeline, attached, test, stage, progress)
        sufficiency = pipeline.sufficiency_threshold
        report[stage] = {
            "model_dir": str(model.model_dir),
            "threshold": chosen,
            "threshold_rule": _rule(fits.get(stage)),
            "sufficiency_threshold": sufficiency,
            **({"fit": fits[stage]} if stage in fits else {}),
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
            "Test split, one pass with the gate at threshold 0 (the sufficiency gate at "
            f"{g['sufficiency_threshold']:.3g}), abstention applied per threshold "
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
