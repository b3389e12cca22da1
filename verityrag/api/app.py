"""The REST API: ``uvicorn verityrag.api:app``, or ``create_app(pipeline)`` to serve a pipeline you built.

Thin by design: every endpoint calls the pipeline (in a worker thread, so the
event loop keeps serving) and translates its result or error; no logic of its own.
The endpoints are in :mod:`verityrag.api.routes`, their dependencies in
:mod:`verityrag.api.deps`, the error responses in :mod:`verityrag.api.error_responses`; this
module builds the app around them.

Environment, read when the app is created:

- ``VERITYRAG_DATA_DIR``: where the pipeline persists its documents (in memory without it);
- ``VERITYRAG_API_KEY``: when set, write endpoints need the header ``X-API-Key``;
- ``VERITYRAG_READ_KEY``: when set too, every endpoint but ``/health`` needs a key
  (:mod:`verityrag.api.auth`; a key that no request could send stops the start);
- ``VERITYRAG_LOAD_BUNDLED=1``: start with the bundled corpus as the ``demo`` collection
  (ingested on an index's first start), the reranker trained and the gate calibrated on it, as
  ``make run`` does; questions ask the user's documents once there are any;
- every other ``VERITYRAG_*`` setting, through ``Settings.from_env()``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from verityrag import __version__
from verityrag.api.auth import (
    ALLOWED_ORIGINS_ENV,
    API_KEY_ENV,
    API_KEY_HEADER,
    READ_KEY_ENV,
    ApiKeys,
    AuthMiddleware,
    allowed_origins,
)
from verityrag.api.deps import PipelineDep, PipelineHolder, require_api_key
from verityrag.api.error_responses import ApiError, install_error_handlers
from verityrag.api.middleware import (
    BODY_IDLE_TIMEOUT_S,
    BODY_TOTAL_TIMEOUT_S,
    BodySizeLimitMiddleware,
    RequestMetricsMiddleware,
    UnhandledErrorMiddleware,
)
from verityrag.api.prometheus import ApiMetrics
from verityrag.api.routes import MAX_UPLOAD_BYTES, OPEN_ENDPOINTS, WRITE_ENDPOINTS, add_routes
from verityrag.config import Settings
from verityrag.ingest.writer import data_dir_from_env
from verityrag.pipeline import VerityRAGPipeline

# ApiError, PipelineHolder, PipelineDep, require_api_key and API_KEY_HEADER were defined here
# before the endpoints moved to routes.py: still importable from this module.
__all__ = [
    "API_KEY_ENV",
    "API_KEY_HEADER",
    "LOAD_BUNDLED_ENV",
    "MAX_BODY_BYTES",
    "READ_KEY_ENV",
    "ApiError",
    "PipelineDep",
    "PipelineHolder",
    "app",
    "create_app",
    "pipeline_from_env",
    "require_api_key",
]

LOAD_BUNDLED_ENV = "VERITYRAG_LOAD_BUNDLED"


def pipeline_from_env() -> VerityRAGPipeline:
    """The pipeline ``uvicorn verityrag.api:app`` serves: persisted per ``VERITYRAG_DATA_DIR``,
    with the bundled corpus as the ``demo`` collection when ``VERITYRAG_LOAD_BUNDLED`` is truthy
    (loaded on a first start). Its models are loaded here, before ``/health`` says ready, not by
    the first question. The environment is read here, once: the pipeline's constructor reads none."""
    settings = Settings.from_env()
    data_dir = data_dir_from_env()
    if os.environ.get(LOAD_BUNDLED_ENV, "").strip().lower() in {"1", "true", "yes", "on"}:
        from verityrag.index.collections import DEMO_COLLECTION
        from verityrag.serve.bundled import bundled_pipeline

        return bundled_pipeline(store_dir=data_dir, collection=DEMO_COLLECTION, settings=settings).warm_up()
    return VerityRAGPipeline(data_dir=data_dir, settings=settings).warm_up()


MAX_BODY_BYTES = 2 * 1024 * 1024


def create_app(
    pipeline: VerityRAGPipeline | None = None,
    api_key: str | None = None,
    *,
    read_key: str | None = None,
    origins: str | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    body_idle_timeout_s: float = BODY_IDLE_TIMEOUT_S,
    body_total_timeout_s: float = BODY_TOTAL_TIMEOUT_S,
) -> FastAPI:
    """Build the API around ``pipeline`` (created lazily from the environment when None).

    ``api_key=None`` reads ``VERITYRAG_API_KEY``, ``read_key=None`` ``VERITYRAG_READ_KEY``; an
    empty string turns a key off. A key with whitespace at either end, or a read key without a
    write key, raises ``InvalidInputError`` naming the variable: the server does not start.
    ``origins=None`` reads ``VERITYRAG_ALLOWED_ORIGINS``: other sites whose pages may write.
    """
    keys = ApiKeys.of(
        os.environ.get(API_KEY_ENV) if api_key is None else api_key,
        os.environ.get(READ_KEY_ENV) if read_key is None else read_key,
    )
    holder = PipelineHolder(pipeline, pipeline_from_env)
    api_metrics = ApiMetrics()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # Restore a persisted index before the first request, not during it. A failure is
        # logged; /health says why, and requests try again.
        with contextlib.suppress(ApiError):
            await holder.get()
        yield
        await run_in_threadpool(holder.stop)

    app = FastAPI(
        title="VerityRAG",
        version=__version__,
        summary="Answers questions over live documents, or abstains with a recorded reason.",
        lifespan=lifespan,
    )
    # What the routes' dependencies read (verityrag.api.deps).
    app.state.pipeline_holder = holder
    app.state.api_keys = keys
    app.state.api_key = keys.write  # read by code written before the read key
    app.state.metrics = api_metrics
    # Innermost first: the body is read (413, 408) only after the key is checked (401, 403), so
    # an unauthenticated client gets its answer before sending a byte of body; the 500 catcher
    # sits inside the counting, which is outermost and counts every response.
    app.add_middleware(
        BodySizeLimitMiddleware,
        max_bytes=max_body_bytes,
        idle_timeout_s=body_idle_timeout_s,
        total_timeout_s=body_total_timeout_s,
        path_limits={"/documents/files": max(MAX_UPLOAD_BYTES, max_body_bytes)},
    )
    app.add_middleware(
        AuthMiddleware,
        keys=keys,
        write=WRITE_ENDPOINTS,
        open_=OPEN_ENDPOINTS,
        origins=allowed_origins(os.environ.get(ALLOWED_ORIGINS_ENV) if origins is None else origins),
    )
    app.add_middleware(UnhandledErrorMiddleware)
    app.add_middleware(RequestMetricsMiddleware, metrics=api_metrics)
    install_error_handlers(app)
    add_routes(app)
    return app


app = create_app()
