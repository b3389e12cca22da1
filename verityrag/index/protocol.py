"""The index contract: what the pipeline, retriever, features and agent need from an index.

``LiveIndex`` (embedded) and ``ElasticsearchIndex`` (a cluster) both satisfy
:class:`IndexBackend`, so the agent, gates and API run unchanged on either.
The contract suite in ``tests/index_contract`` runs the same tests against both.

Reads go through a snapshot taken with ``snapshot()``: every read that passes
the same snapshot sees the same collection statistics (N, average length,
document frequencies), so BM25 scores, IDF features and gate inputs of one
query agree with each other. ``LiveIndex`` snapshots are exact multi-version
views; an Elasticsearch snapshot caches what it has read (see
``verityrag.index.elastic``).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from verityrag.errors import InvalidInputError
from verityrag.text.analyzer import Analyzer
from verityrag.types import Chunk

# One document's write: (doc_id, its chunks, their vectors [n_chunks, dim]).
Upsert = tuple[str, Sequence[Chunk], npt.NDArray[np.float32]]


class Scored(NamedTuple):
    """One search result: a chunk and its score (BM25, or the vectors' inner product)."""

    chunk: Chunk
    score: float


def check_unique_ids(ids: Iterable[str], batch: str) -> None:
    """Refuse a doc id that appears twice in one batch, naming where, as the caller sent it:
    ``batch`` is the argument's name (``documents``, ``upserts``), so the error's field is
    e.g. ``documents[2].doc_id`` and its message gives both positions."""
    first_at: dict[str, int] = {}
    for i, doc_id in enumerate(ids):
        first = first_at.setdefault(doc_id, i)
        if first != i:
            raise InvalidInputError(
                f"{batch}[{i}].doc_id",
                f"{doc_id!r} appears more than once in the batch ({batch}[{first}] and {batch}[{i}])",
            )


def check_upserts(upserts: Sequence[Upsert], dim: int) -> None:
    """The batch rules every backend enforces before writing anything.

    A doc id twice in one batch is refused: the second upsert would orphan the first
    one's chunks (live, but owned by no document). Vectors must be one row per chunk.
    """
    check_unique_ids((doc_id for doc_id, _, _ in upserts), "upserts")
    for doc_id, chunks, vectors in upserts:
        if vectors.shape != (len(chunks), dim):
            raise InvalidInputError(
                "vectors", f"shape {vectors.shape} for {doc_id!r}, expected ({len(chunks)}, {dim})"
            )


@runtime_checkable
class SnapshotView(Protocol):
    """What callers may read from any backend's snapshot."""

    @property
    def version(self) -> int:
        """Monotone write counter of the index this snapshot was taken from."""
        ...

    @property
    def n_live(self) -> int:
        """Number of chunks the snapshot sees."""
        ...


SnapshotT = TypeVar("SnapshotT", bound=SnapshotView)


@runtime_checkable
class IndexBackend(Protocol[SnapshotT]):
    """Lexical (Okapi BM25, as ``rank_bm25.BM25Okapi``) + dense search over the same chunks.

    Writes: ``apply`` (many upserts and deletes), ``delete``; a write is searchable
    when it returns. Reads take an optional snapshot (default: the latest).
    """

    dim: int
    analyzer: Analyzer

    # ------------------------------------------------------------------ reads
    def snapshot(self) -> SnapshotT: ...

    def __len__(self) -> int: ...

    @property
    def n_documents(self) -> int: ...

    def has_document(self, doc_id: str) -> bool: ...

    def doc_ids(self) -> list[str]: ...

    def chunks_of(self, doc_id: str, snapshot: SnapshotT | None = None) -> list[Chunk]: ...

    def get_chunk(self, chunk_id: str) -> Chunk | None: ...

    def live_chunks(self, snapshot: SnapshotT | None = None) -> list[Chunk]: ...

    def document_frequency(self, term: str, snapshot: SnapshotT | None = None) -> int: ...

    def idf(self, term: str, snapshot: SnapshotT | None = None) -> float: ...

    def indexed_terms(self, chunk: Chunk) -> list[str]: ...

    # ``doc_ids``: search only these documents' chunks (what a metadata filter resolved to);
    # None: every document. The collection statistics stay the whole snapshot's.
    def search_lexical(
        self,
        query: str | Sequence[str],
        k: int = 10,
        snapshot: SnapshotT | None = None,
        doc_ids: Collection[str] | None = None,
    ) -> list[Scored]: ...

    def search_dense(
        self,
        vector: npt.ArrayLike,
        k: int = 10,
        snapshot: SnapshotT | None = None,
        doc_ids: Collection[str] | None = None,
    ) -> list[Scored]: ...

    def cosines(
        self, vector: npt.ArrayLike, chunk_ids: Sequence[str], snapshot: SnapshotT | None = None
    ) -> list[float]: ...

    # ----------------------------------------------------------------- writes
    def upsert(self, doc_id: str, chunks: Sequence[Chunk], vectors: npt.NDArray[np.float32]) -> None: ...

    def delete(self, doc_id: str) -> bool: ...

    def apply(
        self,
        upserts: Sequence[Upsert],
        deletes: Iterable[str] = (),
        term_counts: Sequence[Sequence[Mapping[str, int]]] | None = None,
    ) -> None: ...

    def term_counts(self, upserts: Sequence[Upsert]) -> list[list[dict[str, int]]]: ...


# What the pipeline and its parts hold: an index of either kind.
AnyIndex = IndexBackend[Any]


@runtime_checkable
class PrefetchesTermStatistics(Protocol):
    """Optional capability of a remote backend: fetch many terms' statistics in one round trip.

    ``QueryTerms.from_index`` calls it before its IDF lookups, so Elasticsearch answers
    one request per query instead of one per term. ``LiveIndex`` does not need it.
    """

    def prefetch_term_statistics(self, terms: Iterable[str], snapshot: Any = None) -> None: ...
