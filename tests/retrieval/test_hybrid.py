"""HybridRetriever: lexical and dense candidates on one snapshot, fused, every score kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from verityrag.embed.hashing import HashingEmbedder
from verityrag.errors import InvalidInputError
from verityrag.index.live import LiveIndex
from verityrag.retrieval.hybrid import HybridRetriever

pytestmark = pytest.mark.unit


@pytest.fixture
def index(add_texts) -> LiveIndex:  # type: ignore[no-untyped-def]
    idx = LiveIndex(dim=384)
    add_texts(
        idx,
        {
            "steam": ["The steam engine converts heat into mechanical work."],
            "tesla": ["Nikola Tesla worked on alternating current motors."],
            "oxygen": ["Oxygen is a chemical element that supports combustion."],
        },
    )
    return idx


@pytest.mark.parametrize("fusion", ["rrf", "weighted"])
def test_search_keeps_bm25_and_dense_scores_and_ranks(index: LiveIndex, fusion: str) -> None:
    retriever = HybridRetriever(index, HashingEmbedder(), fusion=fusion)  # type: ignore[arg-type]
    hits = retriever.search("How does a steam engine make work from heat?", k=2)
    assert len(hits) == 2
    top = hits[0]
    assert top.chunk.doc_id == "steam"
    assert top.bm25_rank == 1
    assert top.dense_rank == 1
    assert top.bm25_score == pytest.approx(
        index.search_lexical("How does a steam engine make work from heat?", 1)[0].score
    )
    assert top.dense_score > 0
    assert hits[0].score >= hits[1].score


def test_search_query_without_terms_returns_nothing(index: LiveIndex) -> None:
    assert HybridRetriever(index, HashingEmbedder()).search("the of and", k=3) == []


def test_search_on_old_snapshot_does_not_see_later_docs(index: LiveIndex, add_texts) -> None:  # type: ignore[no-untyped-def]
    retriever = HybridRetriever(index, HashingEmbedder())
    before = index.snapshot()
    add_texts(index, {"zebra": ["Zebras have black and white stripes."]})
    assert all(h.chunk.doc_id != "zebra" for h in retriever.search("zebra stripes", 5, before))
    assert retriever.search("zebra stripes", 5)[0].chunk.doc_id == "zebra"


def test_retriever_unknown_fusion_raises(index: LiveIndex) -> None:
    with pytest.raises(ValueError, match="rrf, weighted"):
        HybridRetriever(index, HashingEmbedder(), fusion="max")  # type: ignore[arg-type]


def test_search_negative_k_raises_naming_k(index: LiveIndex) -> None:
    # [:k] with k=-1 returned every candidate but the last.
    with pytest.raises(InvalidInputError) as err:
        HybridRetriever(index, HashingEmbedder()).search("steam engine", k=-1)
    assert err.value.field == "k"


def test_dense_side_in_a_worker_thread_finds_the_same_hits(
    index: LiveIndex, add_texts: Callable[..., None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Large indexes run the dense side beside BM25 in a thread; the hits must not depend on it.
    from verityrag.retrieval import hybrid

    add_texts(index, {f"d{i}": [f"Steam engines of model {i} burn coal and wood."] for i in range(40)})
    retriever = HybridRetriever(index, HashingEmbedder())
    questions = ["How does a steam engine make work?", "coal and wood", "Tesla motors", "zzz"]
    serial = [retriever.search(q, 5) for q in questions]
    monkeypatch.setattr(hybrid, "PARALLEL_FROM", 0)
    monkeypatch.setattr(hybrid.os, "cpu_count", lambda: 2)
    threads: set[str] = set()
    dense = retriever._dense

    def recording(*args: Any, **kwargs: Any) -> Any:
        threads.add(hybrid.threading.current_thread().name)
        return dense(*args, **kwargs)

    monkeypatch.setattr(retriever, "_dense", recording)
    assert [retriever.search(q, 5) for q in questions] == serial
    assert threads
    assert all(name.startswith("verityrag-dense") for name in threads)
