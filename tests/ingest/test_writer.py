"""DocumentWriter: metadata every reader can serve, all-or-nothing batches, provenance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from verityrag import InvalidInputError, Settings, VerityRAGPipeline
from verityrag.ingest.writer import METADATA_LIMITS, check_metadata_shape
from verityrag.types import Document

pytestmark = pytest.mark.unit


def _nested(depth: int) -> dict[str, Any]:
    value: Any = "leaf"
    for _ in range(depth - 1):
        value = [value]
    return {"k": value}


@pytest.mark.parametrize(
    ("metadata", "words"),
    [
        (_nested(METADATA_LIMITS.depth + 1), f"nests more than {METADATA_LIMITS.depth} levels deep"),
        (_nested(10_000), f"the limit is {METADATA_LIMITS.depth} levels"),  # no RecursionError
        ({f"k{i}": {"x": i} for i in range(METADATA_LIMITS.keys // 2 + 1)}, r"keys \(all levels\)"),
        ({"blob": "é" * (METADATA_LIMITS.bytes // 2)}, f"the limit is {METADATA_LIMITS.bytes:,} bytes"),
    ],
)
def test_metadata_over_a_limit_is_refused_naming_the_limit(metadata: dict[str, Any], words: str) -> None:
    pipeline = VerityRAGPipeline(data_dir=None, settings=Settings(reader=False))
    with pytest.raises(InvalidInputError, match=words) as err:
        pipeline.ingest_document("d", "T", "Some text.", metadata)
    assert err.value.field == "metadata"
    assert pipeline.get_document("d") is None


def test_metadata_at_the_limits_is_accepted() -> None:
    check_metadata_shape(_nested(METADATA_LIMITS.depth))
    check_metadata_shape({f"k{i}": i for i in range(METADATA_LIMITS.keys)})
    pipeline = VerityRAGPipeline(data_dir=None, settings=Settings(reader=False))
    deep = _nested(METADATA_LIMITS.depth)
    pipeline.ingest_document("d", "T", "Some text.", deep)
    got = pipeline.get_document("d")
    assert got is not None
    assert got.metadata == deep


def test_batch_is_one_store_transaction_whatever_the_batch_size(tmp_path: Path) -> None:
    pipeline = VerityRAGPipeline(data_dir=tmp_path, settings=Settings(reader=False))
    assert pipeline.store is not None
    calls: list[int] = []
    put_many = pipeline.store.put_many

    def counting(items: Any, *args: Any, **kwargs: Any) -> None:
        calls.append(len(items))
        put_many(items, *args, **kwargs)

    pipeline.store.put_many = counting  # type: ignore[method-assign]
    docs = [(f"d{i}", "T", f"Document {i} about rivers.") for i in range(1_300)]
    assert pipeline.ingest_documents(docs, batch_size=512) == 1_300
    assert calls == [1_300]  # was [512, 512, 276]: a crash in between left a part stored
    assert pipeline.store.count() == pipeline.index.n_documents == 1_300


def test_batch_failing_in_its_last_piece_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = VerityRAGPipeline(data_dir=tmp_path, settings=Settings(reader=False))
    pipeline.ingest_document("kept", "T", "A document there before the batch.")
    encode = pipeline.embedder.encode
    seen: list[int] = []

    def failing(texts: list[str]) -> np.ndarray:
        seen.append(len(texts))
        if len(seen) == 3:
            raise RuntimeError("the embedder failed on the third piece")
        return encode(texts)

    monkeypatch.setattr(pipeline.embedder, "encode", failing)
    docs = [(f"d{i}", "T", f"Document {i} about rivers.") for i in range(25)]
    with pytest.raises(RuntimeError, match="third piece"):
        pipeline.ingest_documents(docs, batch_size=10)
    assert pipeline.store is not None
    assert pipeline.store.count() == pipeline.index.n_documents == 1
    assert not pipeline.index.has_document("d0")


@pytest.mark.parametrize("persisted", [True, False])
def test_provenance_gives_source_and_ingest_time(tmp_path: Path, persisted: bool) -> None:
    pipeline = VerityRAGPipeline(data_dir=tmp_path if persisted else None, settings=Settings(reader=False))
    pipeline.ingest_document("a", "A", "Alpha text.", {"source": "wiki"})
    pipeline.ingest_documents([("b", "B", "Beta text.")])
    found = pipeline.writer.provenance(["a", "b", "nobody"])
    assert set(found) == {"a", "b"}
    assert (found["a"].source, found["b"].source) == ("wiki", None)
    assert found["a"].ingested_at is not None
    assert found["b"].ingested_at is not None
    assert found["a"].ingested_at <= found["b"].ingested_at
    pipeline.delete_document("a")
    assert "a" not in pipeline.writer.provenance(["a"])


def test_bulk_ingest_analyzes_each_chunk_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # The hashing embedder and BM25 analyze the same chunk text; counted at the commit, a batch
    # larger than the analyzer's cache of recent texts was analyzed twice.
    from verityrag.text import analyzer as analyzer_module

    monkeypatch.setattr(analyzer_module, "_RECENT", 8)
    fresh: dict[str, int] = {}
    tokens = analyzer_module._tokens

    def counting(text: str) -> list[str]:
        fresh[text] = fresh.get(text, 0) + 1
        return tokens(text)

    monkeypatch.setattr(analyzer_module, "_tokens", counting)
    pipeline = VerityRAGPipeline(data_dir=None, settings=Settings(reader=False))
    docs = [(f"d{i}", "", f"Document number {i} is about rivers and lakes.") for i in range(60)]
    pipeline.ingest_documents(docs, batch_size=4)
    texts = [c.text.lower() for c in pipeline.index.live_chunks()]
    assert len(texts) == 60
    assert [fresh.get(t) for t in texts] == [1] * 60


def test_a_batch_comes_back_document_by_document_and_an_invalid_one_is_named_where_it_stands(
    tmp_path: Path,
) -> None:
    pipeline = VerityRAGPipeline(data_dir=tmp_path, settings=Settings(reader=False, chunk_max_words=8))
    long_text = " ".join(f"Sentence number {i} is here." for i in range(12))
    pipeline.ingest_document("a", "A", "First version.")
    results = pipeline.ingest_batch([Document("a", "A", "Second version."), Document("b", "B", long_text)])
    assert [(r.doc_id, r.replaced) for r in results] == [("a", True), ("b", False)]
    assert [r.n_chunks for r in results] == [len(pipeline.index.chunks_of(d)) for d in ("a", "b")]
    assert results[1].n_chunks > 1
    with pytest.raises(InvalidInputError) as err:
        pipeline.ingest_batch(
            [Document("c", "C", "Fine."), Document("d", "D", "x" * 10_000_000)], name="files"
        )
    assert err.value.field == "files[1].text"
    assert pipeline.get_document("c") is None  # nothing of the batch written
    pipeline.close()
