"""Sufficiency and answerability thresholds chosen together, on the calibration split only.

    python scripts/joint_threshold_sweep.py --out scripts/results/joint_thresholds.json

The main eval fits the sufficiency gate first (held-out abstention >= the settings' target)
and then the answerability gate on top of it (the highest threshold that keeps calibration
coverage within ``MAX_COVERAGE_LOSS`` of gate-off). With a strong answerability model the
first choice is a poor one: the lexical gate refuses answerable questions that the learned
gate would pass, and the learned gate can stop held-out questions itself. This script
measures every (sufficiency, answerability) pair with one pass per split:

- the agent runs with both thresholds at 0 (reformulation must be off, as calibration
  chooses on the bundled corpus, so every question takes one attempt and the pair's
  outcome is exact: a gate only ever turns an answer into an abstention); no guard;
- calibration questions take the sufficiency gate's *out-of-fold* probability (it was fitted
  on them), test questions the fitted gate's probability from the trace;
- the rule, calibration only (answerable and held-out questions; the in-domain
  unanswerable ones are reported, never fitted, as data/corpus_manifest.json asks): among
  pairs whose held-out abstention meets the target and whose coverage is within
  ``MAX_COVERAGE_LOSS`` of the sufficiency gate alone, the highest answerability threshold,
  then the highest coverage.

It is a measurement, not yet the product's rule (ROADMAP, session 10). Uses the model in
``VERITY_ANSWER_DIR`` (default: the served one). ~2 min.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verityrag.eval.dataset import EvalQuestion, load_corpus, load_questions  # noqa: E402
from verityrag.eval.runner import EvalOptions, build_pipeline  # noqa: E402
from verityrag.learned_checks import (  # noqa: E402
    CHECK_ATTRIBUTES,
    MAX_COVERAGE_LOSS,
    SWEEP_THRESHOLDS,
    GateOutcome,
    gate_outcomes,
    load_check,
    sweep_row,
)
from verityrag.pipeline import VerityRAGPipeline  # noqa: E402

SUFFICIENCY_GRID = [0.0, *(round(x, 2) for x in np.arange(0.05, 1.0, 0.05))]


def outcomes(
    pipeline: VerityRAGPipeline, questions: Sequence[EvalQuestion], oof: dict[str, float] | None
) -> list[GateOutcome]:
    """Each question run once with both gates at 0; ``oof`` replaces the trace's sufficiency
    probability (the gate's out-of-fold probability of a question it was fitted on)."""
    rows = gate_outcomes(pipeline, [(q.question, q.kind, q.answers) for q in questions], "answerability")
    if oof is None:
        return rows
    return [replace(o, sufficiency=oof[q.question]) for o, q in zip(rows, questions, strict=True)]


def choose(
    calibration: Sequence[GateOutcome], reference: float, target: float
) -> tuple[tuple[float, float], float]:
    """The rule's (sufficiency, answerability) pair, and the coverage floor it was held to."""
    floor = (sweep_row(calibration, 0.0, sufficiency=reference)["coverage"] or 0.0) - MAX_COVERAGE_LOSS
    pairs = [(s, a) for s in [*SUFFICIENCY_GRID, reference] for a in SWEEP_THRESHOLDS]
    ok = []
    for s, a in pairs:
        f = sweep_row(calibration, a, sufficiency=s)
        if (f["held_out_abstention"] or 0.0) >= target and (f["coverage"] or 0.0) >= floor:
            ok.append(((s, a), f["coverage"] or 0.0))
    if not ok:
        return (reference, 0.0), floor
    return max(ok, key=lambda pair_coverage: (pair_coverage[0][1], pair_coverage[1]))[0], floor


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    options = EvalOptions(progress=False)
    calibration = load_questions(options.data_dir / "questions" / "calibration.jsonl")
    test = load_questions(options.data_dir / "questions" / "test.jsonl")
    pipeline = build_pipeline(options)
    pipeline.ingest_documents(load_corpus(options.data_dir / "corpus.jsonl"), progress=False)
    pipeline.train_reranker()
    fit_on = [q for q in calibration if q.kind != "unanswerable_in_domain"]
    pipeline.calibrate([(q.question, q.answers) for q in fit_on])
    if pipeline.reformulate:
        raise SystemExit("calibration kept query reformulation: pairs cannot be emulated from one pass")
    gate = pipeline.gate
    reference = float(gate.threshold_)
    oof = {q.question: float(x) for q, x in zip(fit_on, gate.oof_probabilities_, strict=True)}
    check = load_check("answerability")
    check.threshold = 0.0
    setattr(pipeline, CHECK_ATTRIBUTES["answerability"], check)
    gate.threshold_ = 0.0
    cal_rows = outcomes(pipeline, fit_on, oof)
    test_rows = outcomes(pipeline, test, None)
    target = pipeline.settings.abstention_target
    (s, a), floor = choose(cal_rows, reference, target)
    sweep = [
        {
            "sufficiency": sv,
            "answerability": av,
            "calibration": sweep_row(cal_rows, av, sufficiency=sv),
            "test": sweep_row(test_rows, av, sufficiency=sv),
        }
        for sv in sorted({0.0, reference, s})
        for av in SWEEP_THRESHOLDS
    ]
    report = {
        "answerability_model": str(check.model_dir),
        "abstention_target": target,
        "sufficiency_threshold_alone": reference,
        "coverage_floor": floor,
        "sequential_rule_reference": {
            "calibration": sweep_row(cal_rows, 0.0, sufficiency=reference),
            "test": sweep_row(test_rows, 0.0, sufficiency=reference),
        },
        "joint_rule": {
            "sufficiency": s,
            "answerability": a,
            "calibration": sweep_row(cal_rows, a, sufficiency=s),
            "test": sweep_row(test_rows, a, sufficiency=s),
        },
        "sweep": sweep,
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"sufficiency alone at {reference:.3f}: test {report['sequential_rule_reference']['test']}")
    print(f"joint rule: sufficiency {s}, answerability {a}: test {report['joint_rule']['test']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
