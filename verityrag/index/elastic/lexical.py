"""``ElasticsearchLexicalIndex``: BM25 over chunks in Elasticsearch, the lexical part on its own.

The interface users of the reference design wrote against::

    from verityrag.index.elastic import ElasticsearchLexicalIndex
    lexical = ElasticsearchLexicalIndex()                  # ELASTICSEARCH_URL (default http://localhost:9200)
    lexical.add_batch(["c1", "c2"], ["first text", "second text"])   # searchable on return
    lexical.scores("query", ["c1", "c2"])                  # BM25 per chunk id, in that order (0.0: no match)
    lexical.search("query", k=10)                          # [(chunk_id, score), ...]
    lexical.reset()

Differences from the reference: the index is created (with a versioned mapping)
on first use rather than in the constructor, and BM25 runs on the project's
analyzer output by default (``field="terms"``; ``field="text"`` uses
Elasticsearch's ``english`` analyzer). For the whole pipeline on Elasticsearch
(BM25 and dense vectors behind the index contract) use
:class:`verityrag.index.elastic.ElasticsearchIndex`:
``VerityRAGPipeline(index=ElasticsearchIndex.from_env(dim))`` or
``Settings(backend="elasticsearch")``.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import numpy.typing as npt

from verityrag.errors import InvalidInputError, StorageError
from verityrag.index.elastic.connection import ENV_URL, ElasticsearchConfig, translated
from verityrag.index.elastic.mapping import create_or_check_index
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

__all__ = ["ElasticsearchLexicalIndex"]

DEFAULT_LEXICAL_INDEX = "verityrag-lexical"
LexicalField = Literal["terms", "text"]


class ElasticsearchLexicalIndex:
    """Incremental BM25 in one Elasticsearch index (no vectors). Thread-safe writes."""

    def __init__(
        self,
        index_name: str | None = None,
        config: ElasticsearchConfig | None = None,
        analyzer: Analyzer = DEFAULT_ANALYZER,
        field: LexicalField = "terms",
        k1: float = 1.5,
        b: float = 0.75,
        client: Elasticsearch | None = None,
    ) -> None:
        if field not in ("terms", "text"):
            raise InvalidInputError("field", f"{field!r} is not one of terms, text")
        if config is None:
            overrides: dict[str, Any] = {"url": os.environ.get(ENV_URL) or "http://localhost:9200"}
            overrides["index_name"] = (
                index_name or os.environ.get("ELASTICSEARCH_INDEX") or DEFAULT_LEXICAL_INDEX
            )
            config = ElasticsearchConfig.from_env(**overrides)
        self.config = config
        self.analyzer = analyzer
        self.field = field
        self.k1 = k1
        self.b = b
        # Creating the client checks the package is installed; it does not connect.
        self.client: Elasticsearch = client if client is not None else config.client()
        self._ready = False
        self._lock = threading.Lock()
        self._last_seq = 0

    @property
    def index_name(self) -> str:
        return self.config.index_name

    def warm_up(self) -> ElasticsearchLexicalIndex:
        """Create the index with its versioned mapping, or check an existing one. Idempotent."""
        if self._ready:
            return self
        create_or_check_index(  # no dim: no vectors
            self.client,
            self.config,
            analyzer_fingerprint=self.analyzer.fingerprint(),
            k1=self.k1,
            b=self.b,
            action="checking the lexical index",
        )
        self._ready = True
        return self

    def add_batch(self, chunk_ids: Sequence[str], texts: Sequence[str]) -> None:
        """Index (or replace) these chunks only; they are searchable when this returns."""
        if len(chunk_ids) != len(texts):
            raise InvalidInputError("texts", f"{len(texts)} texts for {len(chunk_ids)} chunk ids")
        if len(set(chunk_ids)) != len(chunk_ids):
            raise InvalidInputError("chunk_ids", "contain duplicates")
        if not chunk_ids:
            return
        from elasticsearch import helpers

        self.warm_up()
        with self._lock:
            first = max(time.time_ns(), self._last_seq + 1)
            self._last_seq = first + len(chunk_ids)
            actions = []
            for i, (chunk_id, text) in enumerate(zip(chunk_ids, texts, strict=True)):
                tf = Counter(self.analyzer.analyze(text))
                actions.append(
                    {
                        "_index": self.index_name,
                        "_id": chunk_id,
                        "_source": {
                            "chunk_id": chunk_id,
                            "doc_id": chunk_id,
                            "title": "",
                            "text": text,
                            "terms": " ".join(t for t, n in tf.items() for _ in range(n)),
                            "vocab": sorted(tf),
                            "doc_len": sum(tf.values()),
                            "position": 0,
                            "start": 0,
                            "end": len(text),
                            "seq": first + i,
                        },
                    }
                )
            with translated(self.config, f"indexing {len(actions)} chunk(s)"):
                helpers.bulk(self.client, actions, refresh="wait_for", max_retries=self.config.max_retries)

    def delete(self, chunk_ids: Sequence[str]) -> None:
        """Remove these chunks (missing ids are ignored); gone from search when this returns."""
        from elasticsearch import helpers

        if not chunk_ids:
            return
        self.warm_up()
        actions = [{"_op_type": "delete", "_index": self.index_name, "_id": c} for c in chunk_ids]
        with translated(self.config, f"deleting {len(actions)} chunk(s)"):
            _, errors = helpers.bulk(
                self.client,
                actions,
                refresh="wait_for",
                max_retries=self.config.max_retries,
                raise_on_error=False,
            )
        # A missing id is fine (404); any other failed delete left its chunk searchable.
        failed = [e for e in cast("list[dict[str, Any]]", errors) if e.get("delete", {}).get("status") != 404]
        if failed:
            raise StorageError(
                f"{self.config.describe()}: {len(failed)} of {len(actions)} chunk deletion(s) failed; "
                f"first: {failed[0]}"
            )

    def _query(self, query: str) -> dict[str, Any]:
        if self.field == "text":
            return {"match": {"text": query}}
        return {"match": {"terms": " ".join(self.analyzer.analyze(query))}}

    def search(self, query: str, k: int = 10) -> list[tuple[str, float]]:
        """Top-``k`` (chunk id, Elasticsearch BM25 score), best first."""
        if k <= 0 or (self.field == "terms" and not self.analyzer.analyze(query)):
            return []
        self.warm_up()
        with translated(self.config, "searching (BM25)"):
            resp = self.client.search(
                index=self.index_name, query=self._query(query), size=min(k, 10_000), source=False
            )
        return [(h["_id"], float(h["_score"])) for h in resp["hits"]["hits"]]

    def scores(self, query: str, chunk_ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """BM25 score of each chunk id, in the order given (0.0 for a chunk the query does not match)."""
        if not chunk_ids:
            return np.zeros(0, dtype=np.float64)
        if self.field == "terms" and not self.analyzer.analyze(query):
            return np.zeros(len(chunk_ids), dtype=np.float64)
        self.warm_up()
        wanted = list(dict.fromkeys(chunk_ids))
        found: dict[str, float] = {}
        for first in range(0, len(wanted), 10_000):
            batch = wanted[first : first + 10_000]
            with translated(self.config, "scoring chunks (BM25)"):
                resp = self.client.search(
                    index=self.index_name,
                    query={"bool": {"must": [self._query(query)], "filter": [{"ids": {"values": batch}}]}},
                    size=len(batch),
                    source=False,
                )
            found.update((h["_id"], float(h["_score"])) for h in resp["hits"]["hits"])
        return np.asarray([found.get(c, 0.0) for c in chunk_ids], dtype=np.float64)

    def __len__(self) -> int:
        self.warm_up()
        with translated(self.config, "counting chunks"):
            return int(self.client.count(index=self.index_name)["count"])

    def reset(self) -> None:
        """Delete every chunk: drop the index and create it again."""
        with translated(self.config, "dropping the lexical index"):
            self.client.options(ignore_status=404).indices.delete(index=self.index_name)
        self._ready = False
        self.warm_up()
