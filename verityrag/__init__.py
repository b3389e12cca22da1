"""VerityRAG: answers questions over live documents, and abstains rather than hallucinate."""

from verityrag.config import Settings
from verityrag.errors import (
    BackendUnavailableError,
    InvalidInputError,
    MalformedVerdictError,
    ModelFilesMissingError,
    ModelLoadError,
    NotFittedError,
    StorageError,
    ThresholdNotReachableError,
    VerityRAGError,
)
from verityrag.ingest.stream import LiveDocumentStream
from verityrag.pipeline import IngestResult, VerityRAGPipeline
from verityrag.types import (
    AbstainReason,
    Chunk,
    Citation,
    CitedSentence,
    ClaimSupport,
    Document,
    GroundingReport,
    Hit,
    QueryResult,
    TraceStep,
)

__version__ = "0.1.0"

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
