"""Sentence splitting with character spans, so citations can point into the source text.

Documents as organisations write them are not only prose: a heading, a list item, a table row
(rendered by the parsers as "Loaf: White bloomer; Price: £3.10") or a price line ends at its line
break with no full stop. A line break therefore ends a sentence too, except where a line was
wrapped: the next line goes on in lower case, or the line is as long as wrapped prose is (a PDF's
or an e-mail's) and stops without punctuation. A blank line always ends one.
"""

from __future__ import annotations

import re

# What may open a sentence before its first letter. The same set is stripped from the
# front of a word before it is looked up as an abbreviation ('\u201cDr. Smith', '[Fig. 3]').
_OPENERS = "\"'\u201c\u2018\u201e\u00ab(["
# A boundary is end punctuation (optionally closed by a quote or bracket), then
# whitespace, then something that can start a sentence: a capital, a digit or a letter of a
# script without case ("Đuka", "Él", "١٩٤٥", "שלום"); checked in sentence_spans (re has no \p{Lu}).
_BOUNDARY_RE = re.compile(
    r"""[.!?]["'\u201d\u2019\u00bb)\]]*\s+(?=[""" + re.escape(_OPENERS) + r"""]?([^\W_]))"""
)
_ABBREVIATIONS = frozenset(
    """mr mrs ms dr prof sr jr st mt ft vs etc inc ltd co corp vol fig approx
    jan feb mar apr jun jul aug sep sept oct nov dec gen col lt sgt rev gov sen rep
    e.g i.e u.s u.k a.d b.c c.a ca""".split()
)
# Abbreviations only before a number: "no." also ends sentences ("He said no.").
_NUMBER_ABBREVIATIONS = frozenset({"no", "nos"})


def _ends_with_abbreviation(text: str, end: int) -> bool:
    """True when the period at ``text[end]`` closes an abbreviation or an initial."""
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    # Every opener the boundary accepts, not only ASCII ones: '\u201cDr.' is still "dr".
    word = text[start:end].lower().lstrip(_OPENERS)
    if word in _NUMBER_ABBREVIATIONS:  # "No. 5", not "He said no. Then..."
        # Scanned in place: slicing off the rest of the text made every "no." O(len(text)).
        nxt = end + 1
        while nxt < len(text) and text[nxt].isspace():
            nxt += 1
        return nxt < len(text) and text[nxt].isdigit()
    if word in _ABBREVIATIONS:
        return True
    # A single capital letter ("J. R. R. Tolkien") is an initial, not a sentence end.
    return len(word) == 1 and word.isalpha()


#: A line at least this long that stops without punctuation is wrapped prose, not a heading or
#: a row: the next line goes on with its sentence.
WRAPPED_LINE_CHARS = 60
_LINE_END_PUNCTUATION = frozenset(".!?:;,\"'\u201d\u2019)")


def _continues(line: str, following: str) -> bool:
    """Whether the line break between ``line`` and ``following`` (both stripped, non-empty) is
    a wrap inside one sentence rather than the end of a unit."""
    first = following[0]
    if first.isalpha() and first.islower():
        return not line.endswith((".", "!", "?"))
    if first.isdigit() and line[-1].isalnum():  # "O\n2", "(CO\n2)": a subscript set on a line of its own
        return True
    return len(line) >= WRAPPED_LINE_CHARS and line[-1] not in _LINE_END_PUNCTUATION and first.isalnum()


def line_units(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each run of lines that may hold one sentence: lines are joined where
    one was wrapped (:func:`_continues`); a blank line always parts them."""
    units: list[tuple[int, int]] = []
    if "\n" not in text:
        return [(0, len(text))] if text.strip() else []
    unit_start = -1
    previous = ""
    position = 0
    for raw in text.split("\n"):
        line = raw.strip()
        line_start = position
        position += len(raw) + 1
        if not line:
            if unit_start >= 0:
                units.append((unit_start, line_start - 1))
                unit_start = -1
            previous = ""
            continue
        if unit_start >= 0 and not _continues(previous, line):
            units.append((unit_start, line_start - 1))
            unit_start = -1
        if unit_start < 0:
            unit_start = line_start
        previous = line
    if unit_start >= 0:
        units.append((unit_start, len(text)))
    return units


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of each sentence in ``text``, surrounding whitespace excluded;
    a line break ends a sentence where :func:`line_units` says so."""
    if "\n" not in text:
        return _prose_spans(text, 0, len(text))
    spans: list[tuple[int, int]] = []
    for start, end in line_units(text):
        spans += _prose_spans(text, start, end)
    return spans


def holding(spans: list[tuple[int, int]], start: int, end: int) -> list[int]:
    """The indexes of the sentence ``spans`` that hold ``[start, end)`` (an empty range: the sentence
    at ``start``); more than one when it runs over a boundary the splitter saw."""
    return [i for i, (s, e) in enumerate(spans) if s < max(end, start + 1) and e > start]


def _prose_spans(text: str, begin: int, stop: int) -> list[tuple[int, int]]:
    """The sentences of ``text[begin:stop]`` by their end punctuation."""
    spans: list[tuple[int, int]] = []
    start = begin
    for match in _BOUNDARY_RE.finditer(text, begin, stop):
        first = match.group(1)
        caseless = first.isalpha() and first.lower() == first.upper()  # Arabic, Hebrew, CJK...
        if not (first.isupper() or first.istitle() or first.isdigit() or caseless):
            continue  # a lower-case word: "e.g. this", "approx. ten"
        punct = match.start()
        if text[punct] == "." and _ends_with_abbreviation(text, punct):
            continue
        end = match.end()
        _append_trimmed(text, start, end, spans)
        start = end
    _append_trimmed(text, start, stop, spans)
    return spans


def _append_trimmed(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if end > start:
        spans.append((start, end))


def split_sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]
