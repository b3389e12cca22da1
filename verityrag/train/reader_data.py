"""The reader's training and validation examples: SQuAD questions with a span, or with none.

An example is (question, context, answer text and character offset) or (question, context,
no answer). Sources, all read from the datasets root (:mod:`verityrag.datasets`):

- SQuAD v1.0 train (412 articles, 81,601 questions, none of them a dev article): every
  question with its own paragraph and its answer.
- SQuAD 2.0 dev ``split_a`` minus the validation articles: every question, with SQuAD 2.0's
  real unanswerables (crowd-written against the paragraph); the SQuAD 2.0 train prefix:
  its unanswerables only (its answerable questions are the v1.0 ones).
- Synthetic unanswerables drawn for shares of the v1.0 questions (their own random stream):
  ``synthetic_*`` edits of the question against its own paragraph
  (:mod:`verityrag.train.unanswerable`), ``other_paragraph`` (the same-article paragraph BM25
  ranks first that holds no answer: what retrieval shows when the corpus lacks the fact) and
  ``answer_removed`` (the paragraph without the sentence(s) holding the answer).

Validation: the two ``VALIDATION_TITLES`` articles of ``split_a``, as they are. No article of
SQuAD 2.0 dev ``split_b`` or of the main eval's corpus is read for training (asserted).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from verityrag import datasets
from verityrag.text.sentences import sentence_spans
from verityrag.train.unanswerable import ParagraphRanker, Pool, entity_pool, synthetic_unanswerable

#: split_a articles kept out of training to validate on.
VALIDATION_TITLES = datasets.READER_VALIDATION_TITLES

Example = dict[str, Any]


@dataclass(frozen=True)
class Shares:
    """Share of the v1.0 answerable questions that get each kind of synthetic unanswerable."""

    edit: float = 0.15
    other_paragraph: float = 0.15
    answer_removed: float = 0.07
    #: How many times each real SQuAD 2.0 unanswerable is trained on: the closest data there is to
    #: the questions users ask about facts a document does not hold, and only ~3.4k of them.
    real_unanswerable_repeat: int = 2


def example(
    question: str, context: str, answer: dict[str, Any] | None, kind: str, title: str, source: str
) -> Example:
    """One row; ``answer`` is a SQuAD answer (``text``, ``answer_start``) or None for no answer."""
    return {
        "question": question,
        "context": context,
        "answer_text": answer["text"] if answer else None,
        "answer_start": int(answer["answer_start"]) if answer else None,
        "kind": kind,
        "title": title,
        "source": source,
    }


def without_answer_sentences(context: str, answers: Sequence[dict[str, Any]]) -> str | None:
    """``context`` minus the sentences that overlap an answer; None when too little is left or an
    answer text still occurs in what is left (the paragraph would still answer)."""
    spans = sentence_spans(context)
    kept = [
        (s, e)
        for s, e in spans
        if not any(
            int(a["answer_start"]) < e and int(a["answer_start"]) + len(a["text"]) > s for a in answers
        )
    ]
    if len(kept) < 2 or len(kept) == len(spans):
        return None
    rest = " ".join(context[s:e] for s, e in kept)
    lowered = rest.lower()
    if any(re.search(r"(?<!\w)" + re.escape(a["text"].lower()) + r"(?!\w)", lowered) for a in answers):
        return None
    return rest


def squad_v1_examples(
    articles: Sequence[dict[str, Any]], pool: Pool, shares: Shares, rng: random.Random
) -> Iterator[Example]:
    """Every v1.0 question with its answer, and the synthetic unanswerables drawn for it."""
    for article in tqdm(articles, desc="reader data: SQuAD v1.0 train", unit="article"):
        title = article["title"]
        paragraphs = [p["context"] for p in article["paragraphs"]]
        ranker = ParagraphRanker(paragraphs)
        for pi, para in enumerate(article["paragraphs"]):
            context = para["context"]
            for qa in para["qas"]:
                question, answers = qa["question"], qa["answers"]
                yield example(question, context, answers[0], "answerable", title, "squad1-train")
                if rng.random() < shares.edit:
                    made = synthetic_unanswerable(question, context, answers, pool, rng)
                    if made is not None:
                        yield example(made[0], context, None, made[1], title, "squad1-train")
                if rng.random() < shares.other_paragraph:
                    other = ranker.best_other(question, pi, [a["text"] for a in answers])
                    if other is not None:
                        yield example(
                            question, paragraphs[other], None, "other_paragraph", title, "squad1-train"
                        )
                if rng.random() < shares.answer_removed:
                    rest = without_answer_sentences(context, answers)
                    if rest is not None:
                        yield example(question, rest, None, "answer_removed", title, "squad1-train")


def squad_v2_examples(article: dict[str, Any], source: str, answerable: bool = True) -> Iterator[Example]:
    """An SQuAD 2.0 article's questions as they are (``answerable=False``: its unanswerables only)."""
    for para in article["paragraphs"]:
        for qa in para["qas"]:
            impossible = qa.get("is_impossible", False) or not qa["answers"]
            if impossible:
                yield example(qa["question"], para["context"], None, "unanswerable", article["title"], source)
            elif answerable:
                yield example(
                    qa["question"], para["context"], qa["answers"][0], "answerable", article["title"], source
                )


