"""The Elasticsearch backend: the index contract on a cluster (BM25 + dense vectors in one index).

``ElasticsearchIndex`` satisfies ``verityrag.index.protocol.IndexBackend``, like the
embedded ``LiveIndex``; pass it as ``VerityRAGPipeline(index=...)`` or set
``Settings(backend="elasticsearch")`` / ``VERITYRAG_BACKEND=elasticsearch`` with
``ELASTICSEARCH_URL``. Importing this package does not import the client; the
first request does. See docs/elasticsearch.md.
"""

from verityrag.index.elastic.backend import SCORING_MODES, ElasticsearchIndex, Scoring
from verityrag.index.elastic.connection import DEFAULT_INDEX_NAME, ElasticsearchConfig
from verityrag.index.elastic.emulator import EMULATOR_NAME, ElasticsearchEmulator
from verityrag.index.elastic.lexical import ElasticsearchLexicalIndex
from verityrag.index.elastic.mapping import MAPPING_VERSION
from verityrag.index.elastic.snapshot import ElasticsearchSnapshot

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
