"""Indexes: the embedded ``LiveIndex`` and the durable SQLite document store."""

from verityrag.index.live import DENSE_BACKENDS, DenseBackend, IndexSnapshot, LiveIndex, Scored
from verityrag.index.store import Durability, SQLiteDocumentStore, StoredDocument

__all__ = [
    "DENSE_BACKENDS",
    "DenseBackend",
    "Durability",
    "IndexSnapshot",
    "LiveIndex",
    "SQLiteDocumentStore",
    "Scored",
    "StoredDocument",
]
