"""Headings: the lines that name a section of a document rather than say something.

A parsed page, price list or policy has its section names on lines of their own ("Opening
hours", "Ruth Pellow - Brackenford manager", "FAVOURITES AND PRICES"). A heading is the context
of the lines under it (a chunk starts at one; the reader reads it before them), never an answer
or a quoted sentence of its own.
"""

from __future__ import annotations

import re

from verityrag.text.sentences import sentence_spans

#: The most words a heading has.
MAX_HEADING_WORDS = 12
_LIST_ITEM = re.compile(r"^(?:[-*\u2022\u2013]\s|\d{1,3}[.)]\s|\(?[a-z]\)\s)")
# "Phone: 01632 960418", "Sourdough: £3.80": a label and its value, not a section's name.
_LABELLED_VALUE = re.compile(r"^[^:]{1,60}:\s.*[\d\u00a3$\u20ac%]")


def is_heading(sentence: str) -> bool:
    """Whether ``sentence`` (one unit of :func:`~verityrag.text.sentences.sentence_spans`) is a
    heading: one line of at most :data:`MAX_HEADING_WORDS` words that opens with a capital or a
    digit and stops without punctuation, neither a list item, a table row ("a; b"), nor a
    labelled value."""
    text = sentence.strip()
    if not text or "\n" in text or text[-1] in ".!?:;,)\"'\u201d\u2019" or ";" in text:
        return False
    first = next((c for c in text if c.isalnum()), "")
    if not first or not (first.isupper() or first.isdigit()) or not (text[0].isalnum() or text[0] in "\"'(["):
        return False
    if len(text.split()) > MAX_HEADING_WORDS or _LIST_ITEM.match(text) or _LABELLED_VALUE.match(text):
        return False
    return any(c.isalpha() for c in text)


def is_heading_at(text: str, start: int, end: int) -> bool:
    """Whether the sentence ``text[start:end]`` is a heading: :func:`is_heading`, and a whole line
    (a paragraph's last sentence without its full stop is not)."""
    whole_line = (start == 0 or text[start - 1] == "\n") and (end == len(text) or text[end] == "\n")
    return whole_line and "\n" in text and is_heading(text[start:end])


def heading_flags(text: str, spans: list[tuple[int, int]]) -> list[bool]:
    """For each sentence span of ``text``, whether it is a heading (:func:`is_heading_at`)."""
    if "\n" not in text:
        return [False] * len(spans)
    return [is_heading_at(text, s, e) for s, e in spans]


def heading_spans(text: str) -> list[tuple[int, int]]:
    """The spans of ``text``'s headings, in order."""
    if "\n" not in text:
        return []
    return [(s, e) for s, e in sentence_spans(text) if is_heading_at(text, s, e)]


def last_heading(headings: list[tuple[int, int]], offset: int) -> tuple[int, int] | None:
    """Of ``headings`` (:func:`heading_spans`), the last that ends at or before ``offset``, or None."""
    return next((h for h in reversed(headings) if h[1] <= offset), None)


def heading_before(text: str, offset: int) -> tuple[int, int] | None:
    """The span of the last heading of ``text`` that ends at or before ``offset``, or None."""
    return last_heading(heading_spans(text), offset)
