"""Recipe: the reader check's extractive reader (guard_work/reader_check), measured on real LLM answers.

1. Export: the extractive-QA answerability model's torch weights (``--span-model``, trained by
   ``python -m verityrag.train answerability --span``) are exported with per-token start / end logits
   (``verityrag.train.span_answerability.export_reader``), fp32 and int8 ONNX, and checked against torch.
2. Measure: :class:`verityrag.checks.reader_check.ReaderCheck` scores gemma-3-270m's answers to HaluEval
   questions (``python -m verityrag.train gemma-answers``, labelled against the gold answer by
   :func:`verityrag.train.gemma_answers.label_answer`): right answers against wrong ones, and in particular against the
   *wrong-but-grounded* ones (copied evidence that answers something else), which no support
   check can catch. The threshold is fitted on the validation answers (items 7500-7999; rule:
   the highest threshold that flags at most 10% of the right answers) and reported on the
   test answers (items 8000-9999). Verity-Guard at its gemma threshold is measured beside it,
   and both together as the agent runs them (guard, then reader).

    python -m verityrag.train reader-check                                   # guard_work/answer_span -> guard_work/reader_check
    python -m verityrag.train reader-check --span-model /work/answer_span2   # a span model kept elsewhere

Writes guard_work/reader_check/ (metadata.json with the threshold and the figures) and
scripts/results/reader_check.json. Run it under ``flock /tmp/verityrag-heavy.lock`` (latency).
"""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verityrag.checks.guard import LearnedGuard
from verityrag.checks.reader_check import DEFAULT_READER_DIR, EVIDENCE_WORDS, ReaderCheck
from verityrag.config import Settings
from verityrag.datasets import halueval_knowledge
from verityrag.eval.metrics import OPERATING_FALSE_FLAG_RATE, auroc
from verityrag.models.encoding import PairEncoder, load_tokenizer, pad_batch
from verityrag.models.folder import (
    ONNX_FP32_FILE,
    ONNX_INT8_FILE,
    TOKENIZER_FILE,
    TORCH_DIR,
    ModelMetadata,
)
from verityrag.models.scorer import open_session
from verityrag.models.span_reader import READER_OUTPUTS, TOP_K
from verityrag.train._common import (
    HALUEVAL,
    RESULTS_DIR,
    ROOT,
    command,
    model_dir,
    operating_threshold,
    read_jsonl_gz,
    recipe_parser,
    repo_relative,
    utc_now,
)
from verityrag.train.gemma_answers import RAW, label_answer, raw_answers

SPAN_MODEL = ROOT / "guard_work" / "answer_span"
RESULTS = RESULTS_DIR / "reader_check.json"
#: label_answer's reasons kept here: the right answers and the two kinds of wrong ones.
KINDS = ("right", "wrong_but_grounded", "wrong_ungrounded")
LOGIT_CHECK_PAIRS = 32


