"""Chunking at sentence boundaries with overlap and stable chunk ids."""

from __future__ import annotations

import re
from dataclasses import dataclass

from verityrag.text.sections import heading_flags
from verityrag.text.sentences import sentence_spans


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """A chunk of a document: its stable id, position and character span in the document text."""

    chunk_id: str
    position: int
    start: int
    end: int


def make_chunk_id(doc_id: str, position: int) -> str:
    """Stable id derived from (doc id, position): re-ingesting a document reproduces it."""
    return f"{doc_id}#{position}"


def chunk_spans(doc_id: str, text: str, max_words: int = 120, overlap_sentences: int = 1) -> list[ChunkSpan]:
    """Group whole sentences into chunks of at most ``max_words`` words.

    Consecutive chunks share their last/first ``overlap_sentences`` sentences so
    an answer that straddles a boundary is still whole in one chunk. A sentence
    longer than ``max_words`` (a text without sentence ends: a CSV line, a log) is cut at word
    boundaries into pieces of ``max_words`` words, each a sentence of its own: no chunk is longer
    than ``max_words`` words.

    A heading (:mod:`verityrag.text.sections`) starts a chunk, with no overlap: a section's
    chunk holds its name, and no chunk ends on the name of the section after it.
    """
    if max_words < 1:
        raise ValueError("max_words must be >= 1")
    if overlap_sentences < 0:
        raise ValueError("overlap_sentences must be >= 0")
    spans = sentence_spans(text)
    if not spans:
        return []
    words = [len(text[s:e].split()) for s, e in spans]
    if max(words) > max_words:
        spans = _bounded(text, spans, words, max_words)
        words = [len(text[s:e].split()) for s, e in spans]
    headings = heading_flags(text, spans)
    chunks: list[ChunkSpan] = []
    first = 0
    while first < len(spans):
        last = first
        total = words[first]
        while (
            last + 1 < len(spans)
            and total + words[last + 1] <= max_words
            # a heading after something that is not one starts the next chunk
            and not (headings[last + 1] and not headings[last])
        ):
            last += 1
            total += words[last]
        position = len(chunks)
        chunks.append(ChunkSpan(make_chunk_id(doc_id, position), position, spans[first][0], spans[last][1]))
        if last + 1 >= len(spans):
            break
        # Step back for the overlap, but always make progress, and shrink the overlap
        # until the next new sentence fits beside it: otherwise the next chunk would
        # hold only overlap, a repeat of this one.
        nxt = last + 1
        if headings[nxt]:
            first = nxt
            continue
        first = max(nxt - overlap_sentences, first + 1)
        while first < nxt and sum(words[first : nxt + 1]) > max_words:
            first += 1
    return chunks


_WORD_RUN = re.compile(r"\S+")


def _bounded(
    text: str, spans: list[tuple[int, int]], counts: list[int], max_words: int
) -> list[tuple[int, int]]:
    """``spans`` (of ``counts`` words each) with each span of more than ``max_words`` words cut
    into pieces of that many."""
    out: list[tuple[int, int]] = []
    for (start, end), count in zip(spans, counts, strict=True):
        if count <= max_words:
            out.append((start, end))
            continue
        words = [m.span() for m in _WORD_RUN.finditer(text, start, end)]
        for i in range(0, len(words), max_words):
            piece = words[i : i + max_words]
            out.append((piece[0][0], piece[-1][1]))
    return out
