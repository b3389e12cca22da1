"""What a question is about: the names, titles, numbers and dates it mentions.

A span is an answer to a question only when the passage that holds it is about what the
question names: "How long is the MV Lissa Wren?" is not answered by a passage that gives the
length of the MV Corran Bell, however well the span fits the question's shape. This module
finds a question's *subjects* by rules (no model: they run on every question) and says which of
them a passage, with its document's title, does not name.

- **Names**: runs of capitalised words, with the small words that join them ("Duke of
  Wellington", "Bank of England"); the question's first word only when it is not a common word
  ("Where did Beyonce ..." -> "Beyonce"; "The Normans ..." -> "Normans").
- **Titles**: text in quotation marks.
- **Numbers and years**: digit runs ("2021", "214", "3.5").

A subject is *named* by a text when its content words are there (lowercased, accents folded and
stemmed by the analyzer, so "Normans" names "Norman"; a long word also by one that differs in its
last letters, "Scandinavian" by "Scandinavia"): all of them, or two thirds of a name of three
words or more. Words that name a kind of thing ("River", "Battle", "MV") need not be there, so a
passage that says "the Thames" names "the River Thames"; an abbreviation ("V&A") is named by the
initials of a name written out ("Victoria and Albert Museum"). Numbers are matched as written. A document's title covers its
passages: a passage saying "she" of the ship its title names is about that ship.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from verityrag.text.analyzer import Analyzer
from verityrag.text.stopwords import ENGLISH_STOPWORDS

SubjectKind = Literal["name", "title", "number"]

# A capitalised word: a capital then letters, digits, apostrophes, hyphens or dots ("St.", "O'Neill",
# "F-16", "MV"); or an all-digit word inside a name run ("Super Bowl 50").
_WORD_RE = re.compile(r"[^\W\d_][\w'’.&\-]*|\d[\d,.]*", re.UNICODE)
#: Small words that may join the capitalised words of one name.
_JOINERS = frozenset({"of", "the", "de", "du", "la", "le", "von", "van", "der", "del", "da", "and", "&"})
_QUOTED_RE = re.compile(r"[\"“”]([^\"“”]{2,80})[\"“”]")
_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
#: Capitalised words that are question words, pronouns or months rather than names of a thing.
_NOT_NAMES = frozenset(
    "what who whom whose when where which why how is are was were do does did can could should would "
    "will has have had in on at for by from to of the a an and or during after before since until "
    "according besides other another some any many much".split()
)
#: Words that name a kind of thing in a name ("River Thames", "Battle of Hastings"): a passage
#: about the thing often leaves them out, so they need not be found.
#: Words at least this long also match a word that differs in its last three letters.
_PREFIX_FROM = 7
_GENERIC = frozenset(
    "river lake mount mountain sea ocean island islands battle war treaty church cathedral university "
    "college school city town county state province kingdom empire republic company corporation "
    "inc ltd co museum park street road bridge castle house palace hall station airport hospital "
    "north south east west northern southern eastern western new great old saint st st. mv ss hms "
    "king queen prince princess duke lord sir dr mr mrs ms president emperor pope general".split()
)


@dataclass(frozen=True, slots=True)
class Subject:
    """One thing a question names: ``text`` as written, its ``kind``, and the ``terms`` (analysed
    words, or the digits of a number) a text must hold to name it."""

    text: str
    kind: SubjectKind
    terms: tuple[str, ...]
    #: For an abbreviation ("V&A", "NFL"): its letters, also named by the initials of a name
    #: written out ("Victoria and Albert").
    initials: str | None = None


@lru_cache(maxsize=1)
def _analyzer() -> Analyzer:
    return Analyzer()


def _terms(text: str) -> tuple[str, ...]:
    """The content words of a name a text must hold (stemmed; generic kind-words left out unless
    they are all there is)."""
    analyzer = _analyzer()
    words = [w for w in analyzer.tokenize(text) if w not in ENGLISH_STOPWORDS]
    specific = [w for w in words if w not in _GENERIC]
    return tuple(dict.fromkeys(analyzer.analyze(" ".join(specific or words))))


def _digits(text: str) -> str:
    return re.sub(r"[,.](?=\d{3}\b)", "", text)  # "1,200" and "1200" are one number


def _name_runs(question: str, first_word_rule: bool = True) -> list[str]:
    """Runs of capitalised words (with joining small words inside) in ``question``; with
    ``first_word_rule`` its first word (capitalised anyway) counts only within a longer run."""
    runs: list[list[str]] = []
    current: list[str] = []
    first = ""
    pending: list[str] = []  # joiners seen after a capitalised word, kept if another follows
    for i, match in enumerate(_WORD_RE.finditer(question)):
        word = re.sub(r"['’]s$", "", match.group()).rstrip(".'’") or match.group()
        capital = word[0].isupper() or (word[0].isdigit() and bool(current))
        # The first word is capitalised anyway: a name only as part of a longer run.
        if i == 0 and capital and first_word_rule:
            first = word
            continue
        if i == 1 and first and capital and first.lower() not in _NOT_NAMES | ENGLISH_STOPWORDS:
            current = [first]
        if capital and word.lower() not in _NOT_NAMES:
            current += [*pending, word]
            pending = []
        elif current and word.lower() in _JOINERS:
            pending.append(word)
        else:
            if current:
                runs.append(current)
            current, pending = [], []
    if current:
        runs.append(current)
    return [" ".join(run) for run in runs]


def question_subjects(question: str) -> list[Subject]:
    """The names, quoted titles and numbers ``question`` mentions, in order, each once."""
    found: dict[tuple[str, ...], Subject] = {}
    quoted = [m.group(1).strip() for m in _QUOTED_RE.finditer(question)]
    for title in quoted:
        terms = _terms(title)
        if terms:
            found.setdefault(terms, Subject(title, "title", terms))
    rest = _QUOTED_RE.sub(" ", question)
    for name in _name_runs(rest):
        terms = _terms(name)
        if terms and not all(t.isdigit() for t in terms):
            found.setdefault(terms, Subject(name, "name", terms, _abbreviation(name)))
    named_digits = {t for s in found.values() for t in s.terms}
    for m in _NUMBER_RE.finditer(rest):
        digits = _digits(m.group())
        if digits not in named_digits:
            found.setdefault((digits,), Subject(m.group(), "number", (digits,)))
    return list(found.values())


def _abbreviation(name: str) -> str | None:
    """The letters of an abbreviation ("V&A" -> "va", "NFL" -> "nfl"); None for other names."""
    letters = re.sub(r"[&.]", "", name)
    if 2 <= len(letters) <= 6 and letters.isalpha() and letters.isupper():
        return letters.lower()
    return None


def _initials(text: str) -> set[str]:
    """``~`` and the initials of every run of two or more capitalised words in ``text`` (joiners
    skipped), and of each leading part of the run: what an abbreviation of a name there would be."""
    found: set[str] = set()
    for run in _name_runs(text, first_word_rule=False):
        letters = "".join(w[0].lower() for w in run.split() if w.lower() not in _JOINERS and w[0].isalpha())
        found.update("~" + letters[:n] for n in range(2, len(letters) + 1))
    return found


def text_terms(texts: Iterable[str]) -> frozenset[str]:
    """Every analysed word and number of ``texts`` and the initials of their names: what
    :func:`missing_subjects` looks in."""
    analyzer = _analyzer()
    terms: set[str] = set()
    for text in texts:
        terms.update(analyzer.analyze(text))
        terms.update(_digits(m.group()) for m in _NUMBER_RE.finditer(text))
        terms.update(_initials(text))
    return frozenset(terms)


def _has(term: str, terms: frozenset[str]) -> bool:
    """``term`` is there, or (a long word) one that differs only in its last letters ("Scandinavian",
    "Scandinavia"; the stemmer keeps such pairs apart)."""
    if term in terms:
        return True
    if len(term) < _PREFIX_FROM or term.isdigit():
        return False
    prefix = term[: len(term) - 3]
    return any(t.startswith(prefix) for t in terms)


def is_named(subject: Subject, terms: frozenset[str]) -> bool:
    """Whether ``terms`` (:func:`text_terms` of a passage and its title) name ``subject``: all its
    words, or two thirds of them for a name of three or more; an abbreviation by its initials."""
    found = sum(_has(t, terms) for t in subject.terms)
    needed = len(subject.terms) if len(subject.terms) < 3 else math.ceil(len(subject.terms) * 2 / 3)
    if found >= needed:
        return True
    return subject.initials is not None and "~" + subject.initials in terms


def missing_subjects(subjects: Sequence[Subject], terms: frozenset[str]) -> list[Subject]:
    """The subjects that ``terms`` (:func:`text_terms` of a passage and its title) do not name."""
    return [s for s in subjects if not is_named(s, terms)]
