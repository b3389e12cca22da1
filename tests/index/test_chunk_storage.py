"""Chunks stored by columns: texts spilled to a temporary file, chunk ids, old snapshots."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from verityrag.index import _arena
from verityrag.index._arena import ByteArena
from verityrag.index._chunks import TextArena
from verityrag.index.live import LiveIndex
from verityrag.types import Chunk

pytestmark = pytest.mark.unit


def _add(index: LiveIndex, docs: dict[str, list[str]], make_chunk: Callable[..., Chunk]) -> None:
    index.apply(
        [
            (d, [make_chunk(d, t, i) for i, t in enumerate(texts)], np.ones((len(texts), 4), np.float32))
            for d, texts in docs.items()
        ]
    )


def test_text_arena_spills_to_a_file_and_reads_both_sides(tmp_path: object) -> None:
    arena = TextArena(spill_dir=str(tmp_path), memory_limit=64)
    first, _ = arena.append_texts(["café au lait", "x" * 30])
    assert not arena.spilled
    later, lengths = arena.append_texts(["naïve " * 10, "ü"])  # past 64 bytes: moves to a file
    assert arena.spilled
    assert list(tmp_path.iterdir()) == []  # type: ignore[attr-defined]  # unlinked at creation
    assert arena.read_text(first[0], len("café au lait".encode())) == "café au lait"
    assert arena.read_text(later[0], lengths[0]) == "naïve " * 10
    assert arena.read_text(later[1], lengths[1]) == "ü"


def test_spill_file_grows_ahead_of_its_appends_and_every_read_sees_its_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_arena, "_SPILL_FIRST_CAPACITY", 256)
    arena = ByteArena(spill_dir=str(tmp_path), memory_limit=16)
    blobs = [bytes([i]) * (i * 7 % 50 + 1) for i in range(120)]
    offsets = [arena.append(blob) for blob in blobs[:10]]
    first_map = arena._map
    offsets += [arena.append(blob) for blob in blobs[10:]]
    assert arena.size > 256 * 8  # the file doubled at least three times; each time mapped again
    assert arena._map is not first_map
    assert [arena.read(o, len(b)) for o, b in zip(offsets, blobs, strict=True)] == blobs
    assert first_map is not None
    assert first_map[offsets[3] : offsets[3] + len(blobs[3])] == blobs[3]
    image = tmp_path / "arena.bin"
    assert arena.write_to(image) == arena.size
    assert image.read_bytes() == b"".join(blobs)
    reopened = ByteArena.from_file(image, arena.size, spill_dir=str(tmp_path), memory_limit=16)
    tail = reopened.append(b"after the image")
    assert reopened.read(offsets[50], len(blobs[50])) == blobs[50]
    assert reopened.read(tail - 5, 10) == blobs[-1][-5:] + b"after"  # across the base and the memory


def test_live_index_spilled_texts_read_back_in_every_view(make_chunk: Callable[..., Chunk]) -> None:
    index = LiveIndex(dim=4, text_memory_limit=200)
    docs = {
        f"doc{i:03d}": [f"first part of document {i} rivers", f"second part {i} mountains"] for i in range(40)
    }
    _add(index, docs, make_chunk)
    old = index.snapshot()
    assert old.segment.chunks.texts.spilled
    _add(index, {"doc005": ["replaced text about volcanoes"]}, make_chunk)
    assert [c.text for c in index.chunks_of("doc005")] == ["replaced text about volcanoes"]
    assert [c.text for c in index.chunks_of("doc005", old)] == docs["doc005"]
    assert index.get_chunk("doc007#1") == make_chunk("doc007", "second part 7 mountains", 1)
    assert [h.chunk.text for h in index.search_lexical("volcanoes", 3)] == ["replaced text about volcanoes"]
    assert {c.chunk_id for c in index.live_chunks(old)} == {f"{d}#{i}" for d in docs for i in (0, 1)}


def test_live_index_hand_made_chunk_ids_and_positions_are_kept(make_chunk: Callable[..., Chunk]) -> None:
    index = LiveIndex(dim=4)
    odd = Chunk("custom-id", "docA", "Title A", "alpha text", 0, 0, 10)
    late = make_chunk("docB", "beta text", 5)  # chunk id docB#5 at the document's first slot
    index.apply([("docA", [odd], np.ones((1, 4), np.float32)), ("docB", [late], np.ones((1, 4), np.float32))])
    assert index.get_chunk("custom-id") == odd
    assert index.get_chunk("docB#5") == late
    assert index.get_chunk("docA#0") is None
    assert [h.chunk for h in index.search_lexical("alpha", 1)] == [odd]
    assert index.cosines(np.ones(4, np.float32) / 2, ["custom-id", "docB#5", "docB#0"]) == [2.0, 2.0, 0.0]
    index.delete("docA")
    assert index.get_chunk("custom-id") is None


def test_live_index_memory_bytes_names_every_part(make_chunk: Callable[..., Chunk]) -> None:
    index = LiveIndex(dim=4)
    _add(index, {f"d{i}": [f"text {i} common"] for i in range(100)}, make_chunk)
    mem = index.memory_bytes()
    assert {"postings", "block_maxima", "vectors_exact", "chunks_columns", "chunks_text_in_ram"} <= set(mem)
    assert mem["postings"] > 0
    assert mem["vectors_exact"] > 0
