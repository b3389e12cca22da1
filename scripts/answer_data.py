"""Build the answerability gate's training, validation and test pairs from SQuAD 2.0.

Pairs are (question, evidence) -> 1 if the question can be answered from the evidence.

- train: the 11-article SQuAD 2.0 train prefix + dev ``split_a`` (answerability_split.json),
  minus the validation articles. Every question with its own paragraph (SQuAD label),
  plus "retrieved-but-unrelated" negatives: for a share of the questions, the paragraph
  of the same article that shares the most terms with the question (BM25) other than
  its own, and holding none of its gold answers -> 0.
- validation: two split_a articles (threshold and early checks; never trained on).
- test: dev ``split_b``, SQuAD labels, plus unrelated-paragraph negatives reported apart.

No article reserved for the main eval (data/corpus_manifest.json ``reserved_articles``)
is ever used for training or validation; the script asserts it.
Evidence is trimmed to the most question-relevant sentences (verityrag.crossenc.trim_evidence,
80 words), exactly as LearnedAnswerability trims it at run time.

    python scripts/answer_data.py            # writes guard_work/answerability/data/*.jsonl.gz
"""

from __future__ import annotations

import argparse
import math
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from verityrag.crossenc.answerability import EVIDENCE_WORDS  # noqa: E402
from verityrag.crossenc.build import VALIDATION_TITLES, SquadSources, add_squad_arguments, write_pairs  # noqa: E402
from verityrag.crossenc.evidence import trim_evidence  # noqa: E402
from verityrag.text.analyzer import DEFAULT_ANALYZER  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "squad_v2.0"
OUT = ROOT / "guard_work" / "answerability" / "data"

Pair = dict[str, Any]


def bm25_best_other(question: str, paragraphs: list[str], own: int, golds: list[str]) -> int | None:
    """Index of the paragraph (not ``own``, holding no gold answer) that BM25 ranks first."""
    docs = [DEFAULT_ANALYZER.analyze(p) for p in paragraphs]
    n = len(docs)
    df: Counter[str] = Counter(t for d in docs for t in set(d))
    avg = sum(len(d) for d in docs) / max(1, n)
    q = set(DEFAULT_ANALYZER.analyze(question))
    best, best_score = None, 0.0
    for i, d in enumerate(docs):
        if i == own or any(g and g in paragraphs[i] for g in golds):
            continue
        tf = Counter(d)
        s = 0.0
        for t in q:
            if tf[t]:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * tf[t] * 2.2 / (tf[t] + 1.2 * (0.25 + 0.75 * len(d) / avg))
        if s > best_score:
            best, best_score = i, s
    return best


def article_pairs(
    article: dict[str, Any], source: str, unrelated_share: float, rng: random.Random, training: bool = False
) -> list[Pair]:
    """Pairs of one article. ``training`` drops answerable pairs whose trimmed evidence lost the answer."""
    paragraphs = [p["context"] for p in article["paragraphs"]]
    out: list[Pair] = []
    for pi, para in enumerate(article["paragraphs"]):
        for qa in para["qas"]:
            q = qa["question"]
            answerable = not qa.get("is_impossible", False) and bool(qa["answers"])
            kind = "answerable" if answerable else "unanswerable"
            pair = _pair(q, para["context"], int(answerable), kind, article["title"], source)
            if training and answerable and not any(a["text"] in pair["evidence"] for a in qa["answers"]):
                continue  # ~3%: trimming dropped the answer sentence; a wrong label to learn from
            out.append(pair)
            if rng.random() < unrelated_share:
                golds = [a["text"] for a in qa.get("answers", []) + qa.get("plausible_answers", [])]
                other = bm25_best_other(q, paragraphs, pi, golds)
                if other is not None:
                    out.append(_pair(q, paragraphs[other], 0, "unrelated", article["title"], source))
    return out


def _pair(question: str, paragraph: str, label: int, kind: str, title: str, source: str) -> Pair:
    evidence = trim_evidence(question, paragraph, EVIDENCE_WORDS)
    return {
        "question": question,
        "evidence": evidence,
        "label": label,
        "kind": kind,
        "title": title,
        "source": source,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_squad_arguments(p, SHARED)
    p.add_argument(
        "--unrelated-share", type=float, default=0.25, help="share of questions given an unrelated negative"
    )
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    squad = SquadSources.load(args, ROOT / "data" / "corpus_manifest.json")
    split, dev, train_prefix = squad.split, squad.dev, squad.train_prefix
    train: list[Pair] = []
    for a in train_prefix:
        train += article_pairs(a, "squad2-train-prefix", args.unrelated_share, rng, training=True)
    for t in split["split_a_titles"]:
        if t not in VALIDATION_TITLES:
            train += article_pairs(dev[t], "squad2-dev-split_a", args.unrelated_share, rng, training=True)
    validation = [
        r for t in VALIDATION_TITLES for r in article_pairs(dev[t], "squad2-dev-split_a", 0.25, rng)
    ]
    test = [
        r for t in split["split_b_titles"] for r in article_pairs(dev[t], "squad2-dev-split_b", 0.25, rng)
    ]
    rng.shuffle(train)
    for name, rows in (("train", train), ("validation", validation), ("test", test)):
        write_pairs(args.out / f"{name}.jsonl.gz", rows)
        kinds = Counter(r["kind"] for r in rows)
        words = sum(len(r["evidence"].split()) for r in rows) / max(1, len(rows))
        print(f"{name}: {len(rows)} pairs {dict(kinds)}; evidence {words:.0f} words on average")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
