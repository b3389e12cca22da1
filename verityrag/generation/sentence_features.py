"""The sentence selector's features: one row of :data:`FEATURE_NAMES` per candidate sentence.

:func:`extract_features` turns the sentences of the top hits into a matrix [n, N_FEATURES]
of lexical, positional, retrieval and answer-type features; the layout is fixed by the
model shipped in ``verityrag/resources`` (``sentence_selector.json`` lists the names).

The features do not depend on the size of the corpus: no raw document frequency
or collection size enters, IDF-weighted quantities are ratios over the question's
own terms with weights built from IDF *differences* (:func:`relative_idf_weights`,
unchanged when unrelated documents are added), and BM25 is divided by its
maximum for the question. Two features come from the retriever as they are:
``bm25_norm`` moves a little with the collection's IDFs and average length, and
``dense_score`` is the cosine even for a hit only the lexical side found (the retriever
fills it in; 0 only for a zero query vector).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.text.sentences import sentence_spans
from verityrag.types import Citation, CitedSentence, Hit

# BM25's per-term maximum is idf * (k1 + 1) with the index's k1 = 1.5.
_BM25_TF_CEILING = 2.5
_K1, _B = 1.5, 0.75
_AVG_SENTENCE_TERMS = 12.0
_EPS = 1e-6

WH_CATEGORIES: tuple[str, ...] = (
    "who",
    "when",
    "where",
    "how_many",
    "what_year",
    "which",
    "what",
    "why",
    "how",
    "other",
)

FEATURE_NAMES: tuple[str, ...] = (
    # coverage of the question's terms (IDF-weighted = share of the question's IDF mass)
    "cov_idf",
    "cov_plain",
    "bigram_overlap",
    "cov_idf_prev",
    "cov_idf_next",
    "cov_idf_window",  # previous + this + next sentence
    "cov_idf_chunk",
    "cov_idf_title",
    "cov_idf_sent_title",  # this sentence + the title
    "top_term_matched",  # the question's highest-IDF term is in the sentence
    "top3_matched_frac",
    "cov_idf_exact",  # unstemmed words ("relativity" does not match "relating")
    "sent_bm25_norm",  # BM25 of the sentence with the question's weights / its maximum
    "trigram_overlap",  # question word trigrams (stopwords kept) found in the sentence
    "entity_cov",  # question's capitalised words found in the sentence
    "entity_cov_title",  # ... in the sentence or the title
    "question_entities",
    "number_match",  # question's numbers found in the sentence
    # proximity of the matched terms
    "longest_run_frac",  # longest run of consecutive question terms / question terms
    "match_density",  # distinct matched terms / shortest window holding them all
    "first_match_pos",
    # lengths and position
    "sent_terms",
    "sent_tokens",
    "question_terms",
    "sent_index",
    "sent_index_frac",
    "chunk_sentences",
    # the hit
    "hit_rank",
    "bm25_norm",
    "dense_score",
    "rerank_score",
    # answer-type cues
    *(f"wh_{c}" for c in WH_CATEGORIES),
    "has_number",
    "has_year",
    "has_month",
    "new_capitalised",
    "has_percent",
    "has_money",
    "type_match",
    # what the sentence adds
    "new_terms",
    "new_terms_frac",
    # listwise: this sentence against the other candidates of the question
    "cov_idf_minus_best_other",
    "cov_plain_minus_best_other",
    "cov_window_minus_best_other",
    "cov_sent_title_minus_best_other",
    "sent_bm25_minus_best_other",
    "cov_exact_minus_best_other",
    "cov_chunk_minus_best_other_hit",
    "n_candidates",
)
N_FEATURES = len(FEATURE_NAMES)
#: Column of each feature in the matrix.
FEATURE_INDEX = {name: i for i, name in enumerate(FEATURE_NAMES)}
# (feature, its "minus the best other candidate" twin), filled once all candidates are known.
_LISTWISE_PAIRS = (
    ("cov_idf", "cov_idf_minus_best_other"),
    ("cov_plain", "cov_plain_minus_best_other"),
    ("cov_idf_window", "cov_window_minus_best_other"),
    ("cov_idf_sent_title", "cov_sent_title_minus_best_other"),
    ("sent_bm25_norm", "sent_bm25_minus_best_other"),
    ("cov_idf_exact", "cov_exact_minus_best_other"),
)
_LISTWISE_PLACEHOLDER = (0.0,) * (N_FEATURES - FEATURE_INDEX["cov_idf_minus_best_other"])

_YEAR_RE = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})s?\b")
_DIGIT_RE = re.compile(r"\d")
_NUMBER_WORDS = frozenset(
    """one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
    sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety
    hundred hundreds thousand thousands million millions billion billions trillion dozen""".split()
)
_MONTHS = frozenset(
    "january february march april may june july august september october november december".split()
)
_MONEY_SYMBOLS = ("$", "£", "€", "¥")
_MONEY_WORDS = frozenset("dollar dollars pound pounds euro euros yen usd".split())
_CAPITALISED_RE = re.compile(r"\b[A-Z][\w'-]*")
_WORD_RE = re.compile(r"[a-z]+")


def question_category(question: str) -> str:
    """The question's wh-category, one of :data:`WH_CATEGORIES` (first cue wins, most specific first)."""
    words = _WORD_RE.findall(question.lower())
    text = " ".join(words)
    padded = f" {text} "
    if re.search(r" (what|which) (year|decade|century) ", padded):
        return "what_year"
    if " how many " in padded or " how much " in padded:
        return "how_many"
    for word in words:
        if word in ("who", "whom", "whose"):
            return "who"
        if word in ("when", "where", "why", "which"):
            return str(word)
        if word == "what":
            return "what"
        if word == "how":
            return "how"
    return "other"


