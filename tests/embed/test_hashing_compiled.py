"""The compiled hashing features (verityrag.embed._hashing_compiled) against the Python path: the
same vectors bit for bit (stored vectors stay valid whichever path made them), on real text and
on the texts where counting or order could differ."""

from __future__ import annotations

import json
import random
import zlib
from pathlib import Path

import numpy as np
import pytest

from verityrag.embed import _hashing_compiled
from verityrag.embed.hashing import HashingEmbedder
from verityrag.text.analyzer import Analyzer

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(not _hashing_compiled.AVAILABLE, reason="numba is not installed"),
]

CORPUS = Path(__file__).resolve().parents[2] / "data" / "built" / "corpus.jsonl"
HARD = [
    "",
    "the of and",  # only stopwords: no features
    "engine",
    "engine engine engine engine",  # one unigram many times, one bigram many times
    "red blue red blue red blue red",  # repeated pairs, both orders
    "Café Straße über naïve ℌ ℃ déjà vu",  # folded and multi-byte terms
    "東京 大阪 東京 大阪 ソウル",
    "a1 b2 a1 b2 x_y 3.14 2024-05-01",
    " ".join(f"term{i % 37}" for i in range(500)),  # long, with many repeats
]


def _bits(vectors: np.ndarray) -> np.ndarray:
    return vectors.view(np.uint32)


@pytest.mark.parametrize("ngram_range", [(1, 2), (1, 1), (2, 2)])
@pytest.mark.parametrize("dim", [384, 8, 1000])
def test_compiled_vectors_are_the_python_paths_bit_for_bit(ngram_range: tuple[int, int], dim: int) -> None:
    # dim 8: many features share a cell, so the order of the float32 additions shows
    embedder = HashingEmbedder(dim=dim, ngram_range=ngram_range, analyzer=Analyzer())
    texts = list(HARD)
    if CORPUS.exists():
        with CORPUS.open(encoding="utf-8") as fh:
            texts += [json.loads(line)["text"] for _, line in zip(range(400), fh, strict=False)]
    assert np.array_equal(_bits(embedder.encode(texts)), _bits(embedder.encode_reference(texts)))
    # one text at a time too (each batch numbers its terms afresh)
    for text in HARD:
        assert np.array_equal(_bits(embedder.encode([text])), _bits(embedder.encode_reference([text])))


def test_the_crc_run_on_over_more_bytes_is_zlibs() -> None:
    rng = random.Random(3)
    table = _hashing_compiled._CRC_TABLE
    for _ in range(200):
        head = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 12)))
        tail = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        data = np.frombuffer(b"xx" + tail + b"yy", dtype=np.uint8)
        got = _hashing_compiled._crc_continued(zlib.crc32(head), data, 2, 2 + len(tail), table)
        assert got == zlib.crc32(head + tail)


def test_ngrams_past_two_take_the_python_path() -> None:
    embedder = HashingEmbedder(ngram_range=(1, 3))
    assert np.array_equal(_bits(embedder.encode(HARD)), _bits(embedder.encode_reference(HARD)))
    with pytest.raises(ValueError, match="bigrams"):
        _hashing_compiled.hashed_counts([["a", "b", "c"]], 8, (1, 3), zlib.crc32)
