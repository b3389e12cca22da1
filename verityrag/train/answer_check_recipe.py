"""Recipe: train, export (ONNX int8) and evaluate the answer check (:mod:`verityrag.checks.answer_check`).

    python -m verityrag.train answer-check-data --domains ../shared/domains/train   # the pairs
    python -m verityrag.train answer-check --max-minutes 20                          # the model

A MiniLM cross-encoder over (question and answer, quoted sentence) pairs, short ones (about 60
tokens), so a 128-token window holds them. The threshold in ``metadata.json`` flags at most 10%
of the validation articles' right answers; the agent's own threshold is chosen on the dev
domains (``AgentConfig.answer_check_threshold``). Writes ``guard_work/answer_check/`` and
``scripts/results/crossenc_answer_check.json``. Run it under ``flock /tmp/verityrag-heavy.lock``.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from verityrag.checks.answer_check import ANSWER_CHECK_TRAINING_DIR
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
    require_splits,
    scores_by_kind,
    training_parser,
    write_results,
)
from verityrag.train.cross_encoder import CrossEncoderTrainer
from verityrag.train.model_build import read_pairs, trainer_from_args, training_record

RESULTS = RESULTS_DIR / "crossenc_answer_check.json"


def evaluate(scores: Sequence[float], rows: Sequence[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """AUROC of right against wrong answers, and each kind's share on the wrong side of ``threshold``."""
    labels = [int(r["label"]) for r in rows]
    by_kind = scores_by_kind(list(scores), list(rows))
    return {
        "pairs": {k: len(v) for k, v in sorted(by_kind.items())},
        "auroc": auroc([float(s) for s in scores], labels),
        "at_threshold": {
            "threshold": threshold,
            **{
                # Right answers flagged (positives) or wrong ones caught (negatives), by kind.
                kind: negatives_caught(found, threshold)
                for kind, found in sorted(by_kind.items())
            },
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    out = model_dir(ANSWER_CHECK_TRAINING_DIR.name)
    p = training_parser("answer-check", __doc__, out / "data", out, lr=5e-5)
    p.set_defaults(max_length=128, batch_size=32)
    p.add_argument("--results", default=RESULTS)
    args = p.parse_args(argv)
    require_splits(p, args.data, ("train", "validation", "test"), "answer-check-data")
    train = read_pairs(args.data / "train.jsonl.gz")
    if args.max_pairs:
        train = train[: args.max_pairs]
    pairs = [(r["question"], r["evidence"]) for r in train]
    labels = [float(r["label"]) for r in train]
    trainer: CrossEncoderTrainer = trainer_from_args(args, "second").fit(pairs, labels)
    print(
        f"trained on {trainer.pairs_seen_} of {len(pairs)} pairs in {trainer.train_seconds_:.1f} s "
        f"({trainer.pairs_seen_ / trainer.train_seconds_:.1f} pairs/s)"
    )
    validation = read_pairs(args.data / "validation.jsonl.gz")
    test = read_pairs(args.data / "test.jsonl.gz")
    sample = [(r["question"], r["evidence"]) for r in test[:64]]
    meta, export_s, export_check = export_trained(trainer, args, "answer_check", "second", sample)
    scorer = OnnxCrossEncoder(args.out, what="answer check")
    t0 = time.perf_counter()
    val_scores = scorer.score_pairs([(r["question"], r["evidence"]) for r in validation])
    threshold = operating_threshold(label_one_scores(val_scores, validation))
    test_scores = scorer.score_pairs([(r["question"], r["evidence"]) for r in test])
    score_s = time.perf_counter() - t0
    meta.data = {
        "train": "SQuAD 2.0 train prefix + dev split_a (less the validation articles) + SQuAD v1.0 train "
        "articles: gold answers (1), plausible answers of unanswerables and other questions' answers "
        "in the same paragraph (0); user-domain training questions read with the reader's threshold "
        f"open ({command('answer-check-data')})",
        "validation": "dev split_a articles Force, French_and_Indian_War (threshold: <=10% right answers flagged)",
        "test": "dev split_b (19 articles, never trained on)",
        "train_pairs": len(pairs),
        "train_pairs_by_kind": dict(sorted(Counter(r["kind"] for r in train).items())),
    }
    meta.threshold = threshold
    meta.metrics = {
        "validation": evaluate(val_scores, validation, threshold),
        "test_split_b": evaluate(test_scores, test, threshold),
        "export_check_64_pairs": export_check,
    }
    meta.training = training_record(trainer, args.out, export_s, score_s)
    meta.write(args.out)
    write_results(args.results, args.out, command_line("answer-check", argv))
    print(json.dumps(meta.metrics, indent=2))
    return 0