def export(span_model: Path, out: Path, items: list[dict[str, Any]]) -> dict[str, Any]:
    """Torch weights -> out/torch, out/model.onnx, out/model.int8.onnx; max |logit| gaps against torch."""
    import torch
    from transformers import BertForQuestionAnswering

    from verityrag.train.span_answerability import export_reader

    qa: Any = BertForQuestionAnswering.from_pretrained(str(span_model / TORCH_DIR))
    qa.eval()
    out.mkdir(parents=True, exist_ok=True)
    qa.save_pretrained(str(out / TORCH_DIR))
    shutil.copy(span_model / TOKENIZER_FILE, out / TOKENIZER_FILE)
    t0 = time.perf_counter()
    export_reader(qa, out)
    seconds = time.perf_counter() - t0
    pairs = [
        (it["question"], halueval_knowledge(it["knowledge"])) for it in items[7500 : 7500 + LOGIT_CHECK_PAIRS]
    ]
    encoder = PairEncoder(load_tokenizer(out / TOKENIZER_FILE), max_length=256, long_side="second")
    ids, mask, types = (np.asarray(x, dtype=np.int64) for x in pad_batch(encoder.windows(pairs)))
    with torch.inference_mode():
        got = qa(
            input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), token_type_ids=torch.tensor(types)
        )
    reference = np.stack([got.start_logits.numpy(), got.end_logits.numpy()])
    gaps = {}
    for name in (ONNX_FP32_FILE, ONNX_INT8_FILE):
        onnx = np.stack(
            open_session(out / name, 2).run(
                list(READER_OUTPUTS), {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )
        )
        gaps[f"max_abs_logit_diff_{name}_vs_torch"] = float(np.abs(onnx - reference)[:, mask == 1].max())
    return {
        "export_seconds": round(seconds, 1),
        "pairs_checked": len(pairs),
        **gaps,
        "file_bytes": {f: (out / f).stat().st_size for f in (ONNX_FP32_FILE, ONNX_INT8_FILE)},
    }


def labelled_answers(items: list[dict[str, Any]], raw: Path, split: str) -> list[dict[str, Any]]:
    """gemma's answers to one split's HaluEval ``items``, with ``why`` from ``label_answer``; only KINDS kept."""
    rows = []
    for i, r in sorted(raw_answers(raw / f"{split}.jsonl").items()):
        item = items[i]
        knowledge = halueval_knowledge(item["knowledge"])
        _, why = label_answer(r["answer"], item["right_answer"], knowledge, item["question"])
        if why in KINDS:
            rows.append(
                {
                    "item": i,
                    "question": item["question"],
                    "evidence": knowledge,
                    "answer": r["answer"],
                    "why": why,
                }
            )
    return rows


def figures(
    scores: np.ndarray, guard: np.ndarray, why: np.ndarray, threshold: float, guard_threshold: float
) -> dict[str, Any]:
    right = why == "right"

    def separation(s: np.ndarray) -> dict[str, float]:
        out = {"right_vs_all_wrong": auroc(s.tolist(), right.tolist())}
        for kind in KINDS[1:]:
            keep = right | (why == kind)
            out[f"right_vs_{kind}"] = auroc(s[keep].tolist(), right[keep].tolist())
        return out

    def operating(passes: np.ndarray) -> dict[str, float]:
        return {
            "right_flagged": float((~passes[right]).mean()),
            **{f"{kind}_caught": float((~passes[why == kind]).mean()) for kind in KINDS[1:]},
        }

    reader_passes, guard_passes = scores >= threshold, guard >= guard_threshold
    return {
        "answers": dict(Counter(why.tolist())),
        "auroc": {
            "reader": separation(scores),
            "guard": separation(guard),
            "mean_of_both": separation((scores + guard) / 2),
        },
        "at_threshold": {
            "reader": operating(reader_passes),
            "guard": operating(guard_passes),
            "guard_then_reader": operating(reader_passes & guard_passes),
        },
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = recipe_parser("reader-check", __doc__)
    p.add_argument(
        "--span-model",
        type=Path,
        default=SPAN_MODEL,
        help=f"a folder written by {command('answerability')} --span",
    )
    p.add_argument("--out", type=Path, default=model_dir(DEFAULT_READER_DIR.name))
    p.add_argument("--raw", type=Path, default=RAW, help=f"gemma's raw answers ({command('gemma-answers')})")
    p.add_argument("--results", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    span_meta = ModelMetadata.read(args.span_model)
    items = read_jsonl_gz(HALUEVAL)
    export_record = export(args.span_model, args.out, items)
    print(f"exported {args.out}: {export_record}")
    meta = ModelMetadata(
        name="reader",
        base_model=f"the extractive-QA answerability model in {args.span_model} ({span_meta.base_model})",
        data={
            **span_meta.data,
            "threshold": "gemma-3-270m answers to HaluEval validation items 7500-7999 "
            f"({command('gemma-answers')}): at most {OPERATING_FALSE_FLAG_RATE:.0%} of the right ones flagged",
        },
        created=utc_now(),
        max_length=span_meta.max_length,
        long_side="second",
        threshold=0.5,  # replaced below, once fitted
        stride=span_meta.stride,
        training={"span_model": span_meta.training, "reader_export": export_record},
    )
    meta.write(args.out)

    check = ReaderCheck(args.out).warm_up()
    guard = LearnedGuard.from_settings(Settings.from_env(), answers_from="gemma")
    scored: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    latency: list[float] = []
    for split in ("validation", "test"):
        rows = labelled_answers(items, args.raw, split)
        if not rows:
            raise SystemExit(
                f"no gemma answers for {split} in {args.raw}: run {command('gemma-answers')} first"
            )
        reader_scores = []
        for r in rows:
            t0 = time.perf_counter()
            reader_scores.append(check.score(r["question"], r["evidence"], r["answer"]))
            latency.append((time.perf_counter() - t0) * 1000)
        guard_scores = guard.score_pairs([(r["evidence"], r["answer"]) for r in rows])
        scored[split] = (np.array(reader_scores), np.array(guard_scores), np.array([r["why"] for r in rows]))
    v_scores, _, v_why = scored["validation"]
    # At most OPERATING_FALSE_FLAG_RATE of the right answers flagged, Verity-Guard's rule too.
    # Session 17 replaced Youden's J, which refitted on bootstrap resamples of the ~230
    # validation answers landed <= 0.06 or >= 0.14 (5-95%: 0.029-0.230); this rule's 5-95%
    # range is 0.006-0.068 (the former diary, git show 147e66a:ROADMAP.md, "Session 17").
    threshold = operating_threshold(v_scores[v_why == "right"])
    results: dict[str, Any] = {
        "what": "ReaderCheck (share of the extractive reader's top spans contained in the answer) on "
        "gemma-3-270m answers to HaluEval questions, labelled against the gold answer",
        "reader_dir": str(repo_relative(args.out)),
        "top_k": TOP_K,
        "evidence_words": EVIDENCE_WORDS,
        "threshold": threshold,
        "threshold_rule": f"highest threshold flagging at most {OPERATING_FALSE_FLAG_RATE:.0%} of the right validation answers",
        "guard_threshold": guard.threshold,
        "guard_threshold_rule": "LearnedGuard(answers_from='gemma'): metadata threshold_by_validation_source",
        "latency_ms_per_answer": {
            "p50": float(np.percentile(latency, 50)),
            "p95": float(np.percentile(latency, 95)),
            "answers": len(latency),
            "note": "one ReaderCheck.score call per answer, int8 ONNX, 2 threads, evidence trimmed to 80 words",
        },
        "export": export_record,
        **{split: figures(*scored[split], threshold, guard.threshold) for split in scored},
    }
    meta.threshold = threshold
    meta.metrics = {k: results[k] for k in ("validation", "test", "latency_ms_per_answer")}
    meta.write(args.out)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    test = results["test"]
    print(f"threshold {threshold:.3f} (validation); test AUROC {json.dumps(test['auroc'], indent=1)}")
    print(f"test at threshold: {json.dumps(test['at_threshold'], indent=1)}")
    print(f"latency {results['latency_ms_per_answer']}")
    return 0
