"""Metadata filters: parsing and refusals, the metadata index against the reference ``matches``,
filtered search on the embedded index (exact and ANN), and through the pipeline."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from verityrag import AbstainReason, Document, Settings, VerityRAGPipeline
from verityrag.errors import InvalidInputError
from verityrag.index.filters import MetadataFilter, MetadataIndex
from verityrag.index.live import LiveIndex
from verityrag.types import Chunk

pytestmark = pytest.mark.unit

METADATA: dict[str, dict[str, Any]] = {
    "a": {"lang": "en", "year": 2023, "tags": ["steam", "history"], "collection": "default"},
    "b": {"lang": "de", "year": 2024, "tags": ["steam"], "collection": "default"},
    "c": {"lang": "en", "year": 2024.0, "draft": True, "collection": "notes"},
    "d": {"lang": "fr", "year": "2024", "draft": False, "nested": {"x": 1}},
    "e": {},
}


def test_from_dict_exact_and_in_conditions_round_trip() -> None:
    flt = MetadataFilter.from_dict({"lang": "en", "year": {"$in": [2023, 2024]}})
    assert flt is not None
    assert flt.conditions == (("lang", ("en",)), ("year", (2023, 2024)))
    assert flt.to_dict() == {"lang": "en", "year": {"$in": [2023, 2024]}}
    excluding = MetadataFilter.from_dict({"lang": "en", "collection": {"$nin": ["demo"]}})
    assert excluding is not None
    assert excluding.excluded == (("collection", ("demo",)),)
    assert excluding.to_dict() == {"lang": "en", "collection": {"$nin": ["demo"]}}
    assert MetadataFilter.from_dict({}) is None
    assert MetadataFilter.from_dict(None) is None


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ({"lang": {"$eq": "en"}}, r"filter\.lang: operators: one of \$in or \$nin"),
        ({"lang": {"$in": ["en"], "$nin": ["de"]}}, r"filter\.lang: operators: one of"),
        ({"lang": {"$nin": "en"}}, r"filter\.lang: \$nin must be a list"),
        ({"lang": {"$nin": []}}, r"filter\.lang: \$in needs at least one value"),
        ({"lang": {"$in": "en"}}, r"filter\.lang: \$in must be a list"),
        ({"lang": {"$in": []}}, r"filter\.lang: \$in needs at least one value"),
        ({"lang": None}, r"filter\.lang: None is not a string"),
        ({"lang": {"x": 1}}, r"one of \$in or \$nin is supported, got x"),
        ({"lang": ["en"]}, r"filter\.lang: \['en'\] is not a string"),
        ({"score": float("nan")}, r"filter\.score: nan is not"),
        ({f"k{i}": 1 for i in range(33)}, r"filter: names 33 keys; the limit is 32"),
    ],
)
def test_from_dict_bad_filter_is_refused_naming_the_key(spec: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        MetadataFilter.from_dict(spec)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"lang": "en"}, {"a", "c"}),
        ({"lang": {"$in": ["de", "fr"]}}, {"b", "d"}),
        ({"year": 2024}, {"b", "c"}),  # 2024 == 2024.0; the string "2024" is not a number
        ({"year": "2024"}, {"d"}),
        ({"tags": "steam"}, {"a", "b"}),  # a list matches when an element does
        ({"tags": "steam", "lang": "en"}, {"a"}),
        ({"draft": True}, {"c"}),
        ({"draft": 1}, set()),  # true is not 1
        ({"collection": "default"}, {"a", "b"}),
        ({"nested": 1}, set()),
        ({"missing": "x"}, set()),
        ({"collection": {"$nin": ["default"]}}, {"c", "d", "e"}),  # without the key: passes
        ({"tags": {"$nin": ["steam"]}}, {"c", "d", "e"}),  # a list fails when an element is excluded
        ({"lang": "en", "collection": {"$nin": ["default"]}}, {"c"}),
        ({"missing": {"$nin": ["x"]}}, {"a", "b", "c", "d", "e"}),
    ],
)
def test_metadata_index_agrees_with_matches(spec: dict[str, Any], expected: set[str]) -> None:
    flt = MetadataFilter.from_dict(spec)
    assert flt is not None
    index = MetadataIndex()
    index.put_many(METADATA.items())
    assert index.matching(flt) == expected
    assert {d for d, m in METADATA.items() if flt.matches(m)} == expected


def test_metadata_index_replace_and_remove_forget_old_values() -> None:
    index = MetadataIndex()
    index.put("a", {"lang": "en"})
    index.put("a", {"lang": "de"})
    flt_en, flt_de = MetadataFilter.from_dict({"lang": "en"}), MetadataFilter.from_dict({"lang": "de"})
    assert flt_en is not None
    assert flt_de is not None
    assert (index.matching(flt_en), index.matching(flt_de)) == (set(), {"a"})
    index.remove("a")
    assert index.matching(flt_de) == set()
    assert index.doc_ids() == []


def _index(dense_backend: str = "exact") -> tuple[LiveIndex, np.ndarray]:
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(40, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = LiveIndex(16, dense_backend=dense_backend)  # type: ignore[arg-type]
    for i in range(40):
        text = f"steam engine number {i} " + ("watt " * (i % 5))
        index.upsert(f"d{i}", [Chunk(f"d{i}#0", f"d{i}", "", text, 0, 0, len(text))], vectors[i : i + 1])
    return index, vectors


@pytest.mark.parametrize("dense_backend", ["exact", "hnsw"])
def test_filtered_dense_search_is_the_exact_top_k_among_allowed_documents(dense_backend: str) -> None:
    if dense_backend == "hnsw":
        pytest.importorskip("hnswlib")
    index, vectors = _index(dense_backend)
    allowed = {f"d{i}" for i in range(0, 40, 3)}
    query = vectors[7]
    sims = vectors @ query
    expected = sorted((i for i in range(40) if f"d{i}" in allowed), key=lambda i: (-sims[i], i))[:4]
    got = index.search_dense(query, 4, doc_ids=allowed)
    assert [s.chunk.doc_id for s in got] == [f"d{i}" for i in expected]
    np.testing.assert_allclose([s.score for s in got], sims[expected], atol=1e-5)


def test_filtered_lexical_search_ranks_allowed_documents_as_unfiltered_scores() -> None:
    index, _ = _index()
    allowed = {"d4", "d9", "d10", "d13"}
    full = {s.chunk.doc_id: s.score for s in index.search_lexical("watt engine", 40)}
    got = index.search_lexical("watt engine", 3, doc_ids=allowed)
    expected = sorted(allowed, key=lambda d: (-full[d], int(d[1:])))[:3]
    assert [s.chunk.doc_id for s in got] == expected
    assert [s.score for s in got] == pytest.approx([full[d] for d in expected])
    assert index.search_lexical("watt", 5, doc_ids=set()) == []
    assert index.search_dense(np.ones(16, np.float32) / 4, 5, doc_ids=["nope"]) == []


def test_filtered_search_on_an_old_snapshot_sees_the_document_as_it_was() -> None:
    index, _ = _index()
    snap = index.snapshot()
    index.delete("d4")
    got = index.search_lexical("watt", 5, snapshot=snap, doc_ids={"d4"})
    assert [s.chunk.doc_id for s in got] == ["d4"]
    assert index.search_lexical("watt", 5, doc_ids={"d4"}) == []


# ------------------------------------------------------------- pipeline


def _pipeline(tmp_path: Path | None) -> VerityRAGPipeline:
    # No reader (a model): what a filter decides is the evidence; the selector answers from it.
    p = VerityRAGPipeline(data_dir=tmp_path, settings=Settings().replace(chunk_max_words=40, reader=False))
    p.ingest_documents(
        [
            Document(
                "watt",
                "James Watt",
                "James Watt improved the steam engine in 1776.",
                {"lang": "en", "topic": "engines"},
            ),
            Document(
                "newcomen",
                "Newcomen",
                "Thomas Newcomen built the first practical steam engine in 1712.",
                {"lang": "en", "topic": "engines"},
            ),
            Document(
                "rhine",
                "Rhine",
                "The Rhine flows from the Alps to the North Sea.",
                {"lang": "de", "topic": "rivers"},
            ),
        ]
    )
    return p


@pytest.mark.parametrize("stored", [False, True])
def test_pipeline_query_filter_keeps_evidence_to_matching_documents(tmp_path: Path, stored: bool) -> None:
    p = _pipeline(tmp_path / "data" if stored else None)
    result = p.query("Who improved the steam engine?", filter={"topic": "rivers"})
    assert {h.chunk.doc_id for h in result.evidence} == {"rhine"}
    assert all(c.doc_id == "rhine" for c in result.citations)
    nothing = p.query("Who improved the steam engine?", filter={"topic": "poetry"})
    assert nothing.abstained
    assert nothing.abstain_reason is AbstainReason.NO_EVIDENCE
    allowed = p.query("Who improved the steam engine?", filter={"lang": {"$in": ["en"]}})
    assert {h.chunk.doc_id for h in allowed.evidence} == {"watt", "newcomen"}
    assert all(c.doc_id in {"watt", "newcomen"} for c in allowed.citations)


def test_pipeline_retriever_with_filter_returns_only_matching_chunks(tmp_path: Path) -> None:
    p = _pipeline(tmp_path / "data")
    doc_ids = p.writer.matching({"topic": "engines"})
    hits = p.retriever.search("Rhine Alps steam", 10, doc_ids=doc_ids)
    assert hits
    assert {h.chunk.doc_id for h in hits} <= {"watt", "newcomen"}


@pytest.mark.parametrize("stored", [False, True])
def test_pipeline_list_documents_pages_in_doc_id_order_with_filter(tmp_path: Path, stored: bool) -> None:
    p = _pipeline(tmp_path / "data" if stored else None)
    total, page = p.list_documents(limit=2)
    assert total == 3
    assert [d.doc_id for d in page] == ["newcomen", "rhine"]
    assert (page[0].title, page[0].metadata) == ("Newcomen", {"lang": "en", "topic": "engines"})
    assert (page[0].n_chunks, page[0].ingested_at is not None) == (1, True)
    total, page = p.list_documents(offset=2, limit=2)
    assert (total, [d.doc_id for d in page]) == (3, ["watt"])
    total, page = p.list_documents({"lang": "en"})
    assert (total, [d.doc_id for d in page]) == (2, ["newcomen", "watt"])
    p.delete_document("watt")
    assert p.list_documents({"lang": "en"})[0] == 1
    with pytest.raises(InvalidInputError, match="limit"):
        p.list_documents(limit=0)


def test_pipeline_restart_restores_metadata_for_filters(tmp_path: Path) -> None:
    _pipeline(tmp_path / "data")
    again = VerityRAGPipeline(data_dir=tmp_path / "data", settings=Settings().replace(chunk_max_words=40))
    assert again.list_documents({"topic": "rivers"})[0] == 1


@pytest.mark.unit
def test_a_metadata_index_pickles_as_its_documents_pairs_and_comes_back_whole() -> None:
    index = MetadataIndex()
    index.put_many([("a", {"lang": "en", "tags": ["x", "y"]}), ("b", {}), ("c", {"lang": "fr"})])
    index.add_missing(["d"])
    for twin in (pickle.loads(pickle.dumps(index)), pickle.loads(pickle.dumps(index.frozen()))):
        assert twin.doc_ids() == index.doc_ids()
        assert twin._postings == index._postings
        assert twin.matching(MetadataFilter.from_dict({"lang": "en"})) == {"a"}
        twin.put("b", {"lang": "en"})  # a document's pairs replaced after, as before
        twin.remove("a")
        assert twin.matching(MetadataFilter.from_dict({"lang": "en"})) == {"b"}
        assert twin.count("tags", "x") == 0
