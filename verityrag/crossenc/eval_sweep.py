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
from dataclasses import dataclass
from typing import Any

import numpy as np

from verityrag.crossenc.answerability import LearnedAnswerability
from verityrag.eval.dataset import EvalQuestion
from verityrag.eval.metrics import contains_gold
from verityrag.guard import LearnedGuard
from verityrag.pipeline import VerityRAGPipeline
from verityrag.reader_check import ReaderCheck

LearnedGate = LearnedAnswerability | LearnedGuard | ReaderCheck

#: Probabilities; dense near 0 because a model whose scores sit low (the extractive-QA
#: answerability model's null-score difference: 10% of answerable validation pairs under
#: 0.0025) would otherwise lose most of its coverage between the first two steps.
SWEEP_THRESHOLDS = (0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: The most coverage (answerable questions answered) a gate may cost on calibration.
MAX_COVERAGE_LOSS = 0.05


@dataclass(frozen=True, slots=True)
class GateOutcome:
    kind: str
    answered: bool  # with the gate at threshold 0
    correct: bool
    score: float | None  # None: the question never reached the gate
    latency_ms: float


def check_learned_gates(answerability: bool, guard: bool, reader: bool = False) -> None:
    """Fail at startup (before ingesting) when a requested model folder is incomplete."""
    if answerability:
        LearnedAnswerability().scorer.check_files()
    if guard:
        LearnedGuard().scorer.check_files()
    if reader:
        ReaderCheck().reader.check_files()


def _metadata_threshold(model: LearnedGate) -> float:
    return (
        model.reader.metadata.threshold if isinstance(model, ReaderCheck) else model.scorer.metadata.threshold
    )


def _run(
    pipeline: VerityRAGPipeline, questions: Sequence[EvalQuestion], stage: str, progress: bool
) -> list[GateOutcome]:
    import time

    from tqdm.auto import tqdm

    out = []
    for q in tqdm(questions, desc=f"{stage} sweep", unit="q", disable=not progress):
        t0 = time.perf_counter()
        result = pipeline.query(q.question)
        ms = (time.perf_counter() - t0) * 1000
        scores = [float(s.details["score"]) for s in result.trace if s.stage == stage]
        answer = None if result.abstained else result.answer
        correct = bool(answer) and q.answerable and contains_gold(answer or "", q.answers)
        out.append(GateOutcome(q.kind, not result.abstained, correct, scores[-1] if scores else None, ms))
    return out


def _rate(hits: int, total: int) -> float | None:
    return hits / total if total else None


def sweep_row(outcomes: Sequence[GateOutcome], threshold: float) -> dict[str, Any]:
    def answered(o: GateOutcome) -> bool:
        return o.answered and (o.score is None or o.score >= threshold)

    answerable = [o for o in outcomes if o.kind == "answerable"]
    refuse = [o for o in outcomes if o.kind != "answerable"]
    in_domain = [o for o in outcomes if o.kind == "unanswerable_in_domain"]
    return {
        "threshold": threshold,
        "coverage": _rate(sum(answered(o) for o in answerable), len(answerable)),
        "answered_and_correct": _rate(sum(answered(o) and o.correct for o in answerable), len(answerable)),
        "correct_abstention": _rate(sum(not answered(o) for o in refuse), len(refuse)),
        "in_domain_unanswerable_abstention": _rate(sum(not answered(o) for o in in_domain), len(in_domain)),
        "held_out_abstention": _rate(
            sum(not answered(o) for o in outcomes if o.kind == "held_out"),
            sum(o.kind == "held_out" for o in outcomes),
        ),
        # Measured with the gate scoring every question that reached it; abstaining at a higher
        # threshold only skips generation and grounding after it (well under 1 ms here).
        "latency_p50_ms": float(np.percentile([o.latency_ms for o in outcomes], 50)),
    }


def choose_threshold(
    calibration: Sequence[GateOutcome], max_coverage_loss: float = MAX_COVERAGE_LOSS
) -> float:
    """Highest sweep threshold whose calibration coverage is within ``max_coverage_loss`` of gate-off."""
    base = sweep_row(calibration, 0.0)["coverage"] or 0.0
    ok = [
        t
        for t in SWEEP_THRESHOLDS
        if (sweep_row(calibration, t)["coverage"] or 0.0) >= base - max_coverage_loss
    ]
    return max(ok)


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
    gates: list[tuple[str, LearnedGate, float | None]] = []
    if answerability:
        gates.append(("answerability", LearnedAnswerability(), answerability_threshold))
    if guard:
        gates.append(("guard", LearnedGuard(), None))
    if reader:
        gates.append(("reader", ReaderCheck(), None))
    for stage, model, fixed in gates:
        model.warm_up()
        model.threshold = 0.0
        if isinstance(model, LearnedAnswerability):
            pipeline.answerability = model
        elif isinstance(model, ReaderCheck):
            pipeline.answer_reader = model
        else:
            pipeline.answer_guard = model
        cal = _run(pipeline, calibration, stage, progress)
        tst = _run(pipeline, test, stage, progress)
        reached = sum(o.score is not None and o.kind == "answerable" for o in cal)
        if fixed is not None:
            chosen, rule = fixed, "given on the command line"
        elif reached == 0:  # nothing to choose on: keep the model's own threshold
            chosen, rule = (
                _metadata_threshold(model),
                "metadata.json (no calibration question reached the gate)",
            )
        else:
            chosen = choose_threshold(cal)
            rule = (
                f"highest sweep threshold with calibration coverage >= gate-off coverage - {MAX_COVERAGE_LOSS} "
                "(answerable calibration questions only)"
            )
        model.threshold = chosen
        report[stage] = {
            "model_dir": str(model.model_dir),
            "threshold": chosen,
            "threshold_rule": rule,
            "metadata_threshold": _metadata_threshold(model),
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
