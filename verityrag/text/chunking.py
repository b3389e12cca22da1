"""Chunking at sentence boundaries with overlap and stable chunk ids."""

from __future__ import annotations

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
    an answer that straddles a boundary is still whole in one chunk. A single
    sentence longer than ``max_words`` becomes a chunk of its own (it is never cut
    mid-sentence: the grounding checker cites whole sentences).

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
