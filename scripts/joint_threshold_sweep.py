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
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verityrag.eval.dataset import EvalQuestion, load_corpus, load_questions  # noqa: E402
from verityrag.eval.runner import EvalOptions, build_pipeline  # noqa: E402
from verityrag.learned_checks import (  # noqa: E402
    CHECK_ATTRIBUTES,
    MAX_COVERAGE_LOSS,
    SWEEP_THRESHOLDS,
    load_check,
)
from verityrag.pipeline import VerityRAGPipeline  # noqa: E402
from verityrag.text.answers import contains_gold  # noqa: E402

SUFFICIENCY_GRID = [0.0, *(round(x, 2) for x in np.arange(0.05, 1.0, 0.05))]


def outcomes(
    pipeline: VerityRAGPipeline, questions: Sequence[EvalQuestion], oof: dict[str, float] | None
) -> list[dict[str, Any]]:
    """Each question run once with both gates at 0: its kind, both scores, and what happened."""
    rows = []
    for q in questions:
        result = pipeline.query(q.question)
        attempts = [s for s in result.trace if s.stage.startswith("attempt_")]
        scored = [s for s in result.trace if s.stage == "answerability"]
        trace_probability = float(attempts[-1].details["probability"]) if attempts else 0.0
        probability = oof.get(q.question) if oof is not None else trace_probability
        answer = None if result.abstained else result.answer
        rows.append(
            {
                "kind": q.kind,
                "sufficiency": probability,
                "answerability": float(scored[-1].details["score"]) if scored else None,
                "answered": answer is not None,
                "correct": answer is not None and q.kind == "answerable" and contains_gold(answer, q.answers),
            }
        )
    return rows


def figures(rows: Sequence[dict[str, Any]], s: float, a: float) -> dict[str, float | None]:
    def answered(r: dict[str, Any]) -> bool:
        if not r["answered"] or r["sufficiency"] is None or r["sufficiency"] < s:
            return False
        return r["answerability"] is None or r["answerability"] >= a

    def rate(kind: str, abstain: bool) -> float | None:
        rs = [r for r in rows if r["kind"] == kind]
        return float(np.mean([answered(r) != abstain for r in rs])) if rs else None

    answerable = [r for r in rows if r["kind"] == "answerable"]
    return {
        "coverage": rate("answerable", False),
        "answered_and_correct": float(np.mean([answered(r) and r["correct"] for r in answerable])),
        "held_out_abstention": rate("held_out", True),
        "in_domain_unanswerable_abstention": rate("unanswerable_in_domain", True),
    }


def choose(
    calibration: Sequence[dict[str, Any]], reference: float, target: float
) -> tuple[tuple[float, float], float]:
    """The rule's (sufficiency, answerability) pair, and the coverage floor it was held to."""
    floor = (figures(calibration, reference, 0.0)["coverage"] or 0.0) - MAX_COVERAGE_LOSS
    pairs = [(s, a) for s in [*SUFFICIENCY_GRID, reference] for a in SWEEP_THRESHOLDS]
    ok = []
    for s, a in pairs:
        f = figures(calibration, s, a)
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
    cal_rows = outcomes(pipeline, [q for q in calibration if q.kind != "unanswerable_in_domain"], oof)
    test_rows = outcomes(pipeline, test, None)
    target = pipeline.settings.abstention_target
    (s, a), floor = choose(cal_rows, reference, target)
    sweep = [
        {
            "sufficiency": sv,
            "answerability": av,
            "calibration": figures(cal_rows, sv, av),
            "test": figures(test_rows, sv, av),
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
            "calibration": figures(cal_rows, reference, 0.0),
            "test": figures(test_rows, reference, 0.0),
        },
        "joint_rule": {
            "sufficiency": s,
            "answerability": a,
            "calibration": figures(cal_rows, s, a),
            "test": figures(test_rows, s, a),
        },
        "sweep": sweep,
    }
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"sufficiency alone at {reference:.3f}: test {report['sequential_rule_reference']['test']}")
    print(f"joint rule: sufficiency {s}, answerability {a}: test {report['joint_rule']['test']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
