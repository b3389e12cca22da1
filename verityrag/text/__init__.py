"""Text processing: the shared analyzer, sentence splitting and chunking."""

from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.text.chunking import ChunkSpan, chunk_spans, make_chunk_id
from verityrag.text.sentences import sentence_spans, split_sentences
from verityrag.text.stopwords import ENGLISH_STOPWORDS

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
