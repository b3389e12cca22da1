"""The compiled dense scan (verityrag.index._scan_compiled) against the numpy loop: the same
float32 sums bit for bit, over int8 and float32 columns, across blocks and a partial last one;
and the exact top-k it serves unchanged."""

from __future__ import annotations

import numpy as np
import pytest

from verityrag.embed.hashing import HashingEmbedder
from verityrag.index import _scan_compiled, _vectors
from verityrag.index.live import LiveIndex
from verityrag.types import Chunk

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(not _scan_compiled.AVAILABLE, reason="numba is not installed"),
]


@pytest.mark.parametrize("dtype", [np.int8, np.float32])
@pytest.mark.parametrize("n", [1, 1000, 2500])
def test_compiled_scan_sums_as_the_numpy_loop_bit_for_bit(dtype: type, n: int) -> None:
    rng = np.random.default_rng(4)
    dim, block_cols = 64, 1024  # n = 2500: two whole blocks and a partial third
    blocks = []
    for _ in range(3):
        if dtype is np.int8:
            blocks.append(rng.integers(-127, 128, size=(dim, block_cols)).astype(np.int8))
        else:
            blocks.append(rng.standard_normal((dim, block_cols)).astype(np.float32))
    query = np.zeros(dim, dtype=np.float32)
    rows = sorted(rng.choice(dim, size=20, replace=False).tolist())
    query[rows] = rng.standard_normal(20).astype(np.float32)
    compiled = _vectors._add_rows(blocks, block_cols, query, rows, n, compiled=True)
    reference = _vectors._add_rows(blocks, block_cols, query, rows, n, compiled=False)
    assert compiled.dtype == reference.dtype == np.float32
    assert compiled.tobytes() == reference.tobytes()


def test_dense_top_k_is_the_same_with_the_numpy_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    embedder = HashingEmbedder()
    index = LiveIndex(embedder.dim)
    texts = [
        f"Chunk {i} tells of rivers, mills and engine number {i % 17} in valley {i % 5}." for i in range(600)
    ]
    chunks = [Chunk(f"d{i}#0", f"d{i}", "", t, 0, 0, len(t)) for i, t in enumerate(texts)]
    index.apply([(c.doc_id, [c], embedder.encode([c.text])) for c in chunks])
    questions = ["engine number 3 in the valley", "rivers and mills", "valley 4"]
    vectors = embedder.encode(questions)
    compiled = [[(h.chunk.chunk_id, h.score) for h in index.search_dense(v, 10)] for v in vectors]
    monkeypatch.setattr(_scan_compiled, "AVAILABLE", False)
    reference = [[(h.chunk.chunk_id, h.score) for h in index.search_dense(v, 10)] for v in vectors]
    assert compiled == reference
