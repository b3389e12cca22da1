"""Recipe: real imperfect LLM answers for Verity-Guard, gemma-3-270m's answers to HaluEval questions.

HaluEval's answers are written by people and ChatGPT; a guard trained on them alone
scored AUROC 0.53 on real small-model answers in the seed project. This recipe has
the offline gemma-3-270m base model answer HaluEval QA questions over their
knowledge passage, through the product's own prompt (``LLMGenerator(style="base")``),
and labels each answer against the gold answer:

- ``gemma_supported`` (1): the normalised gold answer is in the answer, and at least
  75% of the answer's content words come from the evidence or the question;
- ``gemma_unsupported`` (0): no gold-answer word is in the answer, and some content
  words come from neither the evidence nor the question (the answer says something
  the evidence does not);
- dropped, and counted: wrong answers made only of evidence words (support is not
  the guard's question: it never sees the question, so it cannot tell a copied but
  irrelevant sentence from a right one), right answers with unsupported additions,
  partial matches, yes/no gold answers and empty answers.

Items keep the guard-data recipe's split (train 0-7499, validation 7500-7999, test
8000-9999). Generation is resumable: raw answers are appended to
``guard_work/gemma_answers/<split>.jsonl`` as they come, and a rerun skips the items
already there. Temperature cycles 0.0 / 0.7 / 1.0 so answers are not all greedy.

    python -m verityrag.train gemma-answers --split train --items 1400 --max-minutes 32
    python -m verityrag.train gemma-answers --split validation --items 300   # threshold report
    python -m verityrag.train gemma-answers --split test --items 300
    python -m verityrag.train gemma-answers --label-only    # -> guard_work/guard/data/gemma_*.jsonl.gz

The labels (:func:`label_answer`) are also the reader check's (``python -m verityrag.train reader-check``).

Run it under ``flock /tmp/verityrag-heavy.lock`` (~1.5-2 s per answer on 2 cores, in batches of 8).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from verityrag.checks.guard import DEFAULT_GUARD_DIR, EVIDENCE_WORDS
from verityrag.datasets import halueval_knowledge
from verityrag.generation.llm import LLMGenerator, parse_cited_sentences
from verityrag.llm.local_gemma import LocalGemmaCompleteFn, local_gemma_complete_fn
from verityrag.models.evidence import trim_evidence
from verityrag.text import ENGLISH_STOPWORDS
from verityrag.train._common import HALUEVAL, ROOT, model_dir, read_jsonl_gz, recipe_parser
from verityrag.train.model_build import write_pairs
from verityrag.types import Chunk, Hit

RAW = ROOT / "guard_work" / "gemma_answers"
GEMMA_CACHE = ROOT / "guard_work" / "gemma3-270m"
SPLITS = {"train": (0, 7500), "validation": (7500, 8000), "test": (8000, 10000)}
TEMPERATURES = (0.0, 0.7, 1.0)
MIN_GROUNDED = 0.75

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_WORD = re.compile(r"[a-z0-9]+")


def normalise(text: str) -> str:
    """SQuAD-style answer normalisation: lower case, no punctuation, no articles."""
    text = text.lower().translate(str.maketrans("", "", string.punctuation))
    return " ".join(_ARTICLES.sub(" ", text).split())


def content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in ENGLISH_STOPWORDS]


def label_answer(answer: str, gold: str, evidence: str, question: str) -> tuple[int | None, str]:
    """``(label, why)``: 1 / 0 as in the module docstring, ``None`` for a dropped answer."""
    gold_norm, answer_norm = normalise(gold), normalise(answer)
    if not answer_norm:
        return None, "empty"
    if gold_norm in ("yes", "no"):
        return None, "yes_no_gold"
    words = content_words(answer)
    known = set(content_words(evidence)) | set(content_words(question))
    grounded = sum(w in known for w in words) / len(words) if words else 1.0
    if f" {gold_norm} " in f" {answer_norm} ":
        return (1, "right") if grounded >= MIN_GROUNDED else (None, "right_with_additions")
    if set(gold_norm.split()) & set(answer_norm.split()):
        return None, "partial"
    return (0, "wrong_ungrounded") if grounded < 1.0 else (None, "wrong_but_grounded")


def raw_answers(path: Path) -> dict[int, dict[str, Any]]:
    """The answers generated so far (``<raw>/<split>.jsonl``), by item; empty when there are none."""
    if not path.exists():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {r["item"]: r for r in rows}


def _answer_batch(
    gemma: LocalGemmaCompleteFn,
    generator: LLMGenerator,
    batch: list[tuple[int, dict[str, Any]]],
    temperature: float,
) -> list[str]:
    """One answer per item, decoded as one left-padded batch (the provider answers one at a time;
    a batch of 8 is ~2x the throughput on 2 cores). Same prompt and parsing as ``generator.generate``."""
    import torch

    tokenizer, model = gemma._tokenizer, gemma._model
    hits = [
        [Hit(Chunk(f"halueval-{i}", f"halueval-{i}", "", it["knowledge"], 0, 0, 0), 1.0)] for i, it in batch
    ]
    prompts = [generator.build_prompt(it["question"], h)[1] for (_, it), h in zip(batch, hits, strict=True)]
    tokenizer.padding_side = "left"
    inputs = tokenizer(prompts, return_tensors="pt", padding=True)
    sampling: dict[str, Any] = (
        {"do_sample": True, "temperature": temperature, "top_p": 0.95, "top_k": 64}
        if temperature > 0
        else {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
    )
    with torch.inference_mode():
        output = model.generate(
            **inputs, max_new_tokens=generator.max_tokens, pad_token_id=tokenizer.pad_token_id, **sampling
        )
    answers = []
    for ids, h in zip(output[:, inputs["input_ids"].shape[1] :], hits, strict=True):
        text = tokenizer.decode(ids, skip_special_tokens=True)
        text = text.lstrip()
        text = text.split("\n", 1)[0]  # the provider's stop string
        sentences, _, _ = parse_cited_sentences("According to [" + text, h)
        answers.append(sentences[0].text if sentences else "")
    return answers


def generate(args: argparse.Namespace, items: list[dict[str, Any]]) -> None:
    lo, hi = SPLITS[args.split]
    order = list(range(lo, hi))
    random.Random(args.seed).shuffle(order)
    path = args.raw / f"{args.split}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    done = raw_answers(path)
    todo = [i for i in order[: args.items] if i not in done]
    print(f"{args.split}: {len(done)} answers already in {path}, {len(todo)} to generate")
    gemma = local_gemma_complete_fn(args.gemma_cache, threads=args.threads)
    gemma.warm_up()
    generator = LLMGenerator(gemma, style="base", max_tokens=40, max_sentences=1)
    deadline = time.monotonic() + args.max_minutes * 60 if args.max_minutes else None
    by_temperature = [[i for i in todo if TEMPERATURES[i % len(TEMPERATURES)] == t] for t in TEMPERATURES]
    batches = [
        (t, group[k : k + args.batch_size])
        for t, group in zip(TEMPERATURES, by_temperature, strict=True)
        for k in range(0, len(group), args.batch_size)
    ]
    random.Random(args.seed).shuffle(batches)  # a time-limited run still gets every temperature
    with (
        path.open("a", encoding="utf-8") as out,
        tqdm(total=len(todo), desc=f"gemma ({args.split})", unit="answer") as bar,
    ):
        for t, ids in batches:
            if deadline is not None and time.monotonic() > deadline:
                print(f"stopped at the {args.max_minutes}-minute budget")
                break
            answers = _answer_batch(gemma, generator, [(i, items[i]) for i in ids], t)
            for i, text in zip(ids, answers, strict=True):
                out.write(
                    json.dumps({"item": i, "temperature": t, "answer": text}, ensure_ascii=False) + "\n"
                )
            out.flush()  # a killed run keeps every answer written so far
            bar.update(len(ids))


def label(args: argparse.Namespace, items: list[dict[str, Any]]) -> None:
    for split in SPLITS:
        raw = raw_answers(args.raw / f"{split}.jsonl")
        if not raw:
            continue
        rows: list[dict[str, Any]] = []
        why: Counter[str] = Counter()
        for i, r in sorted(raw.items()):
            item = items[i]
            knowledge = halueval_knowledge(item["knowledge"])
            y, reason = label_answer(r["answer"], item["right_answer"], knowledge, item["question"])
            why[reason] += 1
            if y is None:
                continue
            rows.append(
                {
                    "evidence": trim_evidence(r["answer"], knowledge, EVIDENCE_WORDS),
                    "answer": r["answer"],
                    "label": y,
                    "kind": "gemma_supported" if y else "gemma_unsupported",
                    "item": i,
                    "temperature": r["temperature"],
                }
            )
        write_pairs(args.out / f"gemma_{split}.jsonl.gz", rows)
        print(f"{split}: {len(raw)} answers -> {len(rows)} pairs; {dict(why)}")


def main(argv: Sequence[str] | None = None) -> int:
    p = recipe_parser("gemma-answers", __doc__)
    p.add_argument("--split", choices=sorted(SPLITS), default="train")
    p.add_argument(
        "--items", type=int, default=900, help="answer the first N items of the split's shuffled order"
    )
    p.add_argument("--max-minutes", type=float, default=None, help="stop generating after this long")
    p.add_argument("--label-only", action="store_true", help="only label what was generated")
    p.add_argument("--halueval", type=Path, default=HALUEVAL)
    p.add_argument("--raw", type=Path, default=RAW)
    p.add_argument("--out", type=Path, default=model_dir(DEFAULT_GUARD_DIR.name) / "data")
    p.add_argument("--gemma-cache", type=Path, default=GEMMA_CACHE)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seed", type=int, default=13)
    args = p.parse_args(argv)
    items = read_jsonl_gz(args.halueval)
    if not args.label_only:
        generate(args, items)
    label(args, items)
    return 0
