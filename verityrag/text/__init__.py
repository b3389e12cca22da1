"""Text processing: the shared analyzer, sentence splitting and chunking."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.text.analyzer import DEFAULT_ANALYZER as DEFAULT_ANALYZER
    from verityrag.text.analyzer import Analyzer as Analyzer
    from verityrag.text.chunking import ChunkSpan as ChunkSpan
    from verityrag.text.chunking import chunk_spans as chunk_spans
    from verityrag.text.chunking import make_chunk_id as make_chunk_id
    from verityrag.text.sentences import sentence_spans as sentence_spans
    from verityrag.text.sentences import split_sentences as split_sentences
    from verityrag.text.stopwords import ENGLISH_STOPWORDS as ENGLISH_STOPWORDS
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.text.analyzer": (
                "DEFAULT_ANALYZER",
                "Analyzer",
            ),
            "verityrag.text.chunking": (
                "ChunkSpan",
                "chunk_spans",
                "make_chunk_id",
            ),
            "verityrag.text.sentences": (
                "sentence_spans",
                "split_sentences",
            ),
            "verityrag.text.stopwords": ("ENGLISH_STOPWORDS",),
        },
    )

__all__ = [
    "DEFAULT_ANALYZER",
    "ENGLISH_STOPWORDS",
    "Analyzer",
    "ChunkSpan",
    "chunk_spans",
    "make_chunk_id",
    "sentence_spans",
    "split_sentences",
]
