"""Backends for the index contract suite: the embedded LiveIndex and Elasticsearch.

Elasticsearch is a real cluster when ``ELASTICSEARCH_URL`` is set (plus the usual
``ELASTICSEARCH_*`` auth variables; see docs/elasticsearch.md), otherwise the
noida-db **emulator** of the Elasticsearch 8 REST API, started once per session on
a free loopback port and stopped at the end. Every test gets a fresh index with
a unique name, dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from verityrag.index.live import LiveIndex
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer

ON_CLUSTER = bool(os.environ.get("ELASTICSEARCH_URL"))
# Test ids say which Elasticsearch ran: a real cluster or the emulator.
ES_ID = "elasticsearch-cluster" if ON_CLUSTER else "elasticsearch-emulator"
BACKENDS = [
    pytest.param("embedded", id="embedded", marks=pytest.mark.unit),
    pytest.param(ES_ID, id=ES_ID, marks=pytest.mark.integration),
]


@pytest.fixture(scope="session")
def es_url() -> Iterator[str]:
    """URL of the cluster (ELASTICSEARCH_URL) or of an emulator started for this session."""
    if ON_CLUSTER:
        yield os.environ["ELASTICSEARCH_URL"]
        return
    pytest.importorskip("noida_db", reason="the Elasticsearch emulator needs noida-db (requirements-dev.txt)")
    pytest.importorskip("elasticsearch", reason="the Elasticsearch backend needs the elasticsearch client")
    from verityrag.index.elastic import ElasticsearchEmulator

    emulator = ElasticsearchEmulator().start()
    try:
        yield emulator.url
    finally:
        emulator.stop()


@pytest.fixture
def es_config(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """``es_config(**overrides)`` -> an ElasticsearchConfig for a fresh, uniquely named index."""
    url = request.getfixturevalue("es_url")
    from verityrag.index.elastic import ElasticsearchConfig

    def make(**overrides: Any) -> ElasticsearchConfig:
        name = f"verityrag-contract-{uuid.uuid4().hex[:12]}"
        if ON_CLUSTER:
            return ElasticsearchConfig.from_env(index_name=name, **overrides)
        return ElasticsearchConfig(url=url, index_name=name, replicas=0, request_timeout=30.0, **overrides)

    return make


@pytest.fixture(params=BACKENDS)
def make_index(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """``make_index(dim=16, analyzer=DEFAULT_ANALYZER, **backend_kwargs)`` -> an empty index of the backend."""
    backend: str = request.param
    created: list[Any] = []

    def make(dim: int = 16, analyzer: Analyzer = DEFAULT_ANALYZER, **kwargs: Any) -> Any:
        if backend == "embedded":
            return LiveIndex(dim, analyzer=analyzer, **kwargs)
        from verityrag.index.elastic import ElasticsearchIndex

        index = ElasticsearchIndex(dim, request.getfixturevalue("es_config")(), analyzer=analyzer, **kwargs)
        created.append(index)
        return index

    make.backend = backend  # type: ignore[attr-defined]
    yield make
    for index in created:
        index.drop()
