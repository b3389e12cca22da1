"""Every (sufficiency, answerability) threshold pair, on both splits, with the joint rule's pick.

    python scripts/joint_threshold_sweep.py --out scripts/results/joint_thresholds.json

``pipeline.calibrate`` fits the answerability gate jointly with the sufficiency gate
(:func:`verityrag.thresholds.learned.choose_joint_thresholds`; the module docstring of
:mod:`verityrag.thresholds.learned` states the rule). This script shows the whole plane the rule
chooses from, and what the sequential rule (sufficiency gate first, answerability at 0 on
top) would give, with one pass per split:

- the agent runs with both thresholds at 0 (reformulation must be off, as calibration
  chooses on the bundled corpus, so every question takes one attempt and the pair's
  outcome is exact: a gate only ever turns an answer into an abstention); no guard;
- calibration questions take the sufficiency gate's *out-of-fold* probability (it was fitted
  on them), test questions the fitted gate's probability from the trace;
- calibration is the answerable and held-out questions; the in-domain unanswerable ones are
  reported, never fitted, as data/built/corpus_manifest.json asks.

Uses the model in ``VERITYRAG_ANSWER_DIR`` (default: the served one). ~2 min.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from verityrag.checks.registry import load_check
from verityrag.config import Settings
from verityrag.eval.runner import EvalOptions, build_pipeline
from verityrag.serve.bundled_corpus import EvalQuestion, load_corpus, load_questions
from verityrag.thresholds.learned import (
    SWEEP_THRESHOLDS,
    choose_joint_thresholds,
    joint_outcomes,
    sweep_row,
)

ROOT = Path(__file__).resolve().parent.parent


def _triples(questions: Sequence[EvalQuestion]) -> list[tuple[str, str, Sequence[str]]]:
    return [(q.question, q.kind, q.answers) for q in questions]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--real-embeddings", action="store_true", help="the eval's all-MiniLM-L6-v2 embedder")
    args = p.parse_args(argv)
    options = EvalOptions(progress=False, real_embeddings=args.real_embeddings)
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
    check = load_check("answerability", settings=Settings.from_env())
    cal_rows = joint_outcomes(pipeline.query_with, {}, check, _triples(fit_on), gate.oof_probabilities_)
    test_rows = joint_outcomes(pipeline.query_with, {}, check, _triples(test))
    target = pipeline.settings.abstention_target
    choice = choose_joint_thresholds(cal_rows, reference, target)
    s, a = choice.sufficiency, choice.answerability
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
        "embedder": pipeline.embedder.fingerprint(),
        "abstention_target": target,
        "sufficiency_threshold_alone": reference,
        "coverage_floor": choice.coverage_floor,
        "joint_rule_met_target": choice.met,
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