class SentenceFeatures(NamedTuple):
    """The candidates of one question: sentences, their hit ranks, and the feature matrix [n, N_FEATURES]."""

    sentences: list[CitedSentence]
    hit_ranks: list[int]
    matrix: npt.NDArray[np.float32]


def relative_idf_weights(idfs: Mapping[str, float]) -> dict[str, float]:
    """Term weights that do not move when unrelated documents join the index.

    BM25's IDF is about ``log N - log df``: adding documents that lack the
    question's terms raises every term's IDF by the same amount, which changes
    plain IDF ratios. Differences of IDF do not change, so a term weighs
    ``1 + (its IDF - the smallest IDF among the question's terms)``: the question's
    commonest term weighs 1, a term ten times rarer about 3.3. Terms the index has
    never seen (IDF 0) match no candidate and weigh (almost) nothing.
    """
    seen = [v for v in idfs.values() if v > 0]
    floor = min(seen) if seen else 0.0
    return {t: (v - floor + 1.0 if v > 0 else 0.0) + _EPS for t, v in idfs.items()}


class _Question:
    """What every candidate needs from the question, computed once."""

    __slots__ = (
        "bigrams",
        "category",
        "entities",
        "exact_total",
        "exact_weights",
        "idf_mass",
        "numbers",
        "raw_tokens",
        "terms",
        "top3",
        "top_term",
        "total",
        "trigrams",
        "weights",
    )

    def __init__(self, question: str, analyzer: Analyzer, idf: Callable[[str], float]) -> None:
        term_list = analyzer.analyze(question)
        self.terms = frozenset(term_list)
        idfs = {t: idf(t) for t in self.terms}
        self.weights = relative_idf_weights(idfs)
        self.total = sum(self.weights.values())
        # BM25's maximum for this question: every occurrence of a term counts once more.
        self.idf_mass = sum(max(idfs[t], 0.0) for t in term_list) * _BM25_TF_CEILING
        self.bigrams = frozenset(itertools.pairwise(term_list))
        ranked = sorted(self.terms, key=lambda t: (-self.weights[t], t))
        self.top_term = ranked[0] if ranked else None
        self.top3 = frozenset(ranked[:3])
        raw = analyzer.tokenize(question)
        self.raw_tokens = frozenset(raw)
        self.trigrams = frozenset(zip(raw, raw[1:], raw[2:], strict=False))
        # Unstemmed content words, each weighted as its stem.
        self.exact_weights: dict[str, float] = {}
        for token in self.raw_tokens - analyzer.stopwords:
            stems = analyzer.analyze(token)
            if stems and stems[0] in self.weights:
                self.exact_weights[token] = self.weights[stems[0]]
        self.exact_total = sum(self.exact_weights.values())
        # Capitalised words after the first (names the answer sentence should mention).
        entities: set[str] = set()
        for match in _CAPITALISED_RE.finditer(question, 1):
            entities.update(t for t in analyzer.tokenize(match.group(0)) if t not in analyzer.stopwords)
        self.entities = frozenset(entities)
        self.numbers = frozenset(t for t in raw if _DIGIT_RE.search(t))
        self.category = question_category(question)

    def coverage(self, terms: frozenset[str] | set[str]) -> float:
        if not self.total:
            return 0.0
        return sum(w for t, w in self.weights.items() if t in terms) / self.total

    def exact_coverage(self, tokens: frozenset[str] | set[str]) -> float:
        if not self.exact_total:
            return 0.0
        return sum(w for t, w in self.exact_weights.items() if t in tokens) / self.exact_total

    def plain(self, terms: frozenset[str] | set[str]) -> float:
        return len(self.terms & terms) / len(self.terms) if self.terms else 0.0

    def bm25(self, term_list: Sequence[str]) -> float:
        """Sentence BM25 with the question's weights, over its maximum (a fixed average length keeps it corpus-free)."""
        if not self.total:
            return 0.0
        tf: dict[str, int] = {}
        for t in term_list:
            if t in self.weights:
                tf[t] = tf.get(t, 0) + 1
        norm = _K1 * (1.0 - _B + _B * len(term_list) / _AVG_SENTENCE_TERMS)
        score = sum(self.weights[t] * n * (_K1 + 1.0) / (n + norm) for t, n in tf.items())
        return score / (self.total * (_K1 + 1.0))


