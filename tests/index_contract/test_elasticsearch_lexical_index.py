"""``verityrag.index.elastic.lexical.ElasticsearchLexicalIndex``: the reference design's lexical drop-in,
on the noida-db emulator of the Elasticsearch 8 REST API (or ELASTICSEARCH_URL's cluster)."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from verityrag.errors import InvalidInputError, StorageError
from verityrag.index.elastic import ElasticsearchConfig
from verityrag.index.elastic.lexical import ElasticsearchLexicalIndex

pytest.importorskip("elasticsearch")

TEXTS = {
    "c1": "Nikola Tesla designed the alternating current induction motor.",
    "c2": "Thomas Edison promoted direct current for power distribution.",
    "c3": "The Super Bowl is the annual championship game of the NFL.",
}


@pytest.fixture(params=["terms", "text"])
def lexical(request: pytest.FixtureRequest, es_config: Callable[..., ElasticsearchConfig]) -> Iterator[Any]:
    index = ElasticsearchLexicalIndex(config=es_config(), field=request.param)
    index.add_batch(list(TEXTS), list(TEXTS.values()))
    yield index
    index.client.options(ignore_status=404).indices.delete(index=index.index_name)


@pytest.mark.integration
def test_scores_come_in_the_order_of_the_chunk_ids_given(lexical: Any) -> None:
    scores = lexical.scores("alternating current motor", ["c3", "c1", "c2", "unknown"])
    assert isinstance(scores, np.ndarray)
    assert scores[0] == 0.0  # no term in common
    assert scores[1] > scores[2] > 0.0  # c1 matches more terms than c2 ("current" only)
    assert scores[3] == 0.0
    assert lexical.scores("anything", []).size == 0


@pytest.mark.integration
def test_added_chunks_are_searchable_at_once_and_reset_empties_the_index(lexical: Any) -> None:
    assert [cid for cid, _ in lexical.search("championship game", 2)] == ["c3"]
    lexical.add_batch(["c4"], ["A championship parade followed the game."])
    assert {cid for cid, _ in lexical.search("championship", 5)} == {"c3", "c4"}
    lexical.delete(["c3"])
    assert [cid for cid, _ in lexical.search("championship", 5)] == ["c4"]
    assert len(lexical) == 3
    lexical.reset()
    assert len(lexical) == 0
    assert lexical.search("championship", 5) == []


@pytest.mark.integration
def test_a_delete_the_cluster_refuses_raises_and_the_chunk_stays_searchable(lexical: Any) -> None:
    # A write block: Elasticsearch answers 200 and fails each item (403 cluster_block_exception).
    lexical.client.indices.put_settings(index=lexical.index_name, settings={"index.blocks.write": True})
    try:
        with pytest.raises(StorageError, match=r"1 of 1 chunk deletion\(s\) failed.*cluster_block"):
            lexical.delete(["c3"])
    finally:
        lexical.client.indices.put_settings(index=lexical.index_name, settings={"index.blocks.write": False})
    assert [cid for cid, _ in lexical.search("championship game", 5)] == ["c3"]
    lexical.delete(["c3", "never-added"])  # an id that is not there is not a failure
    assert lexical.search("championship game", 5) == []


@pytest.mark.integration
def test_add_batch_rejects_mismatched_or_repeated_ids(es_config: Callable[..., ElasticsearchConfig]) -> None:
    index = ElasticsearchLexicalIndex(config=es_config())
    with pytest.raises(InvalidInputError, match="2 texts for 1 chunk ids"):
        index.add_batch(["c1"], ["one", "two"])
    with pytest.raises(InvalidInputError, match="duplicates"):
        index.add_batch(["c1", "c1"], ["one", "two"])
    index.add_batch([], [])  # nothing to do, nothing contacted


@pytest.mark.integration
def test_an_index_the_cluster_refuses_to_create_says_why(
    es_config: Callable[..., ElasticsearchConfig], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a cluster answers to settings it refuses (the emulator accepts every setting).
    from elasticsearch._sync.client.indices import IndicesClient

    refusal = {"type": "illegal_argument_exception", "reason": "illegal k1 value: -1.0"}
    monkeypatch.setattr(
        IndicesClient,
        "create",
        lambda self, **kwargs: SimpleNamespace(body={"error": refusal, "status": 400}),
    )
    index = ElasticsearchLexicalIndex(config=es_config(), k1=-1.0)
    with pytest.raises(StorageError, match=r"cannot create the index.*illegal k1 value"):
        index.warm_up()


@pytest.mark.unit
def test_missing_client_package_gives_the_install_line(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_elasticsearch(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "elasticsearch" or name.startswith("elasticsearch."):
            raise ImportError("No module named 'elasticsearch'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_elasticsearch)
    with pytest.raises(ImportError, match="pip install elasticsearch"):
        ElasticsearchLexicalIndex(config=ElasticsearchConfig(url="http://127.0.0.1:9"))
