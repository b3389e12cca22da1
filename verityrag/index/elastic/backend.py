"""``ElasticsearchIndex``: the index contract on an Elasticsearch cluster (BM25 + dense vectors).

How it maps the contract (``verityrag.index.protocol.IndexBackend``):

* **BM25.** Elasticsearch retrieves candidates with its own BM25 (k1=1.5, b=0.75) on
  the project's analyzer output; by default (``scoring="contract"``) the client
  then scores those candidates with the contract's Okapi BM25 (``rank_bm25``'s
  IDF and epsilon floor) from cluster-wide statistics (N, total length, document
  frequencies by aggregation), so scores equal ``LiveIndex``'s and the shipped
  gate and reranker see the features they were trained on. ``scoring="server"``
  returns Elasticsearch's scores as they are.
* **Dense.** kNN on a ``dense_vector`` (float HNSW, ``max_inner_product``); the
  score is turned back into the raw dot product.
* **Snapshots.** Elasticsearch has no multi-document snapshot for free. An
  :class:`ElasticsearchSnapshot` fixes the collection statistics at first read and
  caches every result it returns, so one query's BM25, IDF features and repeated
  searches agree; hits come from the latest refresh when first fetched.
* **Writes.** Per ``apply``, bulk requests that index the new chunks, then (only once
  every new chunk was acknowledged) a second one that deletes the old chunks the new
  version no longer has: a failure in between leaves an extra old chunk, never a lost
  one. Both use ``refresh=wait_for`` so a document is searchable when the call
  returns. Elasticsearch has no multi-document transaction: a reader during a
  replace may briefly see both versions.
* **Errors.** A cluster that is down raises
  :class:`~verityrag.errors.BackendUnavailableError` after the client's retries;
  a write returns only once Elasticsearch acknowledged every chunk.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
import numpy.typing as npt

from verityrag.errors import InvalidInputError, StorageError
from verityrag.index.elastic.connection import ElasticsearchConfig, translated
from verityrag.index.elastic.mapping import MAPPING_VERSION, create_or_check_index, inner_product, term_filter
from verityrag.index.elastic.snapshot import CHUNK_SOURCE, ElasticsearchSnapshot, chunk_of
from verityrag.index.protocol import IndexBackend, Scored, Upsert, check_upserts
from verityrag.text.analyzer import DEFAULT_ANALYZER, Analyzer
from verityrag.types import Chunk

if TYPE_CHECKING:
    from elasticsearch import Elasticsearch

    from verityrag.index.elastic.emulator import ElasticsearchEmulator

__all__ = ["SCORING_MODES", "ElasticsearchIndex", "ElasticsearchSnapshot", "Scoring"]

logger = logging.getLogger(__name__)

Scoring = Literal["contract", "server"]
SCORING_MODES: tuple[str, ...] = ("contract", "server")
_PAGE = 1000
_MAX_WINDOW = 10_000  # Elasticsearch's default index.max_result_window
_MAX_AGG_BUCKETS = 65_536  # search.max_buckets
_BULK_CHUNK = 500
_MAX_ID_BYTES = 512  # Elasticsearch refuses longer _id values (one failed item of a bulk request)


class ElasticsearchIndex:
    """BM25 + dense vectors over chunks in one Elasticsearch index; the same contract as ``LiveIndex``.

    The constructor only stores its arguments: the index is created (or checked
    against this configuration) on first use or by :meth:`warm_up`.
    """

    def __init__(
        self,
        dim: int,
        config: ElasticsearchConfig,
        analyzer: Analyzer = DEFAULT_ANALYZER,
        vector_fingerprint: str | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        epsilon: float = 0.25,
        scoring: Scoring = "contract",
        client: Elasticsearch | None = None,
    ) -> None:
        if scoring not in SCORING_MODES:
            raise InvalidInputError("scoring", f"{scoring!r} is not one of {', '.join(SCORING_MODES)}")
        if dim < 1:
            raise InvalidInputError("dim", "must be >= 1")
        self.dim = dim
        self.config = config
        self.analyzer = analyzer
        self.vector_fingerprint = vector_fingerprint
        self.k1 = k1
        self.b = b
        self.epsilon = epsilon
        self.scoring = scoring
        self._client = client
        self._ready = False
        self._ready_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._version = 0
        self._last_seq = 0
        self._latest: ElasticsearchSnapshot | None = None
        # A snapshot=None read reuses the latest snapshot for this long (a query's IDF lookups).
        self.snapshot_reuse_seconds = 1.0
        # The emulator this index runs on, when one was started for it (eval, benchmarks).
        self.emulator: ElasticsearchEmulator | None = None

    @classmethod
    def from_env(
        cls,
        dim: int,
        analyzer: Analyzer = DEFAULT_ANALYZER,
        vector_fingerprint: str | None = None,
        **kwargs: Any,
    ) -> ElasticsearchIndex:
        """Connection from ``ELASTICSEARCH_*`` variables (see ``verityrag.index.elastic.connection``)."""
        return cls(dim, ElasticsearchConfig.from_env(), analyzer, vector_fingerprint, **kwargs)

    # ------------------------------------------------------------ connection
    @property
    def client(self) -> Elasticsearch:
        if self._client is None:
            self._client = self.config.client()
        return self._client

    @property
    def name(self) -> str:
        return self.config.index_name

    def warm_up(self) -> ElasticsearchIndex:
        """Create the index with the versioned mapping, or check an existing one. Idempotent."""
        if self._ready:
            return self
        with self._ready_lock:
            if self._ready:
                return self
            created = create_or_check_index(
                self.client,
                self.config,
                analyzer_fingerprint=self.analyzer.fingerprint(),
                k1=self.k1,
                b=self.b,
                action="checking the index",
                dim=self.dim,
                vector_fingerprint=self.vector_fingerprint,
                mismatch_hint=". Set ELASTICSEARCH_INDEX to another name.",
            )
            if created:
                logger.info("created Elasticsearch index %s (mapping v%s)", self.name, MAPPING_VERSION)
            self._ready = True
        return self

    def _es(self, action: str) -> Any:
        """The client after warm_up, inside an error-translating context (use as ``with``)."""
        self.warm_up()
        return translated(self.config, action)

    def describe(self) -> dict[str, Any]:
        """What this index runs on (for reports): server version, emulator or not, index, scoring."""
        with self._es("reading the cluster version"):
            info = self.client.info()
        from verityrag.index.elastic.emulator import EMULATOR_NAME

        return {
            "kind": "elasticsearch",
            "server_version": info["version"]["number"],
            "emulator": EMULATOR_NAME if self.emulator is not None else None,
            "url": self.config.url,
            "index": self.name,
            "scoring": self.scoring,
            "mapping_version": MAPPING_VERSION,
        }

    def drop(self) -> None:
        """Delete the whole Elasticsearch index (tests, benchmarks, reindexing)."""
        with translated(self.config, "deleting the index"):
            self.client.options(ignore_status=404).indices.delete(index=self.name)
        self._ready = False
        self._bump()

    # ------------------------------------------------------------------ reads
    def snapshot(self) -> ElasticsearchSnapshot:
        snap = ElasticsearchSnapshot(self, self._version)
        self._latest = snap
        return snap

    def _resolve(self, snapshot: ElasticsearchSnapshot | None) -> ElasticsearchSnapshot:
        if snapshot is not None:
            return snapshot
        latest = self._latest
        if (
            latest is not None
            and latest.version == self._version
            and time.monotonic() - latest.created < self.snapshot_reuse_seconds
        ):
            return latest
        return self.snapshot()

    def _count(self, query: Mapping[str, Any] | None, action: str) -> int:
        with self._es(action):
            resp = (
                self.client.count(index=self.name, query=query)
                if query
                else self.client.count(index=self.name)
            )
        return int(resp["count"])

    def __len__(self) -> int:
        """Number of chunks (as of the last refresh)."""
        return self._count(None, "counting chunks")

    @property
    def n_documents(self) -> int:
        # Every document has exactly one chunk at position 0: an exact count without aggregations.
        return self._count({"term": {"position": 0}}, "counting documents")

    def has_document(self, doc_id: str) -> bool:
        return self._count({"term": {"doc_id": doc_id}}, f"looking up document {doc_id!r}") > 0

    def doc_ids(self) -> list[str]:
        return [
            h["_source"]["doc_id"]
            for h in self._scan({"term": {"position": 0}}, ["doc_id"], "listing documents")
        ]

    def _scan(self, query: Mapping[str, Any], source: Sequence[str], action: str) -> Iterator[dict[str, Any]]:
        """Every matching chunk in ingest order, paged with search_after."""
        after: list[Any] | None = None
        while True:
            with self._es(action):
                resp = self.client.search(
                    index=self.name,
                    query=query,
                    size=_PAGE,
                    sort=[{"seq": "asc"}, {"chunk_id": "asc"}],
                    source=bool(source),
                    source_includes=list(source) or None,
                    search_after=after,
                    track_total_hits=False,
                )
            hits = resp["hits"]["hits"]
            yield from hits
            if len(hits) < _PAGE:
                return
            after = hits[-1]["sort"]

    def chunks_of(self, doc_id: str, snapshot: ElasticsearchSnapshot | None = None) -> list[Chunk]:
        hits = self._scan({"term": {"doc_id": doc_id}}, CHUNK_SOURCE, f"reading document {doc_id!r}")
        chunks = [chunk_of(h["_source"]) for h in hits]
        return sorted(chunks, key=lambda c: c.position)

    def get_chunk(self, chunk_id: str) -> Chunk | None:
        if not chunk_id:
            return None  # no document has an empty _id (and the client refuses one in a URL)
        with self._es(f"reading chunk {chunk_id!r}"):
            resp = self.client.options(ignore_status=404).get(
                index=self.name, id=chunk_id, realtime=False, source_includes=CHUNK_SOURCE
            )
        return chunk_of(resp["_source"]) if resp.get("found") else None

    def live_chunks(self, snapshot: ElasticsearchSnapshot | None = None) -> list[Chunk]:
        snap = self._resolve(snapshot)
        out = []
        for hit in self._scan({"match_all": {}}, CHUNK_SOURCE, "reading all chunks"):
            out.append(snap.remember(hit))
        return out

    def indexed_terms(self, chunk: Chunk) -> list[str]:
        """The terms BM25 indexes for a chunk: its text and its document title (as ``LiveIndex``)."""
        return self.analyzer.analyze(f"{chunk.title}\n{chunk.text}")

    def prefetch_term_statistics(
        self, terms: Iterable[str], snapshot: ElasticsearchSnapshot | None = None
    ) -> None:
        """Fetch the document frequencies of many terms (and N) in one request."""
        self._resolve(snapshot).ensure_df(terms)

    def document_frequency(self, term: str, snapshot: ElasticsearchSnapshot | None = None) -> int:
        return self._resolve(snapshot).document_frequency(term)

    def idf(self, term: str, snapshot: ElasticsearchSnapshot | None = None) -> float:
        """BM25Okapi IDF of ``term`` at the snapshot (0 for unseen terms), as ``LiveIndex.idf``."""
        return self._resolve(snapshot).idf(term)

    def fetch_statistics(self, snap: ElasticsearchSnapshot, terms: Sequence[str]) -> None:
        """N, total length and the document frequency of each term: one aggregation request."""
        aggs: dict[str, Any] = {"total_len": {"sum": {"field": "doc_len"}}}
        if terms:
            # filters (one exact doc count per term) rather than terms+include: exact on any number
            # of shards, and the noida-db emulator ignores include lists.
            aggs["df"] = {"filters": {"filters": {t: term_filter(t) for t in terms}}}
        with self._es("reading term statistics"):
            resp = self.client.search(index=self.name, size=0, track_total_hits=True, aggs=aggs)
        snap.set_stats(
            int(resp["hits"]["total"]["value"]), int(resp["aggregations"]["total_len"]["value"] or 0)
        )
        if terms:
            buckets = resp["aggregations"]["df"]["buckets"]
            for t in terms:
                snap.df[t] = int(buckets.get(t, {}).get("doc_count", 0))

    def average_idf(self, n: int) -> float:
        """Mean BM25Okapi IDF over the vocabulary (needed only for terms in over half the chunks)."""
        with self._es("reading the vocabulary"):
            resp = self.client.search(
                index=self.name,
                size=0,
                aggs={
                    "vocab": {"terms": {"field": "vocab", "size": _MAX_AGG_BUCKETS}},
                    "distinct": {"cardinality": {"field": "vocab", "precision_threshold": 40_000}},
                },
            )
        buckets = resp["aggregations"]["vocab"]["buckets"]
        dfs = [int(bk["doc_count"]) for bk in buckets]
        # Beyond search.max_buckets distinct terms the tail is not returned; those are the
        # rarest terms, counted as df=1 (exact below 65,536 distinct terms).
        tail = (
            max(int(resp["aggregations"]["distinct"]["value"]) - len(dfs), 0)
            if len(dfs) >= _MAX_AGG_BUCKETS
            else 0
        )
        dfs_arr = np.asarray(dfs + [1] * tail, dtype=np.float64)
        if len(dfs_arr) == 0:
            return 0.0
        return float(np.mean(np.log(n - dfs_arr + 0.5) - np.log(dfs_arr + 0.5)))

    def search_lexical(
        self,
        query: str | Sequence[str],
        k: int = 10,
        snapshot: ElasticsearchSnapshot | None = None,
        doc_ids: Collection[str] | None = None,
    ) -> list[Scored]:
        """Top-``k`` chunks by BM25. ``query`` is text (analyzed here) or analyzed terms.
        ``doc_ids``: only these documents' chunks (a ``terms`` filter on ``doc_id``)."""
        snap = self._resolve(snapshot)
        terms = self.analyzer.analyze(query) if isinstance(query, str) else list(query)
        if k <= 0 or not terms or (doc_ids is not None and not doc_ids):
            return []
        allowed = None if doc_ids is None else frozenset(doc_ids)
        key = ("lexical", tuple(terms), k, allowed)
        cached = snap.results.get(key)
        if cached is not None:
            return cached
        query_counts = Counter(terms)
        if self.scoring == "contract":
            snap.ensure_df(query_counts)
            if not any(snap.df.get(t, 0) for t in query_counts):
                snap.results[key] = []
                return []
        # Over-fetch: the server's BM25 (different IDF formula) orders candidates slightly
        # differently from the contract's; the contract's top k is within its top 2k.
        size = min(k if self.scoring == "server" else max(2 * k, k + 20), _MAX_WINDOW)
        with self._es("searching (BM25)"):
            resp = self.client.search(
                index=self.name,
                query=_filtered({"match": {"terms": {"query": " ".join(terms)}}}, allowed),
                size=size,
                source_includes=CHUNK_SOURCE,
                track_total_hits=False,
            )
        hits = resp["hits"]["hits"]
        chunks = [snap.remember(h) for h in hits]
        if self.scoring == "server":
            scored = [Scored(c, float(h["_score"])) for c, h in zip(chunks, hits, strict=True)]
        else:
            # A candidate holding none of the terms (it shares the first 255 characters of a
            # longer one, which the server indexed as pieces) is no match in the contract.
            scored = [
                Scored(c, snap.bm25(query_counts, c.chunk_id))
                for c in chunks
                if not query_counts.keys().isdisjoint(snap.chunk_terms[c.chunk_id])
            ]
        scored.sort(key=lambda s: (-s.score, snap.seq.get(s.chunk.chunk_id, 0)))
        result = scored[:k]
        snap.results[key] = result
        return result

    def search_dense(
        self,
        vector: npt.ArrayLike,
        k: int = 10,
        snapshot: ElasticsearchSnapshot | None = None,
        doc_ids: Collection[str] | None = None,
    ) -> list[Scored]:
        """Top-``k`` chunks by inner product (cosine for unit vectors), kNN on the cluster.
        ``doc_ids``: only these documents' chunks (the kNN search's ``terms`` filter on ``doc_id``)."""
        snap = self._resolve(snapshot)
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        if query.shape[0] != self.dim:
            raise InvalidInputError("vector", f"has dimension {query.shape[0]}, index has {self.dim}")
        if k <= 0 or (doc_ids is not None and not doc_ids):
            return []
        allowed = None if doc_ids is None else frozenset(doc_ids)
        key = ("dense", query.tobytes(), k, allowed)
        cached = snap.results.get(key)
        if cached is not None:
            return cached
        k_eff = min(k, _MAX_WINDOW)
        with self._es("searching (kNN)"):
            resp = self.client.search(
                index=self.name,
                knn={
                    "field": "vector",
                    "query_vector": query.tolist(),
                    "k": k_eff,
                    "num_candidates": min(max(100, 2 * k_eff), _MAX_WINDOW),
                    **({} if allowed is None else {"filter": _doc_filter(allowed)}),
                },
                size=k_eff,
                source_includes=CHUNK_SOURCE,
                track_total_hits=False,
            )
        hits = resp["hits"]["hits"]
        scored = [Scored(snap.remember(h), inner_product(float(h["_score"]))) for h in hits]
        scored.sort(key=lambda s: (-s.score, snap.seq.get(s.chunk.chunk_id, 0)))
        snap.results[key] = scored
        return scored

    def cosines(
        self, vector: npt.ArrayLike, chunk_ids: Sequence[str], snapshot: ElasticsearchSnapshot | None = None
    ) -> list[float]:
        """Inner product of ``vector`` with each chunk's vector (0.0 for a chunk the index does not hold)."""
        snap = self._resolve(snapshot)
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        missing = [c for c in dict.fromkeys(chunk_ids) if c not in snap.vectors]
        if missing:
            with self._es("reading vectors"):
                resp = self.client.mget(
                    index=self.name, ids=missing, realtime=False, source_includes=["vector"]
                )
            for doc in resp["docs"]:
                vec = doc.get("_source", {}).get("vector") if doc.get("found") else None
                snap.vectors[doc["_id"]] = None if vec is None else np.asarray(vec, dtype=np.float32)
        out = []
        for chunk_id in chunk_ids:
            vec = snap.vectors.get(chunk_id)
            out.append(float(query @ vec) if vec is not None else 0.0)
        return out

    # ----------------------------------------------------------------- writes
    def _bump(self) -> None:
        self._version += 1
        self._latest = None

    def _next_seq(self, n: int) -> int:
        first = max(time.time_ns(), self._last_seq + 1)
        self._last_seq = first + n - 1
        return first

    def upsert(self, doc_id: str, chunks: Sequence[Chunk], vectors: npt.NDArray[np.float32]) -> None:
        """Add a document's chunks, replacing any earlier version of the document."""
        self.apply([(doc_id, chunks, vectors)], deletes=())

    def delete(self, doc_id: str) -> bool:
        """Remove a document's chunks. Returns False if the document was not indexed."""
        if not self.has_document(doc_id):
            return False
        self.apply([], deletes=(doc_id,))
        return True

    def term_counts(self, upserts: Sequence[Upsert]) -> list[list[dict[str, int]]]:
        """Indexed term frequencies of every chunk of ``upserts`` (what ``apply`` indexes)."""
        return [[dict(Counter(self.indexed_terms(c))) for c in chunks] for _, chunks, _ in upserts]

    def _existing_chunk_ids(self, doc_ids: Sequence[str]) -> list[str]:
        out: list[str] = []
        for first in range(0, len(doc_ids), 1000):
            batch = list(doc_ids[first : first + 1000])
            out.extend(h["_id"] for h in self._scan({"terms": {"doc_id": batch}}, (), "reading old chunks"))
        return out

    def apply(
        self,
        upserts: Sequence[Upsert],
        deletes: Iterable[str] = (),
        term_counts: Sequence[Sequence[Mapping[str, int]]] | None = None,
    ) -> None:
        """Apply many upserts and deletes in one bulk pass; searchable when this returns."""
        check_upserts(upserts, self.dim)
        for doc_id, chunks, vectors in upserts:
            if not np.all(np.isfinite(vectors)):
                raise InvalidInputError("vectors", f"{doc_id!r} has NaN or infinite values")
            for chunk in chunks:
                if len(chunk.chunk_id.encode("utf-8")) > _MAX_ID_BYTES:
                    raise InvalidInputError(
                        "chunk_id",
                        f"{chunk.chunk_id[:40]!r}... is over 512 bytes (Elasticsearch's _id limit)",
                    )
        analyzed = term_counts if term_counts is not None else self.term_counts(upserts)
        delete_ids = list(dict.fromkeys(deletes))
        affected = [doc_id for doc_id, _, _ in upserts] + delete_ids
        if not affected:
            return
        with self._write_lock:
            old = set(self._existing_chunk_ids(affected))
            index_actions = list(self._index_actions(upserts, analyzed))
            new_ids = {a["_id"] for a in index_actions}
            stale = [{"_op_type": "delete", "_index": self.name, "_id": cid} for cid in sorted(old - new_ids)]
            try:
                # Old chunks are deleted by a second request, sent only once every new chunk was
                # acknowledged. In one request Elasticsearch runs the deletes even when index
                # items fail (a 429 rejection, a refused document), and the helper retries 429s
                # after the rest of the request ran: the old version was lost with the new one.
                self._bulk(index_actions)
                self._bulk(stale)
            finally:
                self._bump()  # even a failed write may have written some chunks: drop cached reads

    def _index_actions(
        self, upserts: Sequence[Upsert], analyzed: Sequence[Sequence[Mapping[str, int]]]
    ) -> Iterator[dict[str, Any]]:
        n_chunks = sum(len(chunks) for _, chunks, _ in upserts)
        seq = self._next_seq(n_chunks)
        for (_, chunks, vectors), counts in zip(upserts, analyzed, strict=True):
            for chunk, vector, tf in zip(chunks, vectors, counts, strict=True):
                yield {
                    "_op_type": "index",
                    "_index": self.name,
                    "_id": chunk.chunk_id,
                    "_source": {
                        "chunk_id": chunk.chunk_id,
                        "doc_id": chunk.doc_id,
                        "title": chunk.title,
                        "text": chunk.text,
                        # Term order does not matter to BM25; the bag is what LiveIndex counts.
                        "terms": " ".join(t for t, n in tf.items() for _ in range(n)),
                        "vocab": sorted(tf),
                        "doc_len": int(sum(tf.values())),
                        "position": chunk.position,
                        "start": chunk.start,
                        "end": chunk.end,
                        "seq": seq,
                        "vector": vector.tolist(),
                    },
                }
                seq += 1

    def _bulk(self, actions: list[dict[str, Any]]) -> None:
        from elasticsearch import helpers

        if not actions:
            return
        with self._es(f"writing {len(actions)} chunk operation(s)"):
            # 429s are retried by the helper; connection errors by the client.
            _, errors = helpers.bulk(
                self.client,
                actions,
                chunk_size=_BULK_CHUNK,
                refresh="wait_for",
                max_retries=self.config.max_retries,
                raise_on_error=False,
                raise_on_exception=True,
            )
        # A write is acknowledged only if every chunk was (a delete of a chunk already gone is fine).
        failed = [
            e
            for e in cast("list[dict[str, Any]]", errors)
            if not ("delete" in e and e["delete"].get("status") == 404)
        ]
        if failed:
            raise StorageError(
                f"{self.config.describe()}: {len(failed)} of {len(actions)} chunk operation(s) failed; "
                f"first: {failed[0]}"
            )


if TYPE_CHECKING:

    def _elasticsearch_index_is_a_backend(index: ElasticsearchIndex) -> IndexBackend[ElasticsearchSnapshot]:
        return index


#: Most values of one ``terms`` query (Elasticsearch's ``index.max_terms_count`` default).
_MAX_TERMS = 65_536


def _doc_filter(doc_ids: frozenset[str]) -> dict[str, Any]:
    """A filter passing the chunks of ``doc_ids``: one ``terms`` query on ``doc_id``, or several
    (any may match) when there are more ids than one ``terms`` query takes."""
    ids = sorted(doc_ids)
    parts = [{"terms": {"doc_id": ids[i : i + _MAX_TERMS]}} for i in range(0, len(ids), _MAX_TERMS)]
    return parts[0] if len(parts) == 1 else {"bool": {"should": parts, "minimum_should_match": 1}}


def _filtered(query: dict[str, Any], doc_ids: frozenset[str] | None) -> dict[str, Any]:
    if doc_ids is None:
        return query
    return {"bool": {"must": [query], "filter": [_doc_filter(doc_ids)]}}
