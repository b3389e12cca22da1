"""The REST API: ``uvicorn verityrag.api:app``, or ``create_app(pipeline)`` to serve a pipeline you built.

Thin by design: every endpoint calls the pipeline (in a worker thread, so the
event loop keeps serving) and translates its result or error; no logic of its own.
The endpoints are in :mod:`verityrag.api.routes`, their dependencies in
:mod:`verityrag.api.deps`, the error responses in :mod:`verityrag.api.errors`; this
module builds the app around them.

Environment, read when the app is created:

- ``VERITYRAG_DATA_DIR``: where the pipeline persists its documents (in memory without it);
- ``VERITYRAG_API_KEY``: when set, write endpoints need the header ``X-API-Key``;
- ``VERITYRAG_LOAD_BUNDLED=1``: start on the bundled corpus (ingested when the index is
  empty) with the reranker trained and the gate calibrated, as ``make run`` does;
- every other ``VERITYRAG_*`` setting, through ``Settings.from_env()``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from verityrag import __version__
from verityrag.api.deps import API_KEY_HEADER, PipelineDep, PipelineHolder, require_api_key
from verityrag.api.errors import ApiError, install_error_handlers
from verityrag.api.metrics import ApiMetrics
from verityrag.api.middleware import BodySizeLimitMiddleware, RequestMetricsMiddleware
from verityrag.api.routes import add_routes
from verityrag.pipeline import VerityRAGPipeline

# ApiError, PipelineHolder, PipelineDep, require_api_key and API_KEY_HEADER were defined here
# before the endpoints moved to routes.py: still importable from this module.
__all__ = [
    "API_KEY_ENV",
    "API_KEY_HEADER",
    "LOAD_BUNDLED_ENV",
    "MAX_BODY_BYTES",
    "ApiError",
    "PipelineDep",
    "PipelineHolder",
    "app",
    "create_app",
    "pipeline_from_env",
    "require_api_key",
]

API_KEY_ENV = "VERITYRAG_API_KEY"
LOAD_BUNDLED_ENV = "VERITYRAG_LOAD_BUNDLED"


def pipeline_from_env() -> VerityRAGPipeline:
    """The pipeline ``uvicorn verityrag.api:app`` serves: persisted per ``VERITYRAG_DATA_DIR``,
    on the bundled corpus when ``VERITYRAG_LOAD_BUNDLED`` is truthy."""
    if os.environ.get(LOAD_BUNDLED_ENV, "").strip().lower() in {"1", "true", "yes", "on"}:
        from verityrag.serve.bundled import bundled_pipeline  # imports the eval dataset reader

        return bundled_pipeline()
    return VerityRAGPipeline()


MAX_BODY_BYTES = 2 * 1024 * 1024


def create_app(
    pipeline: VerityRAGPipeline | None = None,
    api_key: str | None = None,
    *,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> FastAPI:
    """Build the API around ``pipeline`` (created lazily from the environment when None).

    ``api_key=None`` reads ``VERITYRAG_API_KEY``; an empty string turns the key off.
    """
    key = os.environ.get(API_KEY_ENV) if api_key is None else api_key
    key = key or None
    holder = PipelineHolder(pipeline, pipeline_from_env)
    api_metrics = ApiMetrics()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # Restore a persisted index before the first request, not during it. A failure is
        # logged; /health says why, and requests try again.
        with contextlib.suppress(ApiError):
            await holder.get()
        yield

    app = FastAPI(
        title="VerityRAG",
        version=__version__,
        summary="Answers questions over live documents, or abstains with a recorded reason.",
        lifespan=lifespan,
    )
    # What the routes' dependencies read (verityrag.api.deps).
    app.state.pipeline_holder = holder
    app.state.api_key = key
    app.state.metrics = api_metrics
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=max_body_bytes)
    app.add_middleware(RequestMetricsMiddleware, metrics=api_metrics)  # outermost: counts 413s too
    install_error_handlers(app)
    add_routes(app)
    return app


app = create_app()
