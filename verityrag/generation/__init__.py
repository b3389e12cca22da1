"""Answer generation: extractive (default, grounded by construction)."""

from verityrag.generation.extractive import CoverageRanker, ExtractiveGenerator, SentenceCandidate
from verityrag.generation.sentence_selector import ScoredSentence, SentenceSelector

__all__ = ["CoverageRanker", "ExtractiveGenerator", "ScoredSentence", "SentenceCandidate", "SentenceSelector"]
