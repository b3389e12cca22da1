"""Ingestion: streaming (``LiveDocumentStream``); bulk is ``VerityRAGPipeline.ingest_documents``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.ingest.stream import IngestFailure as IngestFailure
    from verityrag.ingest.stream import LiveDocumentStream as LiveDocumentStream
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.ingest.stream": (
                "IngestFailure",
                "LiveDocumentStream",
            ),
        },
    )

__all__ = ["IngestFailure", "LiveDocumentStream"]