def _longest_run(term_list: Sequence[str], q_terms: frozenset[str]) -> int:
    best = run = 0
    for term in term_list:
        run = run + 1 if term in q_terms else 0
        best = max(best, run)
    return best


def _match_density(term_list: Sequence[str], q_terms: frozenset[str]) -> tuple[float, float]:
    """(distinct matched / shortest window holding every distinct matched term, first match position)."""
    positions = [(i, t) for i, t in enumerate(term_list) if t in q_terms]
    if not positions:
        return 0.0, 1.0
    need = len({t for _, t in positions})
    counts: dict[str, int] = {}
    have = 0
    best = len(term_list)
    left = 0
    for right in range(len(positions)):
        term = positions[right][1]
        counts[term] = counts.get(term, 0) + 1
        if counts[term] == 1:
            have += 1
        while have == need:
            width = positions[right][0] - positions[left][0] + 1
            best = min(best, width)
            lterm = positions[left][1]
            counts[lterm] -= 1
            if counts[lterm] == 0:
                have -= 1
            left += 1
    return need / best, positions[0][0] / max(len(term_list), 1)


def _cues(text: str, raw_tokens: Sequence[str], q_raw: frozenset[str]) -> tuple[float, ...]:
    words = set(raw_tokens)
    has_digit = bool(_DIGIT_RE.search(text))
    has_number = float(has_digit or not words.isdisjoint(_NUMBER_WORDS))
    has_year = float(has_digit and bool(_YEAR_RE.search(text)))
    has_month = float(not words.isdisjoint(_MONTHS))
    new_caps = 0
    # The first word is capitalised because it starts the sentence; skip it.
    for match in _CAPITALISED_RE.finditer(text, 1):
        if match.group(0).lower() not in q_raw:
            new_caps += 1
    has_percent = float("%" in text or "percent" in words or ("per" in words and "cent" in words))
    has_money = float(any(sym in text for sym in _MONEY_SYMBOLS) or not words.isdisjoint(_MONEY_WORDS))
    return has_number, has_year, has_month, float(min(new_caps, 10)), has_percent, has_money


def _type_match(category: str, cues: tuple[float, ...]) -> float:
    has_number, has_year, has_month, new_caps, has_percent, has_money = cues
    if category == "what_year":
        return has_year
    if category == "when":
        return float(bool(has_year or has_month or has_number))
    if category == "how_many":
        return float(bool(has_number or has_percent or has_money))
    if category in ("who", "where"):
        return float(new_caps > 0)
    return 0.0


