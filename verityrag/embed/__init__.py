"""Embedders: ``HashingEmbedder`` (default, stateless) and ``SentenceTransformerEmbedder`` (real model)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.embed.embedder import Embedder as Embedder
    from verityrag.embed.embedder import FloatMatrix as FloatMatrix
    from verityrag.embed.embedder import l2_normalise as l2_normalise
    from verityrag.embed.hashing import HashingEmbedder as HashingEmbedder
    from verityrag.embed.sentence_transformer import (
        SentenceTransformerEmbedder as SentenceTransformerEmbedder,
    )
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.embed.embedder": (
                "Embedder",
                "FloatMatrix",
                "l2_normalise",
            ),
            "verityrag.embed.hashing": ("HashingEmbedder",),
            "verityrag.embed.sentence_transformer": ("SentenceTransformerEmbedder",),
        },
    )

__all__ = [
    "Embedder",
    "FloatMatrix",
    "HashingEmbedder",
    "SentenceTransformerEmbedder",
    "l2_normalise",
]
