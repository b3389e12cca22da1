"""Ingestion: streaming (``LiveDocumentStream``); bulk is ``VerityRAGPipeline.ingest_documents``."""

from verityrag.ingest.stream import IngestFailure, LiveDocumentStream

__all__ = ["IngestFailure", "LiveDocumentStream"]