def extract_features(
    question: str,
    hits: Sequence[Hit],
    idf: Callable[[str], float],
    analyzer: Analyzer = DEFAULT_ANALYZER,
    max_hits: int = 3,
) -> SentenceFeatures:
    """Every sentence of the top ``max_hits`` hits, in hit then sentence order, with its features."""
    q = _Question(question, analyzer, idf)
    wh = [float(q.category == c) for c in WH_CATEGORIES]
    sentences: list[CitedSentence] = []
    hit_ranks: list[int] = []
    rows: list[list[float]] = []
    for rank, hit in enumerate(hits[:max_hits]):
        chunk = hit.chunk
        spans = sentence_spans(chunk.text)
        texts = [chunk.text[s:e] for s, e in spans]
        term_lists = [analyzer.analyze(t) for t in texts]
        term_sets = [frozenset(tl) for tl in term_lists]
        covs = [q.coverage(ts) for ts in term_sets]
        title_terms = frozenset(analyzer.analyze(chunk.title))
        title_raw = frozenset(analyzer.tokenize(chunk.title))
        chunk_terms: frozenset[str] = frozenset().union(*term_sets) if term_sets else frozenset()
        cov_chunk = q.coverage(chunk_terms)
        cov_title = q.coverage(title_terms)
        bm25_norm = hit.bm25_score / q.idf_mass if q.idf_mass > 0 else 0.0
        # Always 0: the shipped model was trained without a reranker, and a per-corpus
        # reranker's scores would be out of its training distribution. The slot stays so
        # the feature layout (and the shipped model) does not change.
        rerank = 0.0
        n = len(spans)
        for i, ((start, end), text, term_list, terms) in enumerate(
            zip(spans, texts, term_lists, term_sets, strict=True)
        ):
            prev_terms = term_sets[i - 1] if i > 0 else frozenset()
            next_terms = term_sets[i + 1] if i + 1 < n else frozenset()
            cov_window = q.coverage(terms | prev_terms | next_terms)
            density, first_pos = _match_density(term_list, q.terms)
            raw_tokens = analyzer.tokenize(text)
            raw_set = frozenset(raw_tokens)
            raw_trigrams = set(zip(raw_tokens, raw_tokens[1:], raw_tokens[2:], strict=False))
            cues = _cues(text, raw_tokens, q.raw_tokens)
            new_terms = len(terms - q.terms)
            sent_bigrams = set(itertools.pairwise(term_list))
            rows.append(
                [
                    covs[i],
                    q.plain(terms),
                    len(q.bigrams & sent_bigrams) / len(q.bigrams) if q.bigrams else 0.0,
                    covs[i - 1] if i > 0 else 0.0,
                    covs[i + 1] if i + 1 < n else 0.0,
                    cov_window,
                    cov_chunk,
                    cov_title,
                    q.coverage(terms | title_terms),
                    float(q.top_term is not None and q.top_term in terms),
                    len(q.top3 & terms) / len(q.top3) if q.top3 else 0.0,
                    q.exact_coverage(raw_set),
                    q.bm25(term_list),
                    len(q.trigrams & raw_trigrams) / len(q.trigrams) if q.trigrams else 0.0,
                    len(q.entities & raw_set) / len(q.entities) if q.entities else 0.0,
                    len(q.entities & (raw_set | title_raw)) / len(q.entities) if q.entities else 0.0,
                    float(len(q.entities)),
                    len(q.numbers & raw_set) / len(q.numbers) if q.numbers else 0.0,
                    _longest_run(term_list, q.terms) / len(q.terms) if q.terms else 0.0,
                    density,
                    first_pos,
                    float(len(term_list)),
                    float(len(raw_tokens)),
                    float(len(q.terms)),
                    float(i),
                    i / (n - 1) if n > 1 else 0.0,
                    float(n),
                    float(rank),
                    bm25_norm,
                    hit.dense_score,
                    rerank,
                    *wh,
                    *cues,
                    _type_match(q.category, cues),
                    float(new_terms),
                    new_terms / len(terms) if terms else 0.0,
                    *_LISTWISE_PLACEHOLDER,
                ]
            )
            sentences.append(
                CitedSentence(text, (Citation(chunk.chunk_id, chunk.doc_id, chunk.title, start, end),))
            )
            hit_ranks.append(rank)
    matrix = np.asarray(rows, dtype=np.float32).reshape(len(rows), N_FEATURES)
    if len(rows):
        _fill_listwise(matrix, hit_ranks)
    return SentenceFeatures(sentences, hit_ranks, matrix)


def _best_other(values: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """For each position, the maximum of the other positions (0 when there is no other)."""
    if len(values) < 2:
        return np.zeros_like(values)
    order = np.argsort(-values, kind="stable")
    top, second = values[order[0]], values[order[1]]
    out = np.full_like(values, top)
    out[order[0]] = second
    return out


def _fill_listwise(matrix: npt.NDArray[np.float32], hit_ranks: Sequence[int]) -> None:
    for source, target in _LISTWISE_PAIRS:
        values = matrix[:, FEATURE_INDEX[source]]
        matrix[:, FEATURE_INDEX[target]] = values - _best_other(values)
    # The hit's chunk against the best chunk of the other hits (0 with a single hit).
    ranks = np.asarray(hit_ranks)
    chunk_cov = matrix[:, FEATURE_INDEX["cov_idf_chunk"]]
    per_hit = {int(r): float(chunk_cov[ranks == r][0]) for r in np.unique(ranks)}
    for r, value in per_hit.items():
        others = [v for k, v in per_hit.items() if k != r]
        matrix[ranks == r, FEATURE_INDEX["cov_chunk_minus_best_other_hit"]] = (
            value - max(others) if others else 0.0
        )
    matrix[:, FEATURE_INDEX["n_candidates"]] = float(len(matrix))
