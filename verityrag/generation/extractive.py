"""Extractive answers: the evidence sentence that best covers the question, cited.

Grounded by construction: the answer is a verbatim sentence of a retrieved chunk.
This is the baseline selector (IDF-weighted coverage of the question's terms);
a learned sentence selector can replace ``score_sentence``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from verityrag.text.analyzer import Analyzer
from verityrag.text.sentences import sentence_spans
from verityrag.types import Citation, CitedSentence, Hit


@dataclass(frozen=True, slots=True)
class SentenceCandidate:
    sentence: CitedSentence
    hit_rank: int
    coverage: float


class ExtractiveGenerator:
    """Picks the best-covering sentence among the top ``max_hits`` hits."""

    def __init__(self, analyzer: Analyzer, max_hits: int = 3) -> None:
        self.analyzer = analyzer
        self.max_hits = max_hits

    def candidates(
        self, question: str, hits: Sequence[Hit], idf: Callable[[str], float]
    ) -> list[SentenceCandidate]:
        """Every sentence of the top hits with its IDF-weighted coverage of the question, best first."""
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
