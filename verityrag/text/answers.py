"""SQuAD-style answer normalisation and whole-token containment.

Shared by the eval (is the gold answer in the prediction?) and the reader check at run
time (is the reader's span in the generated answer?), so both match text the same way.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(s: str) -> str:
    """Lowercase, drop punctuation and the articles a/an/the, collapse whitespace."""
    text = s.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def answer_tokens(s: str) -> list[str]:
    """The tokens of the normalised text."""
    return normalize_answer(s).split()


def contains_gold(prediction: str, golds: Iterable[str]) -> bool:
    """True if a normalised gold answer occurs in the prediction as whole tokens.

    Golds that normalise to nothing never match.
    """
    pred_tokens = answer_tokens(prediction)
    for gold in golds:
        gold_tokens = answer_tokens(gold)
        width = len(gold_tokens)
        if width == 0 or width > len(pred_tokens):
            continue
        for start in range(len(pred_tokens) - width + 1):
            if pred_tokens[start : start + width] == gold_tokens:
                return True
    return False
