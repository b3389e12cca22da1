"""Indexes: the contract (``IndexBackend``), the embedded ``LiveIndex``, the durable SQLite store.

The Elasticsearch backend lives in ``verityrag.index.elastic`` (imported on demand).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.index.live import DENSE_BACKENDS as DENSE_BACKENDS
    from verityrag.index.live import DenseBackend as DenseBackend
    from verityrag.index.live import LiveIndex as LiveIndex
    from verityrag.index.protocol import AnyIndex as AnyIndex
    from verityrag.index.protocol import IndexBackend as IndexBackend
    from verityrag.index.protocol import Scored as Scored
    from verityrag.index.protocol import SnapshotView as SnapshotView
    from verityrag.index.snapshot import IndexSnapshot as IndexSnapshot
    from verityrag.index.store import Durability as Durability
    from verityrag.index.store import SQLiteDocumentStore as SQLiteDocumentStore
    from verityrag.index.store import StoredDocument as StoredDocument
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.index.live": (
                "DENSE_BACKENDS",
                "DenseBackend",
                "LiveIndex",
            ),
            "verityrag.index.protocol": (
                "AnyIndex",
                "IndexBackend",
                "Scored",
                "SnapshotView",
            ),
            "verityrag.index.snapshot": ("IndexSnapshot",),
            "verityrag.index.store": (
                "Durability",
                "SQLiteDocumentStore",
                "StoredDocument",
            ),
        },
    )

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
