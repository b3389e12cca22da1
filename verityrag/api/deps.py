"""What the routes get from the app (``request.app.state``, set by ``create_app``), as FastAPI dependencies.

Dependencies live at module level: with postponed annotations FastAPI resolves
``Annotated[...]`` in the defining module's namespace.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request, Security
from fastapi.security import APIKeyHeader
from starlette.concurrency import run_in_threadpool

from verityrag.api.auth import API_KEY_HEADER, Access, ApiKeys, check_key
from verityrag.api.error_responses import ApiError
from verityrag.api.prometheus import ApiMetrics
from verityrag.errors import VerityRAGError
from verityrag.pipeline import VerityRAGPipeline

__all__ = [
    "API_KEY_HEADER",
    "HolderDep",
    "MetricsDep",
    "PipelineDep",
    "PipelineHolder",
    "require_api_key",
    "require_read_key",
]

logger = logging.getLogger(__name__)


class PipelineHolder:
    """The app's pipeline: given, or created on first need (lifespan or first request).

    If creating it fails (an unreadable data dir, a store this version cannot use),
    requests get 503 with the reason and the next request tries again.
    """

    def __init__(self, pipeline: VerityRAGPipeline | None, factory: Callable[[], VerityRAGPipeline]) -> None:
        self.pipeline = pipeline
        self.owned = pipeline is None  # made here from the environment: closed here
        self.factory = factory
        self.failure: str | None = None
        self._lock = asyncio.Lock()

    async def get(self) -> VerityRAGPipeline:
        if self.pipeline is not None:
            return self.pipeline
        async with self._lock:
            if self.pipeline is None:
                try:
                    self.pipeline = await run_in_threadpool(self.factory)
                    self.failure = None
                except Exception as exc:
                    self.failure = f"{type(exc).__name__}: {exc}"
                    if isinstance(exc, VerityRAGError):  # says what is missing and how to fix it
                        logger.error("could not create the pipeline: %s", self.failure)
                    else:  # unforeseen: the traceback is the report
                        logger.exception("could not create the pipeline")
                    raise ApiError(503, None, f"the pipeline is unavailable ({self.failure})") from exc
        return self.pipeline

    def stop(self) -> None:
        """At the app's shutdown: the index image written beside the store, and a pipeline made
        here closed (one the caller gave stays open: it is theirs)."""
        if self.pipeline is None:
            return
        if self.owned:
            self.pipeline.close()
        else:
            self.pipeline.checkpoint()


async def _holder(request: Request) -> PipelineHolder:
    holder: PipelineHolder = request.app.state.pipeline_holder
    return holder


async def _pipeline(request: Request) -> VerityRAGPipeline:
    holder: PipelineHolder = request.app.state.pipeline_holder
    return await holder.get()


async def _metrics(request: Request) -> ApiMetrics:
    metrics: ApiMetrics = request.app.state.metrics
    return metrics


HolderDep = Annotated[PipelineHolder, Depends(_holder)]
PipelineDep = Annotated[VerityRAGPipeline, Depends(_pipeline)]
MetricsDep = Annotated[ApiMetrics, Depends(_metrics)]

_KEY_HEADER = APIKeyHeader(
    name=API_KEY_HEADER,
    auto_error=False,
    description="Writes need the write key when the server has one (VERITYRAG_API_KEY); every "
    "endpoint but /health needs a key when it also has a read key (VERITYRAG_READ_KEY). "
    "docs/api-auth.md has the table.",
)


def _require(request: Request, access: Access, given: str | None) -> None:
    # AuthMiddleware has checked already, before the body was read; this keeps a route safe in an
    # app built without it, and declares the header in the OpenAPI spec.
    keys: ApiKeys = request.app.state.api_keys
    refusal = check_key(keys, access, given)
    if refusal is not None:
        raise ApiError(refusal[0], API_KEY_HEADER, refusal[1])


async def require_api_key(request: Request, given: Annotated[str | None, Security(_KEY_HEADER)]) -> None:
    """The write key, when the server has one."""
    _require(request, "write", given)


async def require_read_key(request: Request, given: Annotated[str | None, Security(_KEY_HEADER)]) -> None:
    """The read key (or the write key), when the server has a read key."""
    _require(request, "read", given)
