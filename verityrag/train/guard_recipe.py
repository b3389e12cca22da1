"""Recipe: train, export (ONNX int8) and evaluate Verity-Guard on HaluEval QA pairs.

    python -m verityrag.train guard-data             # pairs -> guard_work/guard/data
    python -m verityrag.train gemma-answers ...      # optional: gemma_{train,validation,test} there
    python -m verityrag.train guard --max-pairs 8000 --max-minutes 15
    python -m verityrag.train guard --warm-start guard_work/guard --gemma-repeat 3 ...   # continue with them
    python -m verityrag.train guard --refit-threshold   # no training: refit and re-measure guard_work/guard

Writes guard_work/guard/ (model folder + metadata.json) and
scripts/results/crossenc_guard.json. Threshold: chosen on the validation items so that
at most 10% of supported answers are flagged (the same rule on gemma's answers to
validation items is reported beside it). Test: the last 2,000 HaluEval items (never
trained on), and gemma-3-270m's answers to test items where they were generated.
Gemma's answers to training items (``gemma_train.jsonl.gz``) are mixed into training,
each repeated ``--gemma-repeat`` times (they are few next to the HaluEval pairs). AUROC
is reported overall and per answer style, so a model that only learned "short =
correct" shows up (its sentence-only AUROC would be ~0.5).
Run it under ``flock /tmp/verityrag-heavy.lock``.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verityrag.checks.guard import DEFAULT_GUARD_DIR
from verityrag.eval.metrics import auroc, negatives_caught
from verityrag.models import ModelMetadata, OnnxCrossEncoder
from verityrag.train._common import (
    RESULTS_DIR,
    command,
    command_line,
    export_trained,
    label_one_scores,
    model_dir,
    operating_threshold,
    require_splits,
    scores_by_kind,
    training_parser,
    utc_now,
    write_results,
)
from verityrag.train.cross_encoder import CrossEncoderTrainer
from verityrag.train.model_build import (
    read_pairs,
    trainer_from_args,
    training_record,
)

RESULTS = RESULTS_DIR / "crossenc_guard.json"
SUPPORTED_SENTENCES = ("sentence_evidence", "sentence_question_right")
UNSUPPORTED_SENTENCES = ("sentence_swapped", "sentence_hallucinated")


def _auroc_of(
    scores: list[float], rows: list[dict[str, Any]], pos: tuple[str, ...], neg: tuple[str, ...]
) -> float:
    s = [x for x, r in zip(scores, rows, strict=True) if r["kind"] in pos + neg]
    y = [int(r["kind"] in pos) for r in rows if r["kind"] in pos + neg]
    return auroc(s, y)


def evaluate(scores: list[float], rows: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    labels = [r["label"] for r in rows]
    pos = [s for s, y in zip(scores, labels, strict=True) if y == 1]
    neg = [s for s, y in zip(scores, labels, strict=True) if y == 0]
    by_kind = scores_by_kind(scores, rows)
    return {
        "pairs": len(rows),
        "auroc_all": auroc(scores, labels),
        "auroc_halueval_original_right_vs_hallucinated": _auroc_of(
            scores, rows, ("short_right",), ("sentence_hallucinated",)
        ),
        "auroc_sentences_only": _auroc_of(scores, rows, SUPPORTED_SENTENCES, UNSUPPORTED_SENTENCES),
        "auroc_short_only": _auroc_of(scores, rows, ("short_right",), ("short_other",)),
        "auroc_evidence_sentence_vs_swapped": _auroc_of(
            scores, rows, ("sentence_evidence",), ("sentence_swapped",)
        ),
        "at_threshold": {
            "threshold": threshold,
            "unsupported_caught": negatives_caught(neg, threshold),
            "supported_flagged": negatives_caught(pos, threshold),
            "mean_score_by_kind": {k: float(np.mean(v)) for k, v in sorted(by_kind.items())},
        },
    }


def evaluate_gemma(scorer: OnnxCrossEncoder, rows: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """The guard on real small-model answers (gemma-3-270m on HaluEval test items, labelled vs gold)."""
    scores = scorer.score_pairs([(r["evidence"], r["answer"]) for r in rows])
    labels = [r["label"] for r in rows]
    return {
        "pairs": len(rows),
        "supported": sum(labels),
        "auroc": auroc(scores, labels),
        "unsupported_caught": negatives_caught(
            [s for s, y in zip(scores, labels, strict=True) if not y], threshold
        ),
        "supported_flagged": negatives_caught(
            [s for s, y in zip(scores, labels, strict=True) if y], threshold
        ),
    }


def fit_threshold(
    scorer: OnnxCrossEncoder, data: Path
) -> tuple[float, dict[str, float], list[float], list[dict[str, Any]]]:
    """The threshold flagging at most 10% of HaluEval's supported validation answers, and per source.

    Where ``gemma_validation.jsonl.gz`` was generated, the same rule on gemma-3-270m's own
    answers is reported beside it (``by_source["gemma"]``), not used: it is far lower
    (0.035 vs 0.954 in session 4), and which one a deployment wants depends on its answers.
    Returns (threshold, per-source thresholds, HaluEval validation scores, rows).
    """
    validation = read_pairs(data / "validation.jsonl.gz")
    val_scores = scorer.score_pairs([(r["evidence"], r["answer"]) for r in validation])
    by_source = {"halueval": operating_threshold(label_one_scores(val_scores, validation))}
    gemma_path = data / "gemma_validation.jsonl.gz"
    if gemma_path.exists():
        rows = read_pairs(gemma_path)
        scores = scorer.score_pairs([(r["evidence"], r["answer"]) for r in rows])
        by_source["gemma"] = operating_threshold(label_one_scores(scores, rows))
    return by_source["halueval"], by_source, val_scores, validation


def train_and_export(args: argparse.Namespace) -> tuple[ModelMetadata, dict[str, Any]]:
    """Train (optionally warm-started, gemma pairs mixed in) and export; (metadata, export check)."""
    train = read_pairs(args.data / "train.jsonl.gz")[: args.max_pairs]
    gemma_train = read_pairs(args.data / "gemma_train.jsonl.gz") if args.gemma_repeat else []
    if gemma_train:
        train = train + gemma_train * args.gemma_repeat
        random.Random(args.seed).shuffle(train)
    pairs = [(r["evidence"], r["answer"]) for r in train]
    trainer: CrossEncoderTrainer = trainer_from_args(args, "first", warm_start=args.warm_start)
    trainer.fit(pairs, [float(r["label"]) for r in train])
    rate = trainer.pairs_seen_ / trainer.train_seconds_
    print(
        f"trained on {trainer.pairs_seen_} of {len(pairs)} pairs in {trainer.train_seconds_:.1f} s ({rate:.1f}/s)"
    )
    test = read_pairs(args.data / "test.jsonl.gz")[: args.test_pairs]
    meta, export_s, export_check = export_trained(
        trainer,
        args,
        "verity-guard",
        "first",
        [(r["evidence"], r["answer"]) for r in test[:64]],
        data={
            "train": "HaluEval QA items 0-7499, less those whose knowledge passage is a later item's, six "
            f"answer styles per item ({command('guard-data')}); evidence trimmed to the 80 words most "
            "relevant to the answer",
            "test": "HaluEval QA items 8000-9999 (never trained on)",
            "train_pairs": len(pairs),
            "gemma_answers": (
                f"{len(gemma_train)} labelled gemma-3-270m answers to HaluEval training items "
                f"({command('gemma-answers')}), each repeated {args.gemma_repeat} times"
                if gemma_train
                else "not included"
            ),
            "warm_start": str(args.warm_start) if args.warm_start else None,
        },
    )
    meta.training = training_record(trainer, args.out, export_s, 0.0)
    return meta, export_check


def main(argv: Sequence[str] | None = None) -> int:
    out = model_dir(DEFAULT_GUARD_DIR.name)
    p = training_parser("guard", __doc__, out / "data", out, lr=4e-5)
    p.add_argument("--test-pairs", type=int, default=None, help="score only the first N test pairs (faster)")
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--warm-start", type=Path, default=None, help="continue training this saved model folder")
    p.add_argument(
        "--gemma-repeat", type=int, default=0, help="mix gemma_train pairs in, each this many times"
    )
    p.add_argument(
        "--refit-threshold",
        action="store_true",
        help="no training: refit the threshold of the model in --out and re-measure it",
    )
    args = p.parse_args(argv)
    splits = ("validation", "test") if args.refit_threshold else ("train", "validation", "test")
    require_splits(p, args.data, splits, "guard-data")
    if args.refit_threshold and not (args.out / "metadata.json").is_file():
        p.error(f"--refit-threshold: {args.out} holds no trained guard (metadata.json); train it first")
    if args.refit_threshold:
        meta = ModelMetadata.read(args.out)
        export_check = meta.metrics.get("export_check_64_pairs", {})
        meta.data["threshold_refitted"] = utc_now()
    else:
        meta, export_check = train_and_export(args)
    scorer = OnnxCrossEncoder(args.out, what="Verity-Guard")
    t0 = time.perf_counter()
    threshold, by_source, val_scores, validation = fit_threshold(scorer, args.data)
    test = read_pairs(args.data / "test.jsonl.gz")[: args.test_pairs]
    test_scores = scorer.score_pairs([(r["evidence"], r["answer"]) for r in test])
    score_s = time.perf_counter() - t0
    metrics: dict[str, Any] = {
        "threshold_by_validation_source": by_source,
        "validation": evaluate(val_scores, validation, threshold),
        "test_halueval_last_2000_items": evaluate(test_scores, test, threshold),
        "export_check_64_pairs": export_check,
    }
    gemma_test_path = args.data / "gemma_test.jsonl.gz"
    if gemma_test_path.exists():
        metrics["test_gemma_answers"] = evaluate_gemma(scorer, read_pairs(gemma_test_path), threshold)
    meta.data["validation"] = "HaluEval QA items 7500-7999 (threshold: <=10% supported flagged)" + (
        "; the same rule on gemma-3-270m's answers to 300 of them in metrics.threshold_by_validation_source"
        if "gemma" in by_source
        else ""
    )
    meta.threshold = threshold
    meta.metrics = metrics
    meta.training = {**(meta.training or {}), "eval_scoring_seconds_int8": round(score_s, 1)}
    meta.write(args.out)
    write_results(args.results, args.out, command_line("guard", argv))
    print(json.dumps(metrics, indent=2))
    return 0
