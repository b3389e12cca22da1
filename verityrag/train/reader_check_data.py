"""Recipe: extra reading practice for the reader check's extractive reader, HaluEval QA questions with
their answer spans.

The reader (the extractive-QA answerability model, ``python -m verityrag.train answerability --span``) learns to find
answers from ~7k SQuAD 2.0 questions, and its best span holds the gold answer for only 38%
of the main eval's answered questions (the former diary, git show 147e66a:ROADMAP.md, session 6). HaluEval QA's training items
(0-7499, the range Verity-Guard trains on, less the 21 whose knowledge passage is also a later
item's; the reader check is measured on items 7500-9999) add multi-hop Wikipedia questions whose answer is a span of their knowledge passage:

- ``halueval_answerable`` (1): the question and its knowledge trimmed to the question (80
  words, as at run time), kept when the gold answer is in the trimmed text as whole
  normalised tokens (the span head needs it there); yes/no answers are skipped;
- ``halueval_unrelated`` (0): every ``--unrelated-every``-th question paired with the next
  item's knowledge, so the no-answer option keeps seeing negatives;
- ``halueval_answer_removed`` (0, only with ``--removed-every N``): every N-th answerable
  question paired with its own knowledge less every sentence that holds the gold answer:
  related but insufficient evidence, the kind the answerability gate misses most (SQuAD 2.0's
  in-domain unanswerables). Kept when a sentence is left. Off by default, so the reader's pairs
  are unchanged. Measured for the one-logit answerability gate (the former diary, session 14), and no
  help there: a 24-minute MiniLM stage on the SQuAD pairs plus these moved validation AUROC
  0.748 -> 0.728 and split_b 0.680 -> 0.679:

    python -m verityrag.train reader-check-data --removed-every 1 --out guard_work/answer_extra/halueval.jsonl.gz
    python -m verityrag.train answerability --warm-start guard_work/answerability --extra-train guard_work/answer_extra/halueval.jsonl.gz \\
        --lr 5e-5 --epochs 1 --max-minutes 24 --seed 14 --out guard_work/answerability_halueval

    python -m verityrag.train reader-check-data        # -> guard_work/reader_data/halueval_qa.jsonl.gz
    python -m verityrag.train answerability --span --extra-train guard_work/reader_data/halueval_qa.jsonl.gz ...
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence, Set
from pathlib import Path
from typing import Any

from verityrag.checks.reader_check import EVIDENCE_WORDS
from verityrag.datasets import halueval_knowledge
from verityrag.models.evidence import trim_evidence
from verityrag.text.answers import contains_gold, normalize_answer
from verityrag.text.sentences import split_sentences
from verityrag.train._common import HALUEVAL, ROOT, read_jsonl_gz, recipe_parser
from verityrag.train.model_build import halueval_shared_passages, write_pairs

OUT = ROOT / "guard_work" / "reader_data" / "halueval_qa.jsonl.gz"
#: Verity-Guard's training items; 7500-9999 are its (and the reader check's) validation and test.
TRAIN_ITEMS = 7500


def reader_pairs(
    items: list[dict[str, Any]], unrelated_every: int, removed_every: int = 0, skip: Set[int] = frozenset()
) -> list[dict[str, Any]]:
    """Answerable pairs with their answer, and some negatives (see the module docstring).

    ``skip``: items that give no pair, nor their passage to another item's unrelated negative
    (those whose passage is a validation or test item's: ``halueval_shared_passages``).
    """
    rows: list[dict[str, Any]] = []
    answerable = 0
    for i, item in enumerate(items):
        if i in skip:
            continue
        question, answer = item["question"], item["right_answer"]
        knowledge = halueval_knowledge(item["knowledge"])
        evidence = trim_evidence(question, knowledge, EVIDENCE_WORDS)
        if normalize_answer(answer) not in ("yes", "no") and contains_gold(evidence, [answer]):
            rows.append(_row(question, evidence, 1, "halueval_answerable", i, [answer]))
            answerable += 1
            if removed_every and answerable % removed_every == 0:
                rest = answer_removed(knowledge, answer)
                if rest:
                    trimmed = trim_evidence(question, rest, EVIDENCE_WORDS)
                    rows.append(_row(question, trimmed, 0, "halueval_answer_removed", i, []))
        if unrelated_every and i % unrelated_every == 0 and (i + 1) % len(items) not in skip:
            other = halueval_knowledge(items[(i + 1) % len(items)]["knowledge"])
            rows.append(
                _row(question, trim_evidence(question, other, EVIDENCE_WORDS), 0, "halueval_unrelated", i, [])
            )
    return rows


def answer_removed(knowledge: str, answer: str) -> str:
    """``knowledge`` without the sentences that hold ``answer`` (as whole normalised tokens).

    Empty when no sentence holds it (nothing was removed, so the passage may still answer in
    other words) or when nothing else is left.
    """
    sentences = split_sentences(knowledge)
    kept = [s for s in sentences if not contains_gold(s, [answer])]
    if len(kept) == len(sentences) or contains_gold(" ".join(kept), [answer]):
        return ""
    return " ".join(kept)


def _row(
    question: str, evidence: str, label: int, kind: str, item: int, answers: list[str]
) -> dict[str, Any]:
    return {
        "question": question,
        "evidence": evidence,
        "label": label,
        "kind": kind,
        "title": f"halueval-{item}",
        "source": "halueval-qa-train",
        "answers": answers,
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = recipe_parser("reader-check-data", __doc__)
    p.add_argument("--halueval", type=Path, default=HALUEVAL)
    p.add_argument("--items", type=int, default=TRAIN_ITEMS, help=f"first N items (at most {TRAIN_ITEMS})")
    p.add_argument(
        "--unrelated-every", type=int, default=4, help="one unrelated negative per N items (0: none)"
    )
    p.add_argument(
        "--removed-every",
        type=int,
        default=0,
        help="one answer-removed negative per N answerable items (0: none, the reader's default)",
    )
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    if not 0 < args.items <= TRAIN_ITEMS:
        p.error(
            f"--items must be in 1..{TRAIN_ITEMS}: later items are the reader check's validation and test"
        )
    every = read_jsonl_gz(args.halueval)
    items = every[: args.items]
    shared = halueval_shared_passages(every, TRAIN_ITEMS)
    rows = reader_pairs(items, args.unrelated_every, args.removed_every, skip=shared)
    write_pairs(args.out, rows)
    kinds = Counter(r["kind"] for r in rows)
    left_out = len([i for i in shared if i < len(items)])
    print(
        f"{len(items)} items ({left_out} left out: their passage is a validation or test item's) -> "
        f"{len(rows)} pairs {dict(kinds)}; written {args.out}"
    )
    return 0
