"""Train, export (ONNX int8) and evaluate the answerability gate.

    python scripts/answer_data.py                       # pairs -> guard_work/answerability/data
    python scripts/answer_train.py --throughput 200     # measure pairs/s only, write nothing
    python scripts/answer_train.py --max-pairs 9000     # train + export + evaluate
    python scripts/answer_train.py --span --warm-start guard_work/answerability   # extractive-QA variant

``--span`` trains :class:`verityrag.crossenc.span.SpanAnswerabilityModel` instead of the
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
import datetime as dt
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verityrag.checks.answerability import ANSWER_TRAINING_DIR  # noqa: E402
from verityrag.crossenc import ModelMetadata, OnnxCrossEncoder  # noqa: E402
from verityrag.crossenc.build import (  # noqa: E402
    SquadSources,
    add_squad_arguments,
    add_training_arguments,
    base_model_name,
    distillation_targets,
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
from verityrag.crossenc.span import SpanAnswerabilityTrainer  # noqa: E402

RESULTS = ROOT / "scripts" / "results" / "crossenc_answerability.json"


def gold_answers(args: argparse.Namespace, rows: list[dict[str, Any]]) -> list[list[str]]:
    """The SQuAD gold answer texts of each answerable row (by article title and question), else [].

    Shortest first, ties by text: the span target is the first one found, and a set's own order
    changed with PYTHONHASHSEED (15 training questions have two answers of one length).
    """
    squad = SquadSources.load(args, ROOT / "data" / "built" / "corpus_manifest.json")
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
        if "answers" in r  # extra training pairs carry their own (scripts/reader_data.py)
        else sorted(set(by_question.get((r["title"], r["question"]), [])), key=lambda a: (len(a), a))
        for r in rows
    ]


def evaluate(scores: list[float], rows: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """SQuAD-labelled pairs (answerable vs unanswerable) and the unrelated negatives apart."""
    by_kind: dict[str, list[float]] = {}
    for s, r in zip(scores, rows, strict=True):
        by_kind.setdefault(r["kind"], []).append(s)
    pos, neg = by_kind.get("answerable", []), by_kind.get("unanswerable", [])
    t10 = threshold_for_false_flag_rate(pos, OPERATING_FALSE_FLAG_RATE)
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
    add_training_arguments(p, ROOT / ANSWER_TRAINING_DIR / "data", ROOT / ANSWER_TRAINING_DIR, lr=4e-5)
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
        help="more training pairs (jsonl.gz with an 'answers' field, e.g. scripts/reader_data.py's)",
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
    require_pair_files(p, [args.data / f"{s}.jsonl.gz" for s in splits], "python scripts/answer_data.py")
    if args.extra_train is not None:
        require_pair_files(p, [args.extra_train], "python scripts/reader_data.py")
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
    # Placeholder metadata so the scorer can load the folder; rewritten below with the figures.
    meta = ModelMetadata(
        name="answerability",
        base_model=base_model_name(args)
        + (f", warm-started from {args.warm_start}" if args.warm_start else "")
        + (
            "; extractive-QA head (verityrag.crossenc.span): logit = best answer span score - no-answer score"
            if args.span
            else ""
        )
        + (
            f"; distilled: targets = {1 - args.teacher_weight:g} * label + {args.teacher_weight:g} * "
            f"P(answerable) of {args.teacher}"
            if args.teacher
            else ""
        ),
        data={},
        created=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        max_length=args.max_length,
        long_side="second",
        threshold=0.5,
    )
    meta.write(args.out)
    # fp32 ONNX vs torch vs int8 on 64 test pairs: the export is faithful, int8 close.
    sample = [(r["question"], r["evidence"]) for r in test[:64]]
    export_s, export_check = export_with_check(trainer, args.out, sample)
    scorer = OnnxCrossEncoder(args.out, what="answerability model")
    t0 = time.perf_counter()
    val_scores = scorer.score_pairs([(r["question"], r["evidence"]) for r in validation])
    val_pos = [s for s, r in zip(val_scores, validation, strict=True) if r["kind"] == "answerable"]
    threshold = threshold_for_false_flag_rate(val_pos, OPERATING_FALSE_FLAG_RATE)
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
        "excluded_articles": "data/corpus_manifest.json reserved_articles (asserted by scripts/answer_data.py)",
    }
    meta.threshold = threshold
    meta.metrics = metrics
    meta.training = training_record(trainer, args.out, export_s, score_s)
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
