"""Train, export (ONNX int8) and check the NLI verifier model on scripts/nli_data.py's pairs.

    python scripts/nli_data.py
    python scripts/nli_train.py --epochs 1 --max-minutes 25 --lr 5e-5

Warm-starts from Verity-Guard (guard_work/guard) when it is there (``--no-warm-start``
for the plain MiniLM base). Writes guard_work/nli/ (model folder + metadata.json) and
scripts/results/crossenc_nli.json. Threshold: chosen on the validation articles so that
at most 10% of entailed hypotheses are flagged. Its real test is RAGTruth-QA and
HaluEval through the runner: ``python -m verityrag.eval --ragtruth --verifier nli:guard_work/nli``.
Run it under ``flock /tmp/verityrag-heavy.lock``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verityrag.checks.guard import DEFAULT_GUARD_DIR  # noqa: E402
from verityrag.checks.nli import DEFAULT_NLI_DIR  # noqa: E402
from verityrag.crossenc import ModelMetadata, OnnxCrossEncoder  # noqa: E402
from verityrag.crossenc.build import (  # noqa: E402
    add_training_arguments,
    base_model_name,
    export_with_check,
    read_pairs,
    require_pair_files,
    trainer_from_args,
    training_record,
)
from verityrag.crossenc.metrics import (  # noqa: E402
    OPERATING_FALSE_FLAG_RATE,
    auroc,
    negatives_caught,
    threshold_for_false_flag_rate,
)

RESULTS = ROOT / "scripts" / "results" / "crossenc_nli.json"


def evaluate(scores: list[float], rows: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    labels = [r["label"] for r in rows]
    by_kind: dict[str, list[float]] = {}
    for s, r in zip(scores, rows, strict=True):
        by_kind.setdefault(r["kind"], []).append(s)
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_training_arguments(p, ROOT / DEFAULT_NLI_DIR / "data", ROOT / DEFAULT_NLI_DIR, lr=5e-5)
    p.add_argument("--warm-start", type=Path, default=ROOT / DEFAULT_GUARD_DIR)
    p.add_argument("--no-warm-start", action="store_true")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    require_pair_files(
        p, [args.data / f"{s}.jsonl.gz" for s in ("train", "validation")], "python scripts/nli_data.py"
    )
    warm = None if args.no_warm_start or not (args.warm_start / "torch").is_dir() else args.warm_start
    train = read_pairs(args.data / "train.jsonl.gz")[: args.max_pairs]
    trainer = trainer_from_args(args, "first", warm).fit(
        [(r["premise"], r["hypothesis"]) for r in train], [float(r["label"]) for r in train]
    )
    print(f"trained on {trainer.pairs_seen_} of {len(train)} pairs in {trainer.train_seconds_:.1f} s")
    validation = read_pairs(args.data / "validation.jsonl.gz")
    meta = ModelMetadata(
        name="nli-verifier",
        base_model=base_model_name(args)
        + (
            f", warm-started from {warm.relative_to(ROOT) if warm.is_relative_to(ROOT) else warm}"
            if warm
            else ""
        ),
        data={},
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        max_length=args.max_length,
        long_side="first",
        threshold=0.5,
    )
    meta.write(args.out)  # provisional, so the scorer can load; rewritten with the figures below
    sample = [(r["premise"], r["hypothesis"]) for r in validation[:64]]
    export_s, export_check = export_with_check(trainer, args.out, sample)
    scorer = OnnxCrossEncoder(args.out, what="NLI verifier model")
    t0 = time.perf_counter()
    val_scores = scorer.score_pairs([(r["premise"], r["hypothesis"]) for r in validation])
    score_s = time.perf_counter() - t0
    threshold = threshold_for_false_flag_rate(
        [s for s, r in zip(val_scores, validation, strict=True) if r["label"]], OPERATING_FALSE_FLAG_RATE
    )
    meta.data = {
        "train": "scripts/nli_data.py: SQuAD 2.0 train prefix (11 articles) + dev split_a (14 articles): copied, "
        "answer-swapped, restated, other-paragraph and false-premise sentences; + HaluEval items 0-7499 "
        "(Verity-Guard's training rows); premise trimmed to the 80 words most relevant to the hypothesis",
        "validation": "dev split_a articles Force, French_and_Indian_War (threshold: <=10% entailed flagged)",
        "test": "RAGTruth-QA and HaluEval through python -m verityrag.eval --ragtruth",
        "train_pairs": len(train),
        "excluded_articles": "data/corpus_manifest.json reserved_articles (asserted by scripts/nli_data.py)",
    }
    meta.threshold = threshold
    meta.metrics = {
        "validation": evaluate(val_scores, validation, threshold),
        "export_check_64_pairs": export_check,
        "validation_mean_score": float(np.mean(val_scores)),
    }
    meta.training = training_record(trainer, args.out, export_s, score_s)
    meta.write(args.out)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    saved = json.loads((args.out / "metadata.json").read_text(encoding="utf-8"))
    args.results.write_text(
        json.dumps({"command": " ".join(sys.argv), **saved}, indent=2) + "\n", encoding="utf-8"
    )
    print(json.dumps(meta.metrics, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
