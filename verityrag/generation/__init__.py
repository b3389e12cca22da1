"""Answer generation: extractive (default, grounded by construction) or by an LLM with citations."""

from verityrag.generation.extractive import CoverageRanker, ExtractiveGenerator, SentenceCandidate
from verityrag.generation.llm import LLMGenerator
from verityrag.generation.sentence_selector import ScoredSentence, SentenceSelector

__all__ = [
    "CoverageRanker",
    "ExtractiveGenerator",
    "LLMGenerator",
    "ScoredSentence",
    "SentenceCandidate",
    "SentenceSelector",
]
