"""Chunking at sentence boundaries: size bound, one-sentence overlap, stable ids, real spans."""

from __future__ import annotations

import itertools
import random

import pytest

from verityrag.text.chunking import ChunkSpan, chunk_spans, make_chunk_id
from verityrag.text.sentences import sentence_spans

pytestmark = pytest.mark.unit


def _sentence(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(["alpha", "beta", "gamma", "delta", "omega"]) for _ in range(n_words)]
    return " ".join(words).capitalize() + "."


def _text(seed: int, n_sentences: int, lo: int = 2, hi: int = 40) -> str:
    rng = random.Random(seed)
    return " ".join(_sentence(rng, rng.randint(lo, hi)) for _ in range(n_sentences))


def _sentences_in(text: str, chunk: ChunkSpan) -> list[tuple[int, int]]:
    return [(s, e) for s, e in sentence_spans(text) if chunk.start <= s and e <= chunk.end]


def _words(text: str, chunk: ChunkSpan) -> int:
    return len(text[chunk.start : chunk.end].split())


@pytest.mark.parametrize("seed", range(8))
def test_chunk_spans_random_text_no_chunk_over_max_words(seed: int) -> None:
    text = _text(seed, 40)
    chunks = chunk_spans("d", text, max_words=30)
    assert len(chunks) > 5
    for chunk in chunks:
        assert _words(text, chunk) <= 30  # a longer sentence is cut at words


def test_a_sentence_over_the_limit_is_cut_at_words_into_chunks_within_it() -> None:
    long_sentence = "Long " + " ".join(["word"] * 50) + " end."
    text = f"Short one. {long_sentence} Short two."
    chunks = [text[c.start : c.end] for c in chunk_spans("d", text, max_words=10)]
    assert all(len(c.split()) <= 10 for c in chunks)
    assert " ".join(chunks).count("word") >= 50  # nothing lost
    # A CSV line of any length: chunks of the limit, not one chunk of all of it.
    row = ",".join(f"cell{i}" for i in range(30)).replace(",", ", ")
    assert all(
        len(text_.split()) <= 8 for text_ in (row[c.start : c.end] for c in chunk_spans("d", row, 8, 0))
    )


def test_chunk_spans_equal_sentences_overlap_by_exactly_one_sentence() -> None:
    text = " ".join(f"Sentence number {i} has five words." for i in range(10))
    sentences = sentence_spans(text)
    chunks = chunk_spans("d", text, max_words=18, overlap_sentences=1)  # three sentences a chunk
    assert len(chunks) > 2
    for prev, nxt in itertools.pairwise(chunks):
        shared = set(_sentences_in(text, prev)) & set(_sentences_in(text, nxt))
        assert shared == {_sentences_in(text, prev)[-1]}
        assert nxt.start == _sentences_in(text, prev)[-1][0]
    assert chunks[-1].end == sentences[-1][1]


def test_chunk_spans_overlap_zero_tiles_sentences_without_sharing() -> None:
    text = _text(3, 30)
    chunks = chunk_spans("d", text, max_words=25, overlap_sentences=0)
    for prev, nxt in itertools.pairwise(chunks):
        assert prev.end < nxt.start


@pytest.mark.parametrize("seed", range(8))
def test_chunk_spans_every_chunk_adds_a_sentence_beyond_its_predecessor(seed: int) -> None:
    # Sentences A(14) B(14) C(28) with max 30: the overlap B does not fit beside C, so the
    # chunk after [A, B] must be [C], not a chunk holding only B again.
    text = _text(seed, 40, lo=2, hi=28)
    chunks = chunk_spans("d", text, max_words=30)
    for prev, nxt in itertools.pairwise(chunks):
        assert nxt.end > prev.end


def test_chunk_spans_overlap_that_does_not_fit_beside_next_sentence_is_dropped() -> None:
    a = "Alpha " + "a " * 12 + "end."
    b = "Beta " + "b " * 12 + "end."
    c = "Gamma " + "c " * 26 + "end."
    text = f"{a} {b} {c}"
    chunks = chunk_spans("d", text, max_words=30)
    assert [text[ch.start : ch.end] for ch in chunks] == [f"{a} {b}", c]


@pytest.mark.parametrize("seed", range(4))
def test_chunk_spans_all_sentences_covered(seed: int) -> None:
    text = _text(seed, 25, hi=20)  # sentences within the limit: each is whole in a chunk
    chunks = chunk_spans("d", text, max_words=20)
    for s, e in sentence_spans(text):
        assert any(c.start <= s and e <= c.end for c in chunks)


def test_chunk_spans_ids_are_doc_hash_position() -> None:
    chunks = chunk_spans("squad-x-001", _text(1, 20), max_words=20)
    assert [c.position for c in chunks] == list(range(len(chunks)))
    assert [c.chunk_id for c in chunks] == [f"squad-x-001#{i}" for i in range(len(chunks))]
    assert make_chunk_id("doc", 7) == "doc#7"


def test_chunk_spans_spans_start_and_end_on_sentence_boundaries() -> None:
    text = "  Lead in.  " + _text(2, 20, hi=20) + "  "
    starts = {s for s, _ in sentence_spans(text)}
    ends = {e for _, e in sentence_spans(text)}
    for chunk in chunk_spans("d", text, max_words=20):
        assert chunk.start in starts
        assert chunk.end in ends
        assert text[chunk.start : chunk.end] == text[chunk.start : chunk.end].strip()


def test_chunk_spans_blank_text_returns_no_chunks() -> None:
    assert chunk_spans("d", "   ") == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_words": 0}, "max_words must be >= 1"),
        ({"overlap_sentences": -1}, "overlap_sentences must be >= 0"),
    ],
)
def test_chunk_spans_bad_parameters_raise(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        chunk_spans("d", "Some text.", **kwargs)


def test_a_heading_starts_a_chunk_without_overlap() -> None:
    text = "Our shops\n\nWe have two shops. Both bake daily.\n\nOpening hours\n\nDay: Monday; Brackenford: Closed"
    chunks = chunk_spans("d", text, max_words=100, overlap_sentences=1)
    assert [text[c.start : c.end] for c in chunks] == [
        "Our shops\n\nWe have two shops. Both bake daily.",
        "Opening hours\n\nDay: Monday; Brackenford: Closed",
    ]
    # Prose without line breaks chunks as before.
    assert len(chunk_spans("d", "One. Two. Three.", max_words=100)) == 1
