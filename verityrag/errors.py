"""Exceptions raised by VerityRAG.

An abstention is never an exception: it is a normal ``QueryResult`` with an
``AbstainReason``. Exceptions are for things the caller must fix::

    VerityRAGError
    ├── InvalidInputError (ValueError)   bad input; the message names the field
    ├── ModelLoadError                   a model could not load; says what was tried
    │   └── ModelFilesMissingError       a model folder lacks files; names them and the build command
    ├── NotFittedError (ValueError)      a learned component used before fit()
    ├── StorageError                     the durable store failed or is inconsistent
    ├── BackendUnavailableError          a remote backend (e.g. Elasticsearch) is down
    ├── StreamClosedError (RuntimeError) a stream that was stopped, or whose thread died, got put()
    ├── DatasetMissingError (FileNotFoundError) a dataset file is not under the datasets root
    ├── ThresholdNotReachableError       no threshold reaches the target precision at a useful accept rate
    └── LLMError                         an LLM provider call failed
        ├── LLMConfigError               missing key / base URL / model; says which env var
        ├── LLMTimeoutError              no answer within the timeout (after retries)
        ├── LLMRateLimitError            the provider said 429 (after retries)
        └── LLMResponseError             a non-success status or a body we cannot parse
            └── MalformedVerdictError    the LLM judge answered, but not with a verdict of the schema
"""

from __future__ import annotations

from pathlib import Path


class VerityRAGError(Exception):
    """Base class of every error raised by VerityRAG."""


class InvalidInputError(VerityRAGError, ValueError):
    """Input that cannot be accepted. ``field`` names the offending field."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


class ModelLoadError(VerityRAGError):
    """A model could not be loaded. ``attempts`` lists what was tried and why it failed."""

    def __init__(self, what: str, attempts: list[tuple[str, str]]) -> None:
        self.what = what
        self.attempts = attempts
        tried = "; ".join(f"{source}: {reason}" for source, reason in attempts) or "nothing"
        super().__init__(f"could not load {what}. Tried: {tried}")


class ModelFilesMissingError(ModelLoadError):
    """A model folder lacks files it needs. ``missing`` lists them; ``build_command`` makes them."""

    def __init__(self, what: str, folder: Path, missing: list[str], build_command: str) -> None:
        self.folder = folder
        self.missing = missing
        self.build_command = build_command
        reason = f"missing {', '.join(missing)}; build them with `{build_command}`"
        super().__init__(what, [(str(folder), reason)])


class NotFittedError(VerityRAGError, ValueError):
    """A learned component was used before ``fit`` (scikit-learn convention)."""


class StorageError(VerityRAGError):
    """The durable document store failed or holds data this version cannot use."""


class BackendUnavailableError(VerityRAGError):
    """A remote index backend cannot be reached."""


class StreamClosedError(VerityRAGError, RuntimeError):
    """A ``LiveDocumentStream`` takes no more documents: it was stopped, or its worker
    thread ended. A ``RuntimeError`` too, as ``concurrent.futures`` raises on a shut-down pool."""


class LLMError(VerityRAGError):
    """An LLM provider call failed. ``provider`` names it."""

    def __init__(self, provider: str, problem: str) -> None:
        self.provider = provider
        self.problem = problem
        super().__init__(f"{provider}: {problem}")


class LLMConfigError(LLMError):
    """The provider is not configured (a key, base URL or model is missing)."""


class LLMTimeoutError(LLMError):
    """The provider did not answer within the timeout, after retries."""


class LLMRateLimitError(LLMError):
    """The provider refused for rate limiting (HTTP 429), after retries."""


class LLMResponseError(LLMError):
    """The provider answered with an error status or a body that cannot be parsed."""


class MalformedVerdictError(LLMResponseError):
    """The model answered, but not with a verdict of the required schema."""

    def __init__(self, problem: str) -> None:
        super().__init__("llm_judge", problem)


class DatasetMissingError(VerityRAGError, FileNotFoundError):
    """A dataset file is not under the datasets root. The message names the file, the
    ``VERITYRAG_DATASETS`` variable and the command that fetches it."""

    def __init__(self, path: str, root: str, hint: str) -> None:
        self.path = path
        self.root = root
        super().__init__(f"dataset file {path} is missing (datasets root {root}); {hint}")


class ThresholdNotReachableError(VerityRAGError):
    """No threshold reaches the target precision at a useful accept rate."""
