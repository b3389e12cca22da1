"""Indexes: the contract (``IndexBackend``), the embedded ``LiveIndex``, the durable SQLite store.

The Elasticsearch backend lives in ``verityrag.index.elastic`` (imported on demand).
"""

from verityrag.index.live import DENSE_BACKENDS, DenseBackend, LiveIndex
from verityrag.index.protocol import AnyIndex, IndexBackend, Scored, SnapshotView
from verityrag.index.snapshot import IndexSnapshot
from verityrag.index.store import Durability, SQLiteDocumentStore, StoredDocument

__all__ = [
    "DENSE_BACKENDS",
    "AnyIndex",
    "DenseBackend",
    "Durability",
    "IndexBackend",
    "IndexSnapshot",
    "LiveIndex",
    "SQLiteDocumentStore",
    "Scored",
    "SnapshotView",
    "StoredDocument",
]
