"""Query reformulation strategies: rewrite a question so retrieval finds better evidence.

Reformulation only changes what is retrieved. The gate keeps judging the
*original* question against the new evidence, so a rewrite cannot talk the
system into answering (the reference design's unconditional rewriting dropped
correct abstention from 77% to 9%).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from verityrag.retrieval.features import ChunkTermCache, QueryTerms
from verityrag.types import Hit


class Reformulator(Protocol):
    name: str

    def __call__(self, q: QueryTerms, hits: Sequence[Hit]) -> str | None: ...


class SalientTermExpansion:
    """Append the rarest terms of the top evidence that the question lacks (pseudo-relevance feedback)."""

    name = "salient_expansion"

    def __init__(self, cache: ChunkTermCache, idf: Callable[[str], float], n_terms: int = 3) -> None:
        self.cache = cache
        self.idf = idf
        self.n_terms = n_terms

    def __call__(self, q: QueryTerms, hits: Sequence[Hit]) -> str | None:
        if not hits:
            return None
        terms = self.cache.get(hits[0].chunk).terms - set(q.terms)
        salient = sorted(terms, key=lambda t: (-self.idf(t), t))[: self.n_terms]
        # Append the words as written in the evidence, not their stems: the query is
        # analyzed again, and stemming a stem can change it ("chines" -> "chine").
        analyzer = self.cache.analyzer
        surface: dict[str, str] = {}
        for word in analyzer.tokenize(hits[0].chunk.text):
            for term in analyzer.analyze(word):
                if term in salient:
                    surface.setdefault(term, word)
        words = [surface[t] for t in salient if t in surface]
        return f"{q.text} {' '.join(words)}" if words else None


class TitleAnchoredRewrite:
    """Anchor the question to the title of the document the evidence comes from."""

    name = "title_anchored"

    def __call__(self, q: QueryTerms, hits: Sequence[Hit]) -> str | None:
        if not hits or not hits[0].chunk.title:
            return None
        title = hits[0].chunk.title
        if title.lower() in q.text.lower():
            return None
        return f"{title}: {q.text}"
