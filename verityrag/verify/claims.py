"""Claim decomposition: an answer sentence split into the clauses that each assert something.

The grounding checker scores every claim on its own and keeps the weakest, so a
sentence that joins one supported clause to one invented clause is caught.

The rules are deliberately simple (one regex, no parser), deterministic and fast:

1. split at ``;``;
2. split at ``, but``, ``, while``, ``, whereas`` (the connective is dropped);
3. split at ``, and`` only when the part after it (up to the next split point)
   has at least 4 words, so a serial comma (``A, B, and C were founded``) stays whole;
4. split before a relative ``, which`` clause (``which`` is kept: ``which drove pistons``);
5. a piece with fewer than 3 words is merged back into the claim before it
   (the first piece into the one after it), separator included.

Known limits: a non-restrictive clause in the middle of a sentence (``The engine,
which Watt improved, pumped water``) leaves its tail in the ``which`` claim; ``and``
joining two clauses without a comma is not split. Both only change how finely a
sentence is scored, never whether its words are checked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["MIN_CLAIM_WORDS", "answer_claims", "claim_spans", "split_claims"]

MIN_CLAIM_WORDS = 3
"""A claim never has fewer words than this (shorter pieces merge into a neighbour)."""

_MIN_WORDS_AFTER_AND = 4

_SPLIT_RE = re.compile(r"\s*;\s*|,\s+(?:(?P<which>which)|(?P<conj>but|while|whereas|and))\s+")
_WORD_RE = re.compile(r"[^\W_]+")
_TRIM_TAIL = " \t\n\r,;:"


def _words(text: str) -> int:
    return len(_WORD_RE.findall(text))


def _trim(sentence: str, start: int, end: int) -> tuple[int, int]:
    while start < end and sentence[start].isspace():
        start += 1
    while end > start and sentence[end - 1] in _TRIM_TAIL:
        end -= 1
    return start, end


def claim_spans(sentence: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of each claim in ``sentence``, in order (see the module rules)."""
    # Pieces as (content start, end, kind of the separator before it).
    pieces: list[tuple[int, int, str]] = []
    start, kind = 0, ""
    for match in _SPLIT_RE.finditer(sentence):
        pieces.append((start, match.start(), kind))
        if match.group("which"):
            start, kind = match.start("which"), "which"
        elif match.group("conj"):
            start, kind = match.end(), match.group("conj")
        else:
            start, kind = match.end(), ";"
    pieces.append((start, len(sentence), kind))

    # Rule 3: ", and" splits only before a clause of >= 4 words.
    spans: list[tuple[int, int]] = []
    for s, e, sep in pieces:
        if spans and sep == "and" and _words(sentence[s:e]) < _MIN_WORDS_AFTER_AND:
            spans[-1] = (spans[-1][0], e)
        else:
            spans.append((s, e))

    # Rule 5: no claim under MIN_CLAIM_WORDS words.
    merged: list[tuple[int, int]] = []
    for s, e in spans:
        if merged and _words(sentence[s:e]) < MIN_CLAIM_WORDS:
            merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
    if len(merged) > 1 and _words(sentence[merged[0][0] : merged[0][1]]) < MIN_CLAIM_WORDS:
        merged[1] = (merged[0][0], merged[1][1])
        del merged[0]

    out = [_trim(sentence, s, e) for s, e in merged]
    return [(s, e) for s, e in out if e > s and _words(sentence[s:e]) > 0]


def split_claims(sentence: str) -> list[str]:
    """Split one answer sentence into claims (clauses); ``[]`` for a sentence with no words.

    >>> split_claims("Watt improved the engine in 1769, but Newcomen built the first one in 1712.")
    ['Watt improved the engine in 1769', 'Newcomen built the first one in 1712.']
    """
    return [sentence[s:e] for s, e in claim_spans(sentence)]


def answer_claims(sentences: Sequence[str]) -> list[tuple[int, str]]:
    """Every claim of an answer as ``(sentence index, claim)``, in reading order."""
    return [(i, claim) for i, sentence in enumerate(sentences) for claim in split_claims(sentence)]
