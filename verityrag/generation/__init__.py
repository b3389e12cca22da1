"""Answer generation: extractive (default, grounded by construction) or by an LLM with citations."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.generation.extractive import CoverageRanker as CoverageRanker
    from verityrag.generation.extractive import ExtractiveGenerator as ExtractiveGenerator
    from verityrag.generation.extractive import SentenceCandidate as SentenceCandidate
    from verityrag.generation.llm import LLMGenerator as LLMGenerator
    from verityrag.generation.sentence_selector import ScoredSentence as ScoredSentence
    from verityrag.generation.sentence_selector import SentenceSelector as SentenceSelector
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.generation.extractive": (
                "CoverageRanker",
                "ExtractiveGenerator",
                "SentenceCandidate",
            ),
            "verityrag.generation.llm": ("LLMGenerator",),
            "verityrag.generation.sentence_selector": (
                "ScoredSentence",
                "SentenceSelector",
            ),
        },
    )

__all__ = [
    "CoverageRanker",
    "ExtractiveGenerator",
    "LLMGenerator",
    "ScoredSentence",
    "SentenceCandidate",
    "SentenceSelector",
]