def eval_titles() -> set[str]:
    """Titles no reader may train on: every SQuAD 1.1 dev article outside ``split_a`` (the main
    eval's corpus and held-out topics, and SQuAD 2.0's ``split_b``)."""
    split = datasets.load_json(datasets.SQUAD_V2_SPLIT)
    dev = datasets.load_json(datasets.SQUAD_V1_DEV)["data"]
    return {a["title"] for a in dev} - set(split["split_a_titles"]) | set(split["split_b_titles"])


def build(
    seed: int = 13, shares: Shares | None = None, max_v1_articles: int | None = None
) -> dict[str, list[Example]]:
    """``{"train": [...], "validation": [...]}``; the train rows shuffled with ``seed``."""
    shares = shares or Shares()
    split = datasets.load_json(datasets.SQUAD_V2_SPLIT)
    v1 = datasets.load_json(datasets.SQUAD_V1_TRAIN)["data"][:max_v1_articles]
    dev = {a["title"]: a for a in datasets.load_json(datasets.SQUAD_V2_DEV)["data"]}
    prefix = datasets.load_json(datasets.SQUAD_V2_TRAIN_PREFIX)["data"]
    split_a_train = [t for t in split["split_a_titles"] if t not in VALIDATION_TITLES]
    used = {a["title"] for a in v1} | {a["title"] for a in prefix} | set(split["split_a_titles"])
    leaked = used & eval_titles()
    if leaked:
        raise AssertionError(f"reader training would read evaluation articles: {sorted(leaked)}")
    texts = [p["context"] for a in v1 for p in a["paragraphs"]]
    texts += [qa["question"] for a in v1 for p in a["paragraphs"] for qa in p["qas"]]
    pool = {key: sorted(found) for key, found in entity_pool(texts).items()}
    rng = random.Random(seed)
    train = list(squad_v1_examples(v1, pool, shares, random.Random(seed + 1)))
    for _ in range(shares.real_unanswerable_repeat):
        for article in prefix:
            train += squad_v2_examples(article, "squad2-train-prefix", answerable=False)
        for title in split_a_train:
            train += (
                r for r in squad_v2_examples(dev[title], "squad2-dev-split_a") if r["answer_text"] is None
            )
    for title in split_a_train:
        train += (
            r for r in squad_v2_examples(dev[title], "squad2-dev-split_a") if r["answer_text"] is not None
        )
    rng.shuffle(train)
    validation = [r for t in VALIDATION_TITLES for r in squad_v2_examples(dev[t], "squad2-dev-split_a")]
    return {"train": train, "validation": validation}


def write_examples(path: Path, rows: Sequence[Example]) -> str:
    """Write ``rows`` as gzipped JSON lines, whole or not at all; returns the sha256 of the lines."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    digest = hashlib.sha256()
    with gzip.open(partial, "wt", encoding="utf-8") as f:
        for row in rows:
            line = json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n"
            digest.update(line.encode("utf-8"))
            f.write(line)
    partial.replace(path)
    return digest.hexdigest()


def read_examples(path: Path) -> list[Example]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def summary(rows: Sequence[Example]) -> dict[str, Any]:
    """Counts by kind and source: what the model's metadata records about its data."""
    return {
        "examples": len(rows),
        "by_kind": dict(sorted(Counter(r["kind"] for r in rows).items())),
        "by_source": dict(sorted(Counter(r["source"] for r in rows).items())),
    }
