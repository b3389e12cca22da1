"""Recipe: the NLI verifier's (premise, hypothesis) -> entailed pairs, from SQuAD 2.0 and HaluEval.

No NLI corpus can be had offline, so the pairs are made from real paragraphs. The
hypothesis is always one sentence (the verifier scores an answer sentence by sentence);
the premise is the paragraph trimmed to the 80 words most relevant to the hypothesis,
exactly as :class:`verityrag.verify.learned_nli.LearnedNLI` trims it at run time.

Per SQuAD paragraph (up to two answerable questions each):

- ``sentence_copy`` (1): the sentence that holds the answer;
- ``sentence_swapped`` (0): that sentence with the answer replaced by another answer of
  the same article and of the same shape (number / name / phrase): a contradiction;
- ``qa_statement`` (1): "<question without '?'>: <answer>." - a restatement;
- ``qa_swapped`` (0): the same statement with the swapped answer;
- ``other_paragraph`` (0): a sentence of the most similar *other* paragraph of the
  same article whose content words are mostly absent from this one: on topic but
  baseless, the commonest hallucination in RAG answers;
- ``false_premise`` (0): "<unanswerable question>: <plausible answer>." where SQuAD
  gives a plausible answer (the statement's claim is not in the paragraph);
- ``sentence_other`` (1): another sentence of the paragraph, so a copied sentence that
  does not hold an answer is supported too;
- ``sentence_part`` (1): the first clause of a sentence of the paragraph;
- ``sentence_merged`` (1): two sentences of the paragraph joined into one;
- ``sentence_mixed`` (0): a sentence of the paragraph joined with an ``other_paragraph``
  sentence: mostly supported, one baseless half (how RAG answers usually go wrong).

The first model trained without the last three and without surface noise learned a
shortcut: "verbatim copy = entailed, reworded = not" (RAGTruth AUROC 0.615; near-copies
of a passage scored 0.01). So every SQuAD hypothesis, entailed or not, gets the same
random surface noise: an answer-style lead-in ("Based on the passages, ...") and dropped
filler words, so that wording no longer tells the label.

Plus HaluEval rows from Verity-Guard's training file (items 0-7,499; run
``python -m verityrag.train guard-data`` first), so the model keeps the guard's short-answer skills.

Articles: SQuAD 2.0 train prefix + dev ``split_a`` for training, the answerability
gate's two validation articles for the threshold; never an article reserved for the
main eval (asserted), never RAGTruth (its runner is the test).

    python -m verityrag.train nli-data        # writes guard_work/nli/data/*.jsonl.gz
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verityrag.models.evidence import trim_evidence
from verityrag.text.analyzer import DEFAULT_ANALYZER
from verityrag.text.sentences import split_sentences
from verityrag.train._common import ROOT, add_seed_and_out, command, load_squad, recipe_parser
from verityrag.train.model_build import (
    VALIDATION_TITLES,
    add_squad_arguments,
    read_pairs,
    write_pairs,
)
from verityrag.verify.learned_nli import EVIDENCE_WORDS

OUT = ROOT / "guard_work" / "nli" / "data"
GUARD_TRAIN = ROOT / "guard_work" / "guard" / "data" / "train.jsonl.gz"
#: An "other paragraph" sentence counts as baseless only if at most this share of its
#: content terms occur in the premise paragraph.
MAX_OTHER_OVERLAP = 0.5

Pair = dict[str, Any]


def _shape(answer: str) -> str:
    if re.search(r"\d", answer):
        return "number"
    if answer[:1].isupper():
        return "name"
    return "phrase"


def _terms(text: str) -> set[str]:
    return set(DEFAULT_ANALYZER.analyze(text))


LEAD_INS = (
    "Based on the given passages, ",
    "According to the passage, ",
    "The passages state that ",
    "In short, ",
    "Additionally, ",
)
LOWER_STARTS = frozenset(
    {"the", "a", "an", "in", "it", "this", "these", "he", "she", "they", "there", "its", "on"}
)
FILLER_WORDS = frozenset({"the", "a", "an", "also", "very", "that", "then", "which", "its", "their"})


def surface_noise(hypothesis: str, rng: random.Random) -> str:
    """The same rewording for every label: a lead-in (30%), filler words dropped (30%)."""
    words = hypothesis.split()
    if rng.random() < 0.3 and len(words) > 6:
        words = [
            w for i, w in enumerate(words) if i == 0 or w.lower() not in FILLER_WORDS or rng.random() < 0.5
        ]
    text = " ".join(words)
    if rng.random() < 0.3 and text:
        first = text.split(" ", 1)[0]
        # Lower-case only a function word ("The ..."), never a name ("James ...").
        if first.lower() in LOWER_STARTS:
            text = text[0].lower() + text[1:]
        text = rng.choice(LEAD_INS) + text
    return text


def _first_clause(sentence: str) -> str | None:
    """The sentence up to its first comma / semicolon, if that is a clause of 6+ words."""
    m = re.match(r"^(.{20,}?)[,;] ", sentence)
    if not m or len(m.group(1).split()) < 6:
        return None
    return m.group(1).rstrip() + "."


def _join(first: str, second: str) -> str:
    return f"{first.rstrip().rstrip('.')}, and {second[0].lower()}{second[1:]}" if second else first


def _pair(hypothesis: str, paragraph: str, label: int, kind: str, source: str) -> Pair:
    return {
        "premise": trim_evidence(hypothesis, paragraph, EVIDENCE_WORDS),
        "hypothesis": hypothesis,
        "paragraph": paragraph,
        "label": label,
        "kind": kind,
        "source": source,
    }


def _statement(question: str, answer: str) -> str:
    return f"{question.strip().rstrip('?').strip()}: {answer.strip().rstrip('.')}."


def article_pairs(article: dict[str, Any], source: str, rng: random.Random) -> list[Pair]:
    """All pairs of one SQuAD article, surface noise applied to every hypothesis alike."""
    rows = _article_pairs(article, source, rng)
    for r in rows:
        noisy = surface_noise(r["hypothesis"], rng)
        if noisy != r["hypothesis"]:
            r["hypothesis"] = noisy
            r["premise"] = trim_evidence(noisy, r["paragraph"], EVIDENCE_WORDS)
        del r["paragraph"]
    return rows


def _article_pairs(article: dict[str, Any], source: str, rng: random.Random) -> list[Pair]:
    """All pairs of one SQuAD article (swaps and other paragraphs stay inside it)."""
    paragraphs = [p["context"] for p in article["paragraphs"]]
    para_terms = [_terms(p) for p in paragraphs]
    answers_by_shape: dict[str, list[str]] = {}
    for para in article["paragraphs"]:
        for qa in para["qas"]:
            for a in qa.get("answers", [])[:1]:
                answers_by_shape.setdefault(_shape(a["text"]), []).append(a["text"].strip())
    out: list[Pair] = []
    for pi, para in enumerate(article["paragraphs"]):
        context = para["context"]
        sentences = split_sentences(context)
        used: set[str] = set()
        answerable = [qa for qa in para["qas"] if not qa.get("is_impossible") and qa["answers"]]
        rng.shuffle(answerable)
        for qa in answerable[:2]:
            answer = qa["answers"][0]["text"].strip()
            holding = [s for s in sentences if answer in s]
            pool = [a for a in answers_by_shape.get(_shape(answer), []) if a.lower() not in context.lower()]
            other = rng.choice(pool) if pool else None
            out.append(_pair(_statement(qa["question"], answer), context, 1, "qa_statement", source))
            if other:
                out.append(_pair(_statement(qa["question"], other), context, 0, "qa_swapped", source))
            if holding and holding[0] not in used:
                used.add(holding[0])
                out.append(_pair(holding[0], context, 1, "sentence_copy", source))
                if other:
                    swapped = holding[0].replace(answer, other, 1)
                    out.append(_pair(swapped, context, 0, "sentence_swapped", source))
        for qa in para["qas"]:
            plausible = [a["text"] for a in qa.get("plausible_answers", []) if a["text"].strip()]
            if qa.get("is_impossible") and plausible:
                out.append(
                    _pair(_statement(qa["question"], plausible[0]), context, 0, "false_premise", source)
                )
                break
        rest = [s for s in sentences if s not in used and len(s.split()) >= 6]
        if rest:
            out.append(_pair(rng.choice(rest), context, 1, "sentence_other", source))
        short = [s for s in sentences if 5 <= len(s.split()) <= 25]
        clauses = [c for c in map(_first_clause, sentences) if c]
        if clauses:
            out.append(_pair(rng.choice(clauses), context, 1, "sentence_part", source))
        if len(short) >= 2:
            a, b = sorted(rng.sample(range(len(short)), 2))
            out.append(_pair(_join(short[a], short[b]), context, 1, "sentence_merged", source))
        # The most similar other paragraph's sentences that this paragraph does not state.
        ranked = sorted(
            (j for j in range(len(paragraphs)) if j != pi),
            key=lambda j: -len(para_terms[j] & para_terms[pi]),
        )
        added = 0
        for j in ranked[:3]:
            for s in split_sentences(paragraphs[j]):
                terms = _terms(s)
                if len(s.split()) < 8 or not terms:
                    continue
                if len(terms & para_terms[pi]) / len(terms) <= MAX_OTHER_OVERLAP:
                    if added == 0 and short:
                        mixed = (
                            _join(rng.choice(short), s) if rng.random() < 0.5 else _join(s, rng.choice(short))
                        )
                        out.append(_pair(mixed, context, 0, "sentence_mixed", source))
                    else:
                        out.append(_pair(s, context, 0, "other_paragraph", source))
                    added += 1
                    break
            if added == 2:
                break
    return out


def halueval_rows(path: Path, limit: int) -> list[Pair]:
    if not path.exists():
        raise SystemExit(f"{path} is missing: run `{command('guard-data')}` first")
    rows = read_pairs(path)[:limit]
    return [
        {
            "premise": r["evidence"],
            "hypothesis": r["answer"],
            "label": r["label"],
            "kind": f"halueval_{r['kind']}",
            "source": "halueval-items-0-7499",
        }
        for r in rows
    ]


def main(argv: Sequence[str] | None = None) -> int:
    p = recipe_parser("nli-data", __doc__)
    add_squad_arguments(p)
    p.add_argument("--guard-train", type=Path, default=GUARD_TRAIN)
    p.add_argument("--halueval-rows", type=int, default=4000, help="HaluEval rows mixed into training")
    add_seed_and_out(p, OUT)
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    squad = load_squad(args)
    dev, train_prefix, train_titles = squad.dev, squad.train_prefix, squad.split_a_train_titles
    train: list[Pair] = []
    for a in train_prefix:
        train += article_pairs(a, "squad2-train-prefix", rng)
    for t in train_titles:
        train += article_pairs(dev[t], "squad2-dev-split_a", rng)
    train += halueval_rows(args.guard_train, args.halueval_rows)
    rng.shuffle(train)
    validation = [r for t in VALIDATION_TITLES for r in article_pairs(dev[t], "squad2-dev-split_a", rng)]
    for name, rows in (("train", train), ("validation", validation)):
        write_pairs(args.out / f"{name}.jsonl.gz", rows)
        kinds = Counter(r["kind"] for r in rows)
        share = sum(r["label"] for r in rows) / max(1, len(rows))
        print(f"{name}: {len(rows)} pairs, {share:.0%} entailed {dict(kinds)}")
    return 0
