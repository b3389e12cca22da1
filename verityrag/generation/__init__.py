"""Answer generation: extractive (default, grounded by construction)."""

from verityrag.generation.extractive import ExtractiveGenerator, SentenceCandidate

__all__ = ["ExtractiveGenerator", "SentenceCandidate"]
