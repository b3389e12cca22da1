"""Recipe: train, export (ONNX int8) and evaluate the answerability gate.

    python -m verityrag.train answerability-data                  # pairs -> guard_work/answerability/data
    python -m verityrag.train answerability --throughput 200      # measure pairs/s only, write nothing
    python -m verityrag.train answerability --max-pairs 9000      # train + export + evaluate
    python -m verityrag.train answerability --span --warm-start guard_work/answerability   # extractive QA

``--span`` trains :class:`verityrag.train.span_answerability.SpanAnswerabilityModel` instead of the
one-logit classifier: a start/end head that must point at the gold answer (from the SQuAD
files, looked up by article and question) or at [CLS] for "no answer", exported as one
logit (best span score minus the no-answer score), so it is served the same way.

Writes guard_work/answerability/ (model folder, metadata.json) and
scripts/results/crossenc_answerability.json. The threshold in metadata.json is chosen on
the validation articles (two split_a articles, never trained on) so that at most 10% of
answerable questions are flagged; the test figures are on dev split_b (never trained on).
Run it under ``flock /tmp/verityrag-heavy.lock``: it takes minutes of both cores.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verityrag.checks.answerability import ANSWER_TRAINING_DIR
from verityrag.eval.metrics import auroc, negatives_caught
from verityrag.models import OnnxCrossEncoder
from verityrag.train._common import (
    RESULTS_DIR,
    command,
    command_line,
    export_trained,
    load_squad,
    model_dir,
    operating_threshold,
    require_splits,
    scores_by_kind,
    training_parser,
    write_results,
)
from verityrag.train.model_build import (
    add_squad_arguments,
    base_model_name,
    distillation_targets,
    read_pairs,
    require_pair_files,
    trainer_from_args,
    training_record,
)
from verityrag.train.span_answerability import SpanAnswerabilityTrainer

RESULTS = RESULTS_DIR / "crossenc_answerability.json"


def gold_answers(args: argparse.Namespace, rows: list[dict[str, Any]]) -> list[list[str]]:
    """The SQuAD gold answer texts of each answerable row (by article title and question), else [].

    Shortest first, ties by text: the span target is the first one found, and a set's own order
    changed with PYTHONHASHSEED (15 training questions have two answers of one length).
    """
    squad = load_squad(args)
    articles = [*squad.train_prefix, *(squad.dev[t] for t in squad.split_a_train_titles)]
    by_question: dict[tuple[str, str], list[str]] = {}
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                texts = [a["text"] for a in qa.get("answers", [])]
                by_question.setdefault((article["title"], qa["question"]), []).extend(texts)
    return [
        []
        if r["label"] != 1
        else list(r["answers"])
        if "answers" in r  # extra training pairs carry their own (the reader-check-data recipe's)
        else sorted(set(by_question.get((r["title"], r["question"]), [])), key=lambda a: (len(a), a))
        for r in rows
    ]


def evaluate(scores: list[float], rows: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """SQuAD-labelled pairs (answerable vs unanswerable) and the unrelated negatives apart."""
    by_kind = scores_by_kind(scores, rows)
    pos, neg = by_kind.get("answerable", []), by_kind.get("unanswerable", [])
    t10 = operating_threshold(pos)
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


def main(argv: Sequence[str] | None = None) -> int:
    out = model_dir(ANSWER_TRAINING_DIR.name)
    p = training_parser("answerability", __doc__, out / "data", out, lr=4e-5)
    p.add_argument(
        "--throughput", type=int, default=None, metavar="N", help="train on N pairs, print pairs/s, stop"
    )
    p.add_argument(
        "--warm-start", type=Path, default=None, help="continue from this model folder's torch/ weights"
    )
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument(
        "--extra-train",
        type=Path,
        default=None,
        metavar="PAIRS",
        help="more training pairs (jsonl.gz with an 'answers' field, e.g. the reader-check-data recipe's)",
    )
    p.add_argument(
        "--span",
        action="store_true",
        help="train the extractive-QA (span + no-answer) model, not the classifier",
    )
    p.add_argument(
        "--teacher",
        type=Path,
        default=None,
        metavar="DIR",
        help="distil: a stronger answerability model folder whose scores of the training pairs "
        "are mixed into the targets (--teacher-weight)",
    )
    p.add_argument(
        "--teacher-weight",
        type=float,
        default=0.5,
        help="target = (1 - w) * label + w * teacher's P(answerable)",
    )
    add_squad_arguments(p)
    args = p.parse_args(argv)
    if args.teacher is not None and args.span:
        p.error("--teacher trains the classifier; it does not combine with --span")
    if not 0.0 <= args.teacher_weight <= 1.0:
        p.error(f"--teacher-weight must be within [0, 1], got {args.teacher_weight}")
    splits = ("train",) if args.throughput else ("train", "validation", "test")
    require_splits(p, args.data, splits, "answerability-data")
    if args.extra_train is not None:
        require_pair_files(p, [args.extra_train], command("reader-check-data"))
    train = read_pairs(args.data / "train.jsonl.gz")
    if args.extra_train is not None:
        train += read_pairs(args.extra_train)
    if args.throughput:
        train = train[: args.throughput]
    elif args.max_pairs:
        train = train[: args.max_pairs]
    pairs = [(r["question"], r["evidence"]) for r in train]
    labels = [float(r["label"]) for r in train]
    if args.teacher is not None and not args.throughput:
        t0 = time.perf_counter()
        labels = distillation_targets(args.teacher, pairs, labels, args.teacher_weight)
        print(f"teacher scored {len(pairs)} training pairs in {time.perf_counter() - t0:.0f} s")
    if args.span:
        trainer = trainer_from_args(args, "second", args.warm_start, SpanAnswerabilityTrainer)
        trainer.fit_with_answers(pairs, labels, gold_answers(args, train))
        print(
            f"span targets: {trainer.spans_found_} found, {trainer.spans_missing_} answerable pairs without"
        )
    else:
        trainer = trainer_from_args(args, "second", args.warm_start).fit(pairs, labels)
    rate = trainer.pairs_seen_ / trainer.train_seconds_
    print(
        f"trained on {trainer.pairs_seen_} of {len(pairs)} pairs x {args.epochs} epochs in {trainer.train_seconds_:.1f} s ({rate:.1f} pairs/s)"
    )
    if args.throughput:
        return 0
    validation = read_pairs(args.data / "validation.jsonl.gz")
    test = read_pairs(args.data / "test.jsonl.gz")
    # fp32 ONNX vs torch vs int8 on 64 test pairs: the export is faithful, int8 close.
    sample = [(r["question"], r["evidence"]) for r in test[:64]]
    meta, export_s, export_check = export_trained(
        trainer,
        args,
        "answerability",
        "second",
        sample,
        base_model_name(args)
        + (f", warm-started from {args.warm_start}" if args.warm_start else "")
        + (
            "; extractive-QA head (verityrag.train.span_answerability): logit = best answer span score - no-answer score"
            if args.span
            else ""
        )
        + (
            f"; distilled: targets = {1 - args.teacher_weight:g} * label + {args.teacher_weight:g} * "
            f"P(answerable) of {args.teacher}"
            if args.teacher
            else ""
        ),
    )
    scorer = OnnxCrossEncoder(args.out, what="answerability model")
    t0 = time.perf_counter()
    val_scores = scorer.score_pairs([(r["question"], r["evidence"]) for r in validation])
    val_pos = [s for s, r in zip(val_scores, validation, strict=True) if r["kind"] == "answerable"]
    threshold = operating_threshold(val_pos)
    test_scores = scorer.score_pairs([(r["question"], r["evidence"]) for r in test])
    score_s = time.perf_counter() - t0
    metrics = {
        "validation": evaluate(val_scores, validation, threshold),
        "test_split_b": evaluate(test_scores, test, threshold),
        "export_check_64_pairs": export_check,
    }
    meta.data = {
        "train": "SQuAD 2.0 train prefix (11 articles) + dev split_a (14 of 16 articles), "
        "+ BM25-retrieved same-article paragraphs without the answer as negatives, + synthetic unanswerables "
        "(edited answerable questions, kinds synthetic_*) where the data has them; evidence trimmed to 80 words"
        + (f"; + the extra pairs of {args.extra_train}" if args.extra_train else ""),
        "validation": "dev split_a articles Force, French_and_Indian_War (threshold: <=10% answerable flagged)",
        "test": "dev split_b (19 articles, never trained on)",
        "train_pairs": len(pairs),
        "train_pairs_by_kind": dict(sorted(Counter(r["kind"] for r in train).items())),
        "excluded_articles": "data/corpus_manifest.json reserved_articles "
        f"(asserted by {command('answerability-data')})",
    }
    meta.threshold = threshold
    meta.metrics = metrics
    meta.training = training_record(trainer, args.out, export_s, score_s)
    meta.write(args.out)
    write_results(args.results, args.out, command_line("answerability", argv))
    print(json.dumps(metrics, indent=2))
    return 0
