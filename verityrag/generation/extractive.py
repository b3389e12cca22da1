"""Extractive answers: a verbatim evidence sentence, cited. Grounded by construction.

``ExtractiveGenerator`` answers with the sentence the learned
:class:`~verityrag.generation.sentence_selector.SentenceSelector` ranks first.
``CoverageRanker`` is the baseline it is measured against: IDF-weighted
coverage of the question's terms.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from verityrag.generation.sentence_selector import ScoredSentence, SentenceSelector
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.text.sentences import sentence_spans
from verityrag.types import Citation, CitedSentence, Hit


@dataclass(frozen=True, slots=True)
class SentenceCandidate:
    sentence: CitedSentence
    hit_rank: int
    coverage: float


class ExtractiveGenerator:
    """Ranks the sentences of the top hits with the learned selector; the answer is the first.

    The selector loads lazily (the bundled default unless one is given), with ``analyzer``:
    the index's, so the selector's IDF lookups use the terms the index holds.
    """

    def __init__(
        self, selector: SentenceSelector | None = None, analyzer: Analyzer = DEFAULT_ANALYZER
    ) -> None:
        self._selector = selector
        self._analyzer = analyzer

    @property
    def selector(self) -> SentenceSelector:
        if self._selector is None:
            self._selector = SentenceSelector.default(self._analyzer)
        return self._selector

    @property
    def max_hits(self) -> int:
        """How many of the top hits the answer may come from."""
        return self.selector.max_hits

    def generate(
        self, question: str, hits: Sequence[Hit], idf: Callable[[str], float]
    ) -> list[ScoredSentence]:
        """Every sentence of the top ``max_hits`` hits, best first, each with its citation and score."""
        return self.selector.select(question, hits, idf)


class CoverageRanker:
    """Baseline: ranks the sentences of the top ``max_hits`` hits by IDF-weighted question coverage."""

    def __init__(self, analyzer: Analyzer, max_hits: int = 3) -> None:
        self.analyzer = analyzer
        self.max_hits = max_hits

    def candidates(
        self, question: str, hits: Sequence[Hit], idf: Callable[[str], float]
    ) -> list[SentenceCandidate]:
        """Every sentence of the top ``max_hits`` hits with its IDF-weighted question coverage, best first."""
        q_terms = set(self.analyzer.analyze(question))
        weights = {t: max(idf(t), 0.0) + 1e-6 for t in q_terms}
        total = sum(weights.values())
        out: list[SentenceCandidate] = []
        for rank, hit in enumerate(hits[: self.max_hits]):
            chunk = hit.chunk
            for start, end in sentence_spans(chunk.text):
                text = chunk.text[start:end]
                terms = set(self.analyzer.analyze(text))
                coverage = sum(w for t, w in weights.items() if t in terms) / total if total else 0.0
                citation = Citation(chunk.chunk_id, chunk.doc_id, chunk.title, start, end)
                out.append(SentenceCandidate(CitedSentence(text, (citation,)), rank, coverage))
        out.sort(key=lambda c: (-c.coverage, c.hit_rank))
        return out
