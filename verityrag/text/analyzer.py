"""The one analyzer every lexical component uses.

BM25, the hashing embedder, retrieval features and the grounding checker must
agree on what a term is, so they all call :class:`Analyzer`.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from verityrag.text.stopwords import ENGLISH_STOPWORDS

# Letters and digits of any script (accents folded first); underscore is punctuation.
_TOKEN_RE = re.compile(r"[^\W_]+")
# The same tokens for ASCII text, found faster: every other ASCII character made a space, then split.
_ASCII_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})
# Combining marks left by NFKD decomposition ("é" -> "e" + U+0301); removing them folds accents.
_COMBINING_RE = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")


def _fold(text: str) -> str:
    """Case-fold and strip accents (``Café`` -> ``cafe``, ``Straße`` -> ``strasse``); ASCII takes the fast path.

    Decomposed first, then case-folded: decomposition can make capitals (``ℌ`` -> ``H``,
    ``℃`` -> ``°C``), and ``casefold`` (unlike ``lower``) also folds ``ß`` and a final ``ς``.
    """
    if text.isascii():
        return text.lower()
    return _COMBINING_RE.sub("", unicodedata.normalize("NFKD", text).casefold())


def _tokens(folded: str) -> list[str]:
    if folded.isascii():
        return folded.translate(_ASCII_SEPARATORS).split()
    return _TOKEN_RE.findall(folded)


_RECENT = 4096  # texts whose analysis an Analyzer keeps


@lru_cache(maxsize=1)
def _snowball() -> Callable[[str], str]:
    import snowballstemmer

    return snowballstemmer.stemmer("english").stemWord  # type: ignore[no-any-return]


#: Tokens whose index term an Analyzer remembers; past this the memory starts afresh (a corpus of
#: a million chunks has over a million distinct tokens, most of them seen once).
_TERM_CACHE = 200_000


class _IndexTerms(dict[str, str | None]):
    """Token -> its index term (stemmed, or as it is), or None for a stopword, made on first
    sight: an analysis is one C-level map over the tokens instead of a filter and a stemmer call
    per token (stemming dominated analysis; tokens repeat heavily)."""

    def __init__(self, stopwords: frozenset[str], stem: bool) -> None:
        super().__init__()
        self.stopwords = stopwords
        self.stem = _snowball() if stem else None

    def __missing__(self, token: str) -> str | None:
        if len(self) >= _TERM_CACHE:
            self.clear()
        term = None if token in self.stopwords else self.stem(token) if self.stem else token
        self[token] = term
        return term

    def __reduce__(self) -> tuple[Any, ...]:  # sent to a worker process empty, not whole
        return (_IndexTerms, (self.stopwords, self.stem is not None))


class Analyzer:
    """Regex tokens, lowercase, accents and punctuation stripped, stopwords removed, optional stemming.

    ``analyze`` gives index terms; ``tokenize`` gives the raw lowercase tokens
    (for n-gram features that want stopwords kept).
    """

    def __init__(
        self,
        stopwords: Iterable[str] = ENGLISH_STOPWORDS,
        stem: bool = True,
    ) -> None:
        # Folded as tokens are, or "The" or "über" in a custom list would never match a
        # token ("the", "uber") and so never be removed.
        self.stopwords = frozenset(_fold(word) for word in stopwords)
        self.stem = stem
        # The last texts analysed: ingest analyses each chunk for its vector and again for BM25,
        # a query is analysed by retrieval, features and gates. Bounded; a copy is returned.
        # Two generations: when the newer one is full it becomes the older one, so at least the
        # last _RECENT texts are always kept (clearing one dict dropped a batch's texts between
        # embedding them and counting their terms).
        self._recent: dict[str, tuple[str, ...]] = {}
        self._older: dict[str, tuple[str, ...]] = {}
        self._terms = _IndexTerms(self.stopwords, stem)

    def tokenize(self, text: str) -> list[str]:
        return _tokens(_fold(text))

    def analyze(self, text: str) -> list[str]:
        recent = self._recent.get(text)
        if recent is None:
            recent = self._older.get(text)
        if recent is not None:
            return list(recent)
        terms: list[str] = [
            term for term in map(self._terms.__getitem__, _tokens(_fold(text))) if term is not None
        ]
        if len(self._recent) >= _RECENT:
            self._older, self._recent = self._recent, {}
        self._recent[text] = tuple(terms)
        return terms

    def __getstate__(self) -> dict[str, Any]:
        # What it remembers stays here: a worker process is sent the analyzer, not its caches.
        return {**self.__dict__, "_recent": {}, "_older": {}}

    def fingerprint(self) -> str:
        """Identifies the analyzer's behaviour, so a store built with another one is detected.

        The count alone cannot tell two stopword lists of one size apart (one word swapped
        for another), so any list but the default one adds a digest of its words. The
        default list keeps the bare form, which existing stores and models recorded.
        """
        base = f"analyzer:v2:stem={int(self.stem)}:stop={len(self.stopwords)}"
        if self.stopwords == ENGLISH_STOPWORDS:
            return base
        digest = hashlib.sha256("\n".join(sorted(self.stopwords)).encode("utf-8")).hexdigest()
        return f"{base}:{digest[:12]}"

    def __repr__(self) -> str:
        return f"Analyzer(stem={self.stem}, stopwords={len(self.stopwords)})"


DEFAULT_ANALYZER = Analyzer()
