"""Comparisons of time: "Which was released first, Dinosaur or The Happiest Millionaire?".

The question names two things and asks which came first (or last): each thing's own document (its
title or first sentence names it) says when, in its opening ("Arthur's Magazine (1844–1846) was
...", "Goran Ivanišević (born 13 September 1971) is ..."); the years are compared and the answer
is the thing whose year wins, citing both documents' sentences. A thing without a document, or a
document whose opening gives no year, is a missing hop.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from verityrag.agent.hops import about, name_in
from verityrag.text.sentences import sentence_spans
from verityrag.types import Citation, CitedSentence, Hit, ShortAnswer

_EARLIEST = r"first|earlier|earliest|older|oldest|sooner"
_LATEST = r"later|latest|younger|youngest|more recent(?:ly)?|most recent(?:ly)?|last|newer|newest"
# "..., A or B?" or "... first A or B?": the two things after the comparison's comma or word.
_OPTIONS = re.compile(
    rf"(?:,|\b(?:{_EARLIEST}|{_LATEST})\b)\s*(?P<a>[^,?]+?)\s+or\s+(?P<b>[^,?]+?)\s*\??\s*$", re.IGNORECASE
)
_DIRECTION = re.compile(rf"\b(?P<early>{_EARLIEST})\b|\b(?P<late>{_LATEST})\b", re.IGNORECASE)
_DIED = re.compile(r"\b(died|passed away|death)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2})\b")
# A life's span at a document's opening: "(1906–1967)", "(7 February 1906 – 17 October 1967)".
_SPAN = re.compile(
    r"\(([^()]*?\b(?:1[0-9]{3}|20[0-9]{2})\b[^()]*?)[–-]([^()]*?\b(?:1[0-9]{3}|20[0-9]{2})\b[^()]*?)\)"
)
#: How much of a document's opening is read for its year.
OPENING_CHARS = 300


@dataclass(frozen=True, slots=True)
class TimeComparison:
    """Which of ``options`` came first (``earliest``) or last, by when they died (``death``) or
    began (were born, released, founded)."""

    options: tuple[str, str]
    earliest: bool
    death: bool


def time_comparison(question: str) -> TimeComparison | None:
    """The comparison of time ``question`` asks, or None when it asks none."""
    options = _OPTIONS.search(question)
    direction = _DIRECTION.search(question)
    if options is None or direction is None:
        return None
    a, b = options.group("a").strip(), options.group("b").strip()
    if not a or not b or a.lower() == b.lower():
        return None
    return TimeComparison((a, b), direction.group("early") is not None, _DIED.search(question) is not None)


@dataclass(frozen=True, slots=True)
class Dated:
    """A thing's year, and the sentence of its document that says it."""

    option: str
    year: int
    hit: Hit  # the passage that dates it
    # The passage's first sentence (which names the thing), then the one giving the year, if other.
    sentences: tuple[CitedSentence, ...]
    name: ShortAnswer | None  # the thing's name as its document writes it


def year_of(hit: Hit, death: bool) -> tuple[int, int, int] | None:
    """The year a document's opening gives (its death year when ``death``), with where it stands."""
    text = hit.chunk.text[:OPENING_CHARS]
    span = _SPAN.search(text)
    if span is not None:
        group = 2 if death else 1
        year = _YEAR.search(span.group(group))
        if year is not None:
            start = span.start(group) + year.start()
            return int(year.group()), start, start + 4
    if death:
        return None
    year = _YEAR.search(text)
    return (int(year.group()), year.start(), year.end()) if year else None


def _sentences(hit: Hit, start: int) -> tuple[CitedSentence, ...]:
    """The passage's first sentence and the one holding ``start`` (once when they are one)."""
    chunk = hit.chunk
    spans = sentence_spans(chunk.text) or [(0, len(chunk.text))]
    dating = next(((s, e) for s, e in spans if s <= start < e), spans[0])
    return tuple(
        CitedSentence(chunk.text[s:e], (Citation(chunk.chunk_id, chunk.doc_id, chunk.title, s, e),))
        for s, e in dict.fromkeys([spans[0], dating])
    )


def dated(
    comparison: TimeComparison, candidates: Sequence[Hit], search: Callable[[str], Sequence[Hit]]
) -> list[Dated | str]:
    """Each option dated by its document, or the option itself where no document dates it."""
    out: list[Dated | str] = []
    for option in comparison.options:
        passages = about(option, candidates, exclude="") or about(option, search(option), exclude="")
        found = year_of(passages[0], comparison.death) if passages else None
        if not passages or found is None:
            out.append(option)
            continue
        year, start, _ = found
        out.append(
            Dated(option, year, passages[0], _sentences(passages[0], start), name_in(passages[0], option))
        )
    return out


def winner(comparison: TimeComparison, both: Sequence[Dated]) -> Dated | None:
    """The option whose year comes first (or last); None on a tie."""
    a, b = both
    if a.year == b.year:
        return None
    first = a if a.year < b.year else b
    return first if comparison.earliest else (b if first is a else a)
