"""Recipe: train, export (ONNX int8) and check the NLI verifier model on the nli-data recipe's pairs.

    python -m verityrag.train nli-data
    python -m verityrag.train nli --epochs 1 --max-minutes 25 --lr 5e-5

Warm-starts from Verity-Guard (guard_work/guard) when it is there (``--no-warm-start``
for the plain MiniLM base). Writes guard_work/nli/ (model folder + metadata.json) and
scripts/results/crossenc_nli.json. Threshold: chosen on the validation articles so that
at most 10% of entailed hypotheses are flagged. Its real test is RAGTruth-QA and
HaluEval through the runner: ``python -m verityrag.eval --ragtruth --verifier nli:guard_work/nli``.
Run it under ``flock /tmp/verityrag-heavy.lock``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verityrag.checks.guard import DEFAULT_GUARD_DIR
from verityrag.eval.metrics import auroc, negatives_caught
from verityrag.models import OnnxCrossEncoder
from verityrag.train._common import (
    RESULTS_DIR,
    command,
    command_line,
    export_trained,
    label_one_scores,
    model_dir,
    operating_threshold,
    repo_relative,
    require_splits,
    scores_by_kind,
    training_parser,
    write_results,
)
from verityrag.train.cross_encoder import CrossEncoderTrainer
from verityrag.train.model_build import (
    base_model_name,
    read_pairs,
    trainer_from_args,
    training_record,
)
from verityrag.verify.learned_nli import DEFAULT_NLI_DIR

RESULTS = RESULTS_DIR / "crossenc_nli.json"


def evaluate(scores: list[float], rows: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    labels = [r["label"] for r in rows]
    by_kind = scores_by_kind(scores, rows)
    entailed = [s for s, y in zip(scores, labels, strict=True) if y == 1]
    not_entailed = [s for s, y in zip(scores, labels, strict=True) if y == 0]
    return {
        "pairs": len(rows),
        "auroc": auroc(scores, labels),
        "threshold": threshold,
        "not_entailed_caught": negatives_caught(not_entailed, threshold),
        "entailed_flagged": negatives_caught(entailed, threshold),
        "caught_by_kind": {k: negatives_caught(v, threshold) for k, v in sorted(by_kind.items())},
    }


def main(argv: Sequence[str] | None = None) -> int:
    out = model_dir(DEFAULT_NLI_DIR.name)
    p = training_parser("nli", __doc__, out / "data", out, lr=5e-5)
    p.add_argument("--warm-start", type=Path, default=model_dir(DEFAULT_GUARD_DIR.name))
    p.add_argument("--no-warm-start", action="store_true")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    require_splits(p, args.data, ("train", "validation"), "nli-data")
    warm = None if args.no_warm_start or not (args.warm_start / "torch").is_dir() else args.warm_start
    train = read_pairs(args.data / "train.jsonl.gz")[: args.max_pairs]
    trainer: CrossEncoderTrainer = trainer_from_args(args, "first", warm).fit(
        [(r["premise"], r["hypothesis"]) for r in train], [float(r["label"]) for r in train]
    )
    print(f"trained on {trainer.pairs_seen_} of {len(train)} pairs in {trainer.train_seconds_:.1f} s")
    validation = read_pairs(args.data / "validation.jsonl.gz")
    sample = [(r["premise"], r["hypothesis"]) for r in validation[:64]]
    meta, export_s, export_check = export_trained(
        trainer,
        args,
        "nli-verifier",
        "first",
        sample,
        base_model_name(args) + (f", warm-started from {repo_relative(warm)}" if warm else ""),
    )
    scorer = OnnxCrossEncoder(args.out, what="NLI verifier model")
    t0 = time.perf_counter()
    val_scores = scorer.score_pairs([(r["premise"], r["hypothesis"]) for r in validation])
    score_s = time.perf_counter() - t0
    threshold = operating_threshold(label_one_scores(val_scores, validation))
    meta.data = {
        "train": f"{command('nli-data')}: SQuAD 2.0 train prefix (11 articles) + dev split_a (14 articles): copied, "
        "answer-swapped, restated, other-paragraph and false-premise sentences; + HaluEval items 0-7499 "
        "(Verity-Guard's training rows); premise trimmed to the 80 words most relevant to the hypothesis",
        "validation": "dev split_a articles Force, French_and_Indian_War (threshold: <=10% entailed flagged)",
        "test": "RAGTruth-QA and HaluEval through python -m verityrag.eval --ragtruth",
        "train_pairs": len(train),
        "excluded_articles": "data/corpus_manifest.json reserved_articles "
        f"(asserted by {command('nli-data')})",
    }
    meta.threshold = threshold
    meta.metrics = {
        "validation": evaluate(val_scores, validation, threshold),
        "export_check_64_pairs": export_check,
        "validation_mean_score": float(np.mean(val_scores)),
    }
    meta.training = training_record(trainer, args.out, export_s, score_s)
    meta.write(args.out)
    write_results(args.results, args.out, command_line("nli", argv))
    print(json.dumps(meta.metrics, indent=2))
    return 0
