"""Recipe: adapt the NLI model to RAG answers, fine-tuned on RAGTruth-QA sentences of the *fitting* half.

    python -m verityrag.train nli-ragtruth              # guard_work/nli -> guard_work/nli_ragtruth
    python -m verityrag.train nli-ragtruth --bucket 2   # the other fold -> guard_work/nli_ragtruth_b2

RAGTruth marks hallucination spans inside each response, so every response sentence gets
a label: unsupported when it overlaps a span. Only the benchmark's fitting half is used
(sources whose sha1 is even), in two folds: sources whose sha1 is 0 mod 4 train the
default model, 2 mod 4 the ``--bucket 2`` one. The report half (odd sha1) is never seen.
``metadata.json`` lists the training sources, and the RAGTruth runner
(``python -m verityrag.eval --ragtruth``) fits a model's threshold on the fitting-half
responses it was *not* trained on; with both folds present it also reports them as one
cross-fitted verifier (``folds``): each fitting-half response scored by the fold model
that did not see it, the report half by the mean of both.

This is in-domain training on 1 of the 4 source buckets, not a general NLI model: the
HaluEval row of the runner shows whether it kept its general skills.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verityrag.eval.ragtruth import RAGTRUTH_PATH, TRAINED_SOURCES_KEY, read_ragtruth_rows
from verityrag.models.evidence import trim_evidence
from verityrag.text.sentences import sentence_spans
from verityrag.train._common import ROOT, export_trained, model_dir, repo_relative, training_parser
from verityrag.train.cross_encoder import CrossEncoderTrainer
from verityrag.train.model_build import (
    trainer_from_args,
    training_record,
)
from verityrag.verify.learned_nli import DEFAULT_NLI_DIR, EVIDENCE_WORDS

OUT = ROOT / "guard_work" / "nli_ragtruth"


def source_bucket(source_id: str) -> int:
    """sha1(source_id) mod 4: the runner's fitting half is the even buckets (0 and 2)."""
    return int(hashlib.sha1(source_id.encode()).hexdigest(), 16) % 4


def sentence_pairs(row: dict[str, Any]) -> list[dict[str, Any]]:
    """One (trimmed passages, sentence) pair per response sentence; 0 when it overlaps a span."""
    response, passages = row["d2"], row["d1"].strip()
    spans = [(s["start"], s["end"]) for s in row["labels"]]
    out = []
    for start, end in sentence_spans(response):
        sentence = response[start:end]
        if len(sentence.split()) < 3:
            continue  # list markers and fragments: nothing to learn from
        hallucinated = any(a < end and start < b for a, b in spans)
        out.append(
            {
                "premise": trim_evidence(sentence, passages, EVIDENCE_WORDS),
                "hypothesis": sentence,
                "label": 0 if hallucinated else 1,
                "source_id": str(row["source_id"]),
            }
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = training_parser("nli-ragtruth", __doc__, RAGTRUTH_PATH, OUT, lr=3e-5)
    p.add_argument("--warm-start", type=Path, default=model_dir(DEFAULT_NLI_DIR.name))
    p.add_argument(
        "--bucket",
        type=int,
        choices=(0, 2),
        default=0,
        help="the fitting-half fold to train on: sha1(source_id) %% 4 (default 0; 2 writes nli_ragtruth_b2)",
    )
    args = p.parse_args(argv)
    if args.bucket == 2 and args.out == OUT:
        args.out = OUT.with_name(OUT.name + "_b2")
    if not (args.warm_start / "torch").is_dir():
        raise SystemExit(f"{args.warm_start}/torch is missing: run `make models-nli` first")
    rows = read_ragtruth_rows(args.data)
    train_rows = [r for r in rows if source_bucket(str(r["source_id"])) == args.bucket]
    pairs = [pair for r in train_rows for pair in sentence_pairs(r)][: args.max_pairs]
    trainer: CrossEncoderTrainer = trainer_from_args(args, "first", args.warm_start).fit(
        [(r["premise"], r["hypothesis"]) for r in pairs], [float(r["label"]) for r in pairs]
    )
    print(
        f"trained on {trainer.pairs_seen_} pairs ({len(train_rows)} responses) in {trainer.train_seconds_:.0f} s"
    )
    meta, export_s, export_check = export_trained(
        trainer,
        args,
        "nli-verifier-ragtruth-adapted",
        "first",
        [(r["premise"], r["hypothesis"]) for r in pairs[:64]],
        f"the NLI verifier model ({repo_relative(args.warm_start)}), fine-tuned further",
    )
    meta.data = {
        "train": f"RAGTruth-QA test subset (data/ragtruth), responses of the sources with sha1(source_id) % 4 == {args.bucket} "
        "(a quarter of the sources, half of the runner's fitting half); one pair per response sentence, "
        "unsupported when it overlaps an annotated hallucination span; passages trimmed to 80 words per sentence",
        "train_pairs": len(pairs),
        "train_responses": len(train_rows),
        "unsupported_share": round(1 - sum(r["label"] for r in pairs) / max(1, len(pairs)), 3),
        TRAINED_SOURCES_KEY: sorted({str(r["source_id"]) for r in train_rows}),
        "threshold": "fitted by the RAGTruth runner on the fitting-half sources not trained on",
    }
    meta.metrics = {"export_check_64_pairs": export_check}
    meta.training = training_record(trainer, args.out, export_s, 0.0)
    meta.write(args.out)
    print(json.dumps({k: v for k, v in meta.data.items() if k != TRAINED_SOURCES_KEY}, indent=2))
    return 0
