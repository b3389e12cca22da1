"""Recipe: Verity-Guard's (evidence, answer) -> supported pairs, from HaluEval QA.

Every HaluEval QA item has knowledge (evidence), a right answer (usually a short
span) and a hallucinated answer (usually a full sentence). Trained on those alone a
model learns "short = correct", so each item gives both styles with both labels:

- short, supported:      the right answer                                  -> 1
- short, unsupported:    the right answer of another item                  -> 0
- sentence, supported:   the evidence sentence holding the right answer    -> 1
                         (what the extractive generator returns)
- sentence, unsupported: that sentence with the right answer swapped for another
                         item's right answer (one span changed)             -> 0
- sentence, unsupported: the hallucinated answer                            -> 0
- sentence, supported:   "<question without '?'>: <right answer>."          -> 1

Evidence is trimmed to the sentences most relevant to the answer (80 words), as
``LearnedGuard`` trims it at run time. Items are split by position with a fixed
seed: the last 2,000 items are the test set (never trained on), 500 before them
validation (threshold), the rest training, less the training items whose knowledge passage
is also a validation or test item's (HaluEval's near-duplicates:
``verityrag.train.model_build.halueval_shared_passages``). Each file is written whole under a
temporary name and renamed, train.jsonl.gz (the Makefile's target) last.

    python -m verityrag.train guard-data      # writes guard_work/guard/data/*.jsonl.gz
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verityrag.checks.guard import EVIDENCE_WORDS
from verityrag.datasets import halueval_knowledge
from verityrag.models.evidence import trim_evidence
from verityrag.text.sentences import split_sentences
from verityrag.train._common import HALUEVAL, ROOT, add_seed_and_out, read_jsonl_gz, recipe_parser
from verityrag.train.model_build import halueval_shared_passages, write_pairs

OUT = ROOT / "guard_work" / "guard" / "data"
TEST_ITEMS = 2000
VALIDATION_ITEMS = 500

Pair = dict[str, Any]


def item_pairs(item: dict[str, Any], others: list[dict[str, Any]], rng: random.Random) -> list[Pair]:
    knowledge = halueval_knowledge(item["knowledge"])
    right = item["right_answer"].strip()
    other = rng.choice(others)["right_answer"].strip()
    while other.lower() == right.lower():
        other = rng.choice(others)["right_answer"].strip()
    out: list[tuple[str, int, str]] = [
        (right, 1, "short_right"),
        (other, 0, "short_other"),
        (item["hallucinated_answer"].strip(), 0, "sentence_hallucinated"),
        (f"{item['question'].strip().rstrip('?')}: {right}.", 1, "sentence_question_right"),
    ]
    holding = [s for s in split_sentences(knowledge) if right and right in s]
    if holding:
        sentence = holding[0]
        out.append((sentence, 1, "sentence_evidence"))
        out.append((sentence.replace(right, other, 1), 0, "sentence_swapped"))
    return [
        {
            "evidence": trim_evidence(answer, knowledge, EVIDENCE_WORDS),
            "answer": answer,
            "label": y,
            "kind": kind,
        }
        for answer, y, kind in out
        if answer
    ]


def main(argv: Sequence[str] | None = None) -> int:
    p = recipe_parser("guard-data", __doc__)
    p.add_argument("--halueval", type=Path, default=HALUEVAL)
    add_seed_and_out(p, OUT)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    items = read_jsonl_gz(args.halueval)
    train_items = items[: -(TEST_ITEMS + VALIDATION_ITEMS)]
    splits = {
        "train": train_items,
        "validation": items[-(TEST_ITEMS + VALIDATION_ITEMS) : -TEST_ITEMS],
        "test": items[-TEST_ITEMS:],
    }
    shared = halueval_shared_passages(items, len(train_items))
    built: dict[str, list[Pair]] = {}
    for name, part in splits.items():
        # Swaps stay inside a split. The shared items' pairs are drawn and shuffled like the
        # others, then left out, so every other pair (and the random stream) is as before.
        tagged = [
            (i in shared and name == "train", r)
            for i, it in enumerate(part)
            for r in item_pairs(it, part, rng)
        ]
        if name == "train":
            rng.shuffle(tagged)
        built[name] = [r for skip, r in tagged if not skip]
        kinds = Counter(r["kind"] for r in built[name])
        left_out = (
            f", {len(shared)} items left out (their passage is a later item's)" if name == "train" else ""
        )
        print(f"{name}: {len(part)} items{left_out}, {len(built[name])} pairs {dict(kinds)}")
    for name in ("validation", "test", "train"):  # train last: the Makefile's target
        write_pairs(args.out / f"{name}.jsonl.gz", built[name])
    return 0
