"""An Elasticsearch index for the evaluation and the benchmarks: on ``ELASTICSEARCH_URL``, or on
an emulator started here when it is unset."""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable

from verityrag.index.elastic.backend import ElasticsearchIndex
from verityrag.index.elastic.connection import ENV_URL, ElasticsearchConfig
from verityrag.index.elastic.emulator import EMULATOR_NAME, ElasticsearchEmulator
from verityrag.text.analyzer import Analyzer


def index_from_env_or_emulator(
    dim: int,
    analyzer: Analyzer,
    vector_fingerprint: str | None,
    index_name: str,
    announce: Callable[[str], None] = print,
) -> ElasticsearchIndex:
    """An ``ElasticsearchIndex`` on ``ELASTICSEARCH_URL``, or on an emulator started here if it is unset.

    The index ``index_name`` is dropped and recreated (the eval and benchmarks start
    from an empty index). An emulator started here stops when the process exits.
    """
    emulator: ElasticsearchEmulator | None = None
    if os.environ.get(ENV_URL):
        config = ElasticsearchConfig.from_env(index_name=index_name)
        announce(f"Elasticsearch backend: {config.url} (index {index_name!r}, recreated)")
    else:
        emulator = ElasticsearchEmulator().start()
        atexit.register(emulator.stop)
        config = ElasticsearchConfig(
            url=emulator.url, index_name=index_name, replicas=0, request_timeout=60.0
        )
        announce(
            f"{ENV_URL} is not set: started the {EMULATOR_NAME} on {emulator.url}. "
            "An emulator, not Elasticsearch: its latencies say nothing about a real cluster."
        )
    index = ElasticsearchIndex(dim, config, analyzer=analyzer, vector_fingerprint=vector_fingerprint)
    index.emulator = emulator
    index.drop()
    index.warm_up()
    return index
