"""VerityRAG: answers questions over live documents, and abstains rather than hallucinate."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

__version__ = "0.1.0"

if TYPE_CHECKING:
    from verityrag.config import Settings as Settings
    from verityrag.errors import BackendUnavailableError as BackendUnavailableError
    from verityrag.errors import InvalidInputError as InvalidInputError
    from verityrag.errors import MalformedVerdictError as MalformedVerdictError
    from verityrag.errors import ModelFilesMissingError as ModelFilesMissingError
    from verityrag.errors import ModelLoadError as ModelLoadError
    from verityrag.errors import NotFittedError as NotFittedError
    from verityrag.errors import StorageError as StorageError
    from verityrag.errors import ThresholdNotReachableError as ThresholdNotReachableError
    from verityrag.errors import VerityRAGError as VerityRAGError
    from verityrag.ingest.stream import LiveDocumentStream as LiveDocumentStream
    from verityrag.pipeline import IngestResult as IngestResult
    from verityrag.pipeline import VerityRAGPipeline as VerityRAGPipeline
    from verityrag.types import AbstainReason as AbstainReason
    from verityrag.types import Chunk as Chunk
    from verityrag.types import Citation as Citation
    from verityrag.types import CitedSentence as CitedSentence
    from verityrag.types import ClaimSupport as ClaimSupport
    from verityrag.types import Document as Document
    from verityrag.types import GroundingReport as GroundingReport
    from verityrag.types import Hit as Hit
    from verityrag.types import QueryResult as QueryResult
    from verityrag.types import TraceStep as TraceStep
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.config": ("Settings",),
            "verityrag.errors": (
                "BackendUnavailableError",
                "InvalidInputError",
                "MalformedVerdictError",
                "ModelFilesMissingError",
                "ModelLoadError",
                "NotFittedError",
                "StorageError",
                "ThresholdNotReachableError",
                "VerityRAGError",
            ),
            "verityrag.ingest.stream": ("LiveDocumentStream",),
            "verityrag.pipeline": (
                "IngestResult",
                "VerityRAGPipeline",
            ),
            "verityrag.types": (
                "AbstainReason",
                "Chunk",
                "Citation",
                "CitedSentence",
                "ClaimSupport",
                "Document",
                "GroundingReport",
                "Hit",
                "QueryResult",
                "TraceStep",
            ),
        },
    )

__all__ = [
    "AbstainReason",
    "BackendUnavailableError",
    "Chunk",
    "Citation",
    "CitedSentence",
    "ClaimSupport",
    "Document",
    "GroundingReport",
    "Hit",
    "IngestResult",
    "InvalidInputError",
    "LiveDocumentStream",
    "MalformedVerdictError",
    "ModelFilesMissingError",
    "ModelLoadError",
    "NotFittedError",
    "QueryResult",
    "Settings",
    "StorageError",
    "ThresholdNotReachableError",
    "TraceStep",
    "VerityRAGError",
    "VerityRAGPipeline",
    "__version__",
]
