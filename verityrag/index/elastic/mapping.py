"""The Elasticsearch index layout, created and versioned by the code.

One document per chunk. BM25 runs on ``terms``: the project's analyzer output
(lowercased, stopwords removed, Snowball-stemmed, title included), joined by
spaces and split again by a whitespace analyzer, so Elasticsearch sees exactly
the terms ``LiveIndex`` counts. ``text`` is also indexed with Elasticsearch's
``english`` analyzer, for people who query the cluster directly (Kibana) and for
``ElasticsearchLexicalIndex(field="text")``. Vectors use ``max_inner_product``:
the raw dot product, like ``LiveIndex`` (it accepts all-zero vectors, which
``cosine``/``dot_product`` reject).

``_meta.verityrag`` records the mapping version, analyzer, vector dimension
and embedder; opening an index written by a different layout, analyzer or
embedder raises :class:`~verityrag.errors.StorageError` instead of mixing them.

Reading the layout back: :func:`term_filter` selects the chunks holding one term of
``terms`` as its tokenizer indexed it, :func:`inner_product` turns a kNN score back
into the dot product.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from verityrag.errors import StorageError
from verityrag.index.elastic.connection import ElasticsearchConfig, translated

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

MAPPING_VERSION = 1
TERMS_ANALYZER = "verityrag_terms"
BM25_SIMILARITY = "verityrag_bm25"


def index_body(
    dim: int | None,
    analyzer_fingerprint: str,
    vector_fingerprint: str | None,
    k1: float,
    b: float,
    shards: int,
    replicas: int,
) -> dict[str, Any]:
    """``settings`` and ``mappings`` for ``indices.create``. ``dim=None``: no vectors (lexical only)."""
    properties: dict[str, Any] = {
        "chunk_id": {"type": "keyword"},
        "doc_id": {"type": "keyword"},
        "title": {"type": "text", "index": False},
        "text": {"type": "text", "analyzer": "english"},
        "terms": {"type": "text", "analyzer": TERMS_ANALYZER, "similarity": BM25_SIMILARITY},
        # Distinct terms as keywords: the vocabulary-wide average IDF (BM25Okapi's floor for
        # terms in more than half the chunks) is aggregated from these doc values.
        "vocab": {"type": "keyword", "index": False},
        "doc_len": {"type": "integer"},
        "position": {"type": "integer"},
        "start": {"type": "integer", "index": False},
        "end": {"type": "integer", "index": False},
        "seq": {"type": "long"},  # ingest order: ties and full scans follow it, as LiveIndex's slots
    }
    if dim is not None:
        properties["vector"] = {
            "type": "dense_vector",
            "dims": dim,
            "index": True,
            "similarity": "max_inner_product",
            # float HNSW: the 8.x default (int8_hnsw) would quantise the scores.
            "index_options": {"type": "hnsw", "m": 16, "ef_construction": 100},
        }
    return {
        "settings": {
            "number_of_shards": shards,
            "number_of_replicas": replicas,
            "index": {"similarity": {BM25_SIMILARITY: {"type": "BM25", "k1": k1, "b": b}}},
            "analysis": {"analyzer": {TERMS_ANALYZER: {"type": "custom", "tokenizer": "whitespace"}}},
        },
        "mappings": {
            "dynamic": "strict",
            "_meta": {"verityrag": expected_meta(dim, analyzer_fingerprint, vector_fingerprint, k1, b)},
            "properties": properties,
        },
    }


def expected_meta(
    dim: int | None, analyzer_fingerprint: str, vector_fingerprint: str | None, k1: float, b: float
) -> dict[str, Any]:
    return {
        "mapping_version": MAPPING_VERSION,
        "analyzer": analyzer_fingerprint,
        "dim": dim,
        "vectors": vector_fingerprint,
        "bm25": {"k1": k1, "b": b},
    }


def meta_mismatch(found: dict[str, Any] | None, expected: dict[str, Any]) -> str | None:
    """Why an existing index cannot be used with this configuration (None: it can)."""
    if not found:
        return "it was not created by VerityRAG (no _meta.verityrag in its mapping)"
    if found.get("mapping_version") != expected["mapping_version"]:
        return (
            f"its mapping version is {found.get('mapping_version')}, this code writes "
            f"{expected['mapping_version']}: reindex into a new index"
        )
    for key, what in (("analyzer", "analyzer"), ("dim", "vector dimension"), ("bm25", "BM25 parameters")):
        if found.get(key) != expected[key]:
            return f"its {what} is {found.get(key)!r}, this pipeline uses {expected[key]!r}"
    if expected["vectors"] is not None and found.get("vectors") not in (None, expected["vectors"]):
        return f"its vectors come from {found.get('vectors')!r}, this pipeline embeds with {expected['vectors']!r}"
    return None


def create_or_check_index(
    client: Elasticsearch,
    config: ElasticsearchConfig,
    *,
    analyzer_fingerprint: str,
    k1: float,
    b: float,
    action: str,
    dim: int | None = None,
    vector_fingerprint: str | None = None,
    mismatch_hint: str = "",
) -> bool:
    """Create ``config.index_name`` with this layout when it does not exist, else check its ``_meta``.

    ``dim=None``: an index without vectors (lexical only).

    Another process creating the index at the same moment is fine; any other refusal, or an
    existing index of another layout, analyzer or embedder, raises
    :class:`~verityrag.errors.StorageError` (``mismatch_hint`` is appended to the latter).
    Returns whether the index was missing (and so created here or by that other process).
    """
    name = config.index_name
    expected = expected_meta(dim, analyzer_fingerprint, vector_fingerprint, k1, b)
    with translated(config, action):
        missing = not client.indices.exists(index=name)
        if missing:
            body = index_body(
                dim, analyzer_fingerprint, vector_fingerprint, k1, b, config.shards, config.replicas
            )
            resp = client.options(ignore_status=400).indices.create(index=name, **body)
            error = resp.body.get("error") if isinstance(resp.body, dict) else None
            if error and error.get("type") != "resource_already_exists_exception":
                raise StorageError(f"{config.describe()}: cannot create the index: {error}")
        mapping = client.indices.get_mapping(index=name).body
    first: Any = next(iter(mapping.values()), {})
    problem = meta_mismatch(first.get("mappings", {}).get("_meta", {}).get("verityrag"), expected)
    if problem:
        raise StorageError(f"{config.describe()} cannot be used: {problem}{mismatch_hint}")
    return missing


# The whitespace tokenizer cuts tokens at 255 UTF-16 units: a term of up to 127 code points
# (at most 254 units) is always indexed whole.
_MAX_TOKEN_CHARS = 127


def term_filter(term: str) -> dict[str, Any]:
    """The chunks whose ``terms`` field holds ``term``, as the field's analyzer indexed it.

    Its ``whitespace`` tokenizer cuts a token at 255 UTF-16 units, so a longer term (a
    hash, a sequence) is indexed as consecutive pieces: a ``term`` query for it matches
    nothing, a phrase of its pieces matches the chunks that hold it.
    """
    if len(term) > _MAX_TOKEN_CHARS:
        return {"match_phrase": {"terms": term}}
    return {"term": {"terms": term}}


def inner_product(score: float) -> float:
    """Undo ``max_inner_product``'s score transform (dot+1 for dot>=0, 1/(1-dot) below)."""
    return score - 1.0 if score >= 1.0 else 1.0 - 1.0 / score
