"""Trims evidence to the sentences most relevant to a query: length is the cost.

A cross-encoder costs time in proportion to its input, and three retrieved chunks
are ~500 tokens. Both the answerability gate and the guard see only the sentences
that share the most (IDF-free, stemmed) terms with the question or answer, kept in
their original order, up to ``max_words`` words. Training data is trimmed by the
same function, so the models learn on what they are served.
"""

from __future__ import annotations

from verityrag.text.analyzer import DEFAULT_ANALYZER
from verityrag.text.sentences import split_sentences


def trim_evidence(query: str, evidence: str, max_words: int = 120) -> str:
    """The most query-relevant sentences of ``evidence``, in order, within ``max_words`` words.

    Sentences are ranked by the share of the query's terms they contain (ties: earlier
    first). The best sentence is always kept, even if longer than the budget (the
    scorer windows it rather than cut it).
    """
    sentences = split_sentences(evidence)
    if len(sentences) <= 1 or len(evidence.split()) <= max_words:
        return evidence.strip()
    q_terms = set(DEFAULT_ANALYZER.analyze(query))
    ranked = sorted(
        range(len(sentences)),
        key=lambda i: (-len(q_terms & set(DEFAULT_ANALYZER.analyze(sentences[i]))), i),
    )
    kept: list[int] = []
    words = 0
    for i in ranked:
        n = len(sentences[i].split())
        if kept and words + n > max_words:
            continue
        kept.append(i)
        words += n
    return " ".join(sentences[i] for i in sorted(kept))
