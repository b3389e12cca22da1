"""Embedders: ``HashingEmbedder`` (default, stateless) and ``SentenceTransformerEmbedder`` (real model)."""

from verityrag.embed.embedder import Embedder, FloatMatrix, l2_normalise
from verityrag.embed.hashing import HashingEmbedder
from verityrag.embed.sentence_transformer import SentenceTransformerEmbedder

__all__ = [
    "Embedder",
    "FloatMatrix",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "l2_normalise",
]
