"""The Elasticsearch backend: the index contract on a cluster (BM25 + dense vectors in one index).

``ElasticsearchIndex`` satisfies ``verityrag.index.protocol.IndexBackend``, like the
embedded ``LiveIndex``; pass it as ``VerityRAGPipeline(index=...)`` or set
``Settings(backend="elasticsearch")`` / ``VERITYRAG_BACKEND=elasticsearch`` with
``ELASTICSEARCH_URL``. Importing this package does not import the client; the
first request does. See docs/elasticsearch.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.index.elastic.backend import SCORING_MODES as SCORING_MODES
    from verityrag.index.elastic.backend import ElasticsearchIndex as ElasticsearchIndex
    from verityrag.index.elastic.backend import Scoring as Scoring
    from verityrag.index.elastic.connection import DEFAULT_INDEX_NAME as DEFAULT_INDEX_NAME
    from verityrag.index.elastic.connection import ElasticsearchConfig as ElasticsearchConfig
    from verityrag.index.elastic.emulator import EMULATOR_NAME as EMULATOR_NAME
    from verityrag.index.elastic.emulator import ElasticsearchEmulator as ElasticsearchEmulator
    from verityrag.index.elastic.lexical import ElasticsearchLexicalIndex as ElasticsearchLexicalIndex
    from verityrag.index.elastic.mapping import MAPPING_VERSION as MAPPING_VERSION
    from verityrag.index.elastic.snapshot import ElasticsearchSnapshot as ElasticsearchSnapshot
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.index.elastic.backend": (
                "SCORING_MODES",
                "ElasticsearchIndex",
                "Scoring",
            ),
            "verityrag.index.elastic.connection": (
                "DEFAULT_INDEX_NAME",
                "ElasticsearchConfig",
            ),
            "verityrag.index.elastic.emulator": (
                "EMULATOR_NAME",
                "ElasticsearchEmulator",
            ),
            "verityrag.index.elastic.lexical": ("ElasticsearchLexicalIndex",),
            "verityrag.index.elastic.mapping": ("MAPPING_VERSION",),
            "verityrag.index.elastic.snapshot": ("ElasticsearchSnapshot",),
        },
    )

__all__ = [
    "DEFAULT_INDEX_NAME",
    "EMULATOR_NAME",
    "MAPPING_VERSION",
    "SCORING_MODES",
    "ElasticsearchConfig",
    "ElasticsearchEmulator",
    "ElasticsearchIndex",
    "ElasticsearchLexicalIndex",
    "ElasticsearchSnapshot",
    "Scoring",
]
