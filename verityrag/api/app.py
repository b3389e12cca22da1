"""The REST API: ``uvicorn verityrag.api:app``, or ``create_app(pipeline)`` to serve a pipeline you built.

Thin by design: every endpoint calls the pipeline (in a worker thread, so the
event loop keeps serving) and translates its result or error; no logic of its own.

Environment, read when the app is created:

- ``VERITYRAG_DATA_DIR``: where the pipeline persists its documents (in memory without it);
- ``VERITYRAG_API_KEY``: when set, write endpoints need the header ``X-API-Key``;
- ``VERITYRAG_LOAD_BUNDLED=1``: start on the bundled corpus (ingested when the index is
  empty) with the reranker trained and the gate calibrated, as ``make run`` does;
- every other ``VERITYRAG_*`` setting, through ``Settings.from_env()``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import math
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar

from fastapi import Body, Depends, FastAPI, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from verityrag import __version__
from verityrag.api import streaming
from verityrag.api.metrics import CONTENT_TYPE, ApiMetrics
from verityrag.api.middleware import BodySizeLimitMiddleware, RequestMetricsMiddleware
from verityrag.api.models import (
    INGEST_EXAMPLES,
    PATTERN_RULES,
    UNION_TAGS,
    CitationOut,
    ClaimOut,
    DeletedOut,
    DocumentBatchIn,
    DocumentIn,
    DocumentOut,
    DocumentsIn,
    ErrorOut,
    GroundingOut,
    HealthOut,
    IngestedDocument,
    IngestOut,
    QueryIn,
    QueryOut,
    StatsOut,
    TraceStepOut,
)
from verityrag.api.streaming import EVENT_SCHEMA as STREAM_EVENT_SCHEMA
from verityrag.api.streaming import EXAMPLE as STREAM_EXAMPLE
from verityrag.api.streaming import MEDIA_TYPE as STREAM_MEDIA_TYPE
from verityrag.api.streaming import query_events, sse_event
from verityrag.errors import InvalidInputError, VerityRAGError
from verityrag.pipeline import VerityRAGPipeline
from verityrag.types import Document, QueryResult, TraceStep

logger = logging.getLogger(__name__)

API_KEY_ENV = "VERITYRAG_API_KEY"
LOAD_BUNDLED_ENV = "VERITYRAG_LOAD_BUNDLED"


def pipeline_from_env() -> VerityRAGPipeline:
    """The pipeline ``uvicorn verityrag.api:app`` serves: persisted per ``VERITYRAG_DATA_DIR``,
    on the bundled corpus when ``VERITYRAG_LOAD_BUNDLED`` is truthy."""
    if os.environ.get(LOAD_BUNDLED_ENV, "").strip().lower() in {"1", "true", "yes", "on"}:
        from verityrag.bundled import bundled_pipeline  # imports the eval dataset reader

        return bundled_pipeline()
    return VerityRAGPipeline()


API_KEY_HEADER = "X-API-Key"
MAX_BODY_BYTES = 2 * 1024 * 1024


class ApiError(Exception):
    """An error response the API chooses: status, the field at fault (or None) and a message."""

    def __init__(self, status: int, field: str | None, message: str) -> None:
        self.status = status
        self.field = field
        self.message = message
        super().__init__(message)


def _error(
    status: int, field: str | None, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        {"error": {"field": field, "message": message}}, status_code=status, headers=dict(headers or {})
    )


class PipelineHolder:
    """The app's pipeline: given, or created on first need (lifespan or first request).

    If creating it fails (an unreadable data dir, a store this version cannot use),
    requests get 503 with the reason and the next request tries again.
    """

    def __init__(self, pipeline: VerityRAGPipeline | None, factory: Callable[[], VerityRAGPipeline]) -> None:
        self.pipeline = pipeline
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


_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    422: {"model": ErrorOut, "description": "Invalid input; `error.field` names it."},
    413: {"model": ErrorOut, "description": "Request body over the limit."},
    503: {"model": ErrorOut, "description": "A model or backend is unavailable; `error.message` says why."},
}
_WRITE_RESPONSES: dict[int | str, dict[str, Any]] = {
    **_ERROR_RESPONSES,
    401: {
        "model": ErrorOut,
        "description": f"Missing or wrong `{API_KEY_HEADER}` (when the server has a key).",
    },
}
_NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorOut, "description": "No such document."}}

_Endpoint = TypeVar("_Endpoint", bound=Callable[..., Any])


def _get_with_head(app: FastAPI, path: str, **options: Any) -> Callable[[_Endpoint], _Endpoint]:
    """``app.get(path, **options)`` that answers HEAD too, as Starlette's GET routes do and FastAPI's do not.

    HEAD runs the same endpoint, so it gets the GET's status and headers (the server sends
    no body), on a twin route kept out of the OpenAPI spec: listed there, HEAD would repeat
    the GET's operationId (which must be unique) and promise a JSON body it does not send.
    """

    def register(endpoint: _Endpoint) -> _Endpoint:
        app.get(path, **options)(endpoint)
        app.api_route(path, methods=["HEAD"], include_in_schema=False, **options)(endpoint)
        return endpoint

    return register


# Dependencies live at module level: with postponed annotations FastAPI resolves
# ``Annotated[...]`` in this module's namespace.
async def _pipeline(request: Request) -> VerityRAGPipeline:
    holder: PipelineHolder = request.app.state.pipeline_holder
    return await holder.get()


PipelineDep = Annotated[VerityRAGPipeline, Depends(_pipeline)]
_KEY_HEADER = APIKeyHeader(
    name=API_KEY_HEADER, auto_error=False, description="Needed on writes if the server has a key."
)


async def require_api_key(request: Request, given: Annotated[str | None, Security(_KEY_HEADER)]) -> None:
    key: str | None = request.app.state.api_key
    if key is not None and (given is None or not hmac.compare_digest(given.encode(), key.encode())):
        raise ApiError(401, API_KEY_HEADER, f"write endpoints need a valid {API_KEY_HEADER} header")


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
    app.state.pipeline_holder = holder
    app.state.api_key = key
    app.state.metrics = api_metrics
    app.add_middleware(BodySizeLimitMiddleware, max_bytes=max_body_bytes)
    app.add_middleware(RequestMetricsMiddleware, metrics=api_metrics)  # outermost: counts 413s too
    _install_error_handlers(app)

    @_get_with_head(
        app, "/health", response_model=HealthOut, responses={503: {"model": HealthOut}}, tags=["service"]
    )
    async def health() -> Any:
        """Liveness and readiness: 200 when the pipeline is up, 503 with the reason when not."""
        try:
            p = await holder.get()
        except ApiError:
            out = HealthOut(status="unavailable", version=__version__, documents=None, reason=holder.failure)
            return JSONResponse(out.model_dump(), status_code=503)
        return HealthOut(status="ok", version=__version__, documents=p.index.n_documents)

    @app.post(
        "/documents",
        response_model=IngestOut,
        responses=_WRITE_RESPONSES,
        dependencies=[Depends(require_api_key)],
        tags=["documents"],
    )
    async def ingest(
        body: Annotated[DocumentsIn, Body(openapi_examples=INGEST_EXAMPLES)], p: PipelineDep
    ) -> IngestOut:
        """Add one document, or a batch as `{"documents": [...]}`. Re-posting a doc_id replaces it.

        A batch is validated in full before anything is written; the error names the
        document (`documents[3].text`). Searchable when the response arrives.
        """
        if isinstance(body, DocumentIn):
            result = await run_in_threadpool(
                p.ingest_document, body.doc_id, body.title, body.text, body.metadata
            )
            return IngestOut(
                documents=[IngestedDocument(**_fields(result, "doc_id", "n_chunks", "replaced"))]
            )
        return IngestOut(documents=await run_in_threadpool(_ingest_batch, p, body))

    @_get_with_head(
        app,
        "/documents/{doc_id:path}",
        response_model=DocumentOut,
        responses={**_NOT_FOUND, 422: _ERROR_RESPONSES[422], 503: _ERROR_RESPONSES[503]},
        tags=["documents"],
    )
    async def get_document(doc_id: str, p: PipelineDep) -> DocumentOut:
        """A stored document, with the number of chunks it was split into."""
        doc = await run_in_threadpool(p.get_document, doc_id)
        if doc is None:
            raise ApiError(404, "doc_id", f"no document {doc_id!r}")
        return DocumentOut(
            doc_id=doc.doc_id,
            title=doc.title,
            text=doc.text,
            metadata=doc.metadata,
            n_chunks=len(p.index.chunks_of(doc_id)),
        )

    @app.delete(
        "/documents/{doc_id:path}",
        response_model=DeletedOut,
        responses={**_WRITE_RESPONSES, **_NOT_FOUND},
        dependencies=[Depends(require_api_key)],
        tags=["documents"],
    )
    async def delete_document(doc_id: str, p: PipelineDep) -> DeletedOut:
        """Remove a document from the store and both indexes."""
        if not await run_in_threadpool(p.delete_document, doc_id):
            raise ApiError(404, "doc_id", f"no document {doc_id!r}")
        return DeletedOut(doc_id=doc_id, deleted=True)

    async def run_query(
        body: QueryIn, p: VerityRAGPipeline, on_stage: Callable[[TraceStep], None] | None = None
    ) -> QueryResult:
        changes = {
            name: getattr(body, name) for name in ("verify", "strictness") if getattr(body, name) is not None
        }
        settings = p.settings.replace(**changes) if changes else None
        started = time.perf_counter()
        result = await run_in_threadpool(p.query, body.question, body.k, settings, on_stage)
        elapsed = time.perf_counter() - started
        api_metrics.record_query(elapsed, result.abstain_reason.value if result.abstain_reason else None)
        return result

    @app.post("/query", response_model=QueryOut, responses=_ERROR_RESPONSES, tags=["query"])
    async def query(body: QueryIn, p: PipelineDep) -> QueryOut:
        """Answer with cited evidence, or abstain with a reason (both are 200).

        `verify` and `strictness` override the pipeline's settings for this request only.
        """
        return _query_out(await run_query(body, p))

    @app.post(
        "/chat/stream",
        response_class=StreamingResponse,
        responses={
            200: {
                "description": "A Server-Sent Events stream: `stage` events, `sentence` events, a `report`.",
                "content": {STREAM_MEDIA_TYPE: {"schema": STREAM_EVENT_SCHEMA, "example": STREAM_EXAMPLE}},
            },
            **_ERROR_RESPONSES,
        },
        tags=["query"],
    )
    async def chat_stream(body: QueryIn, p: PipelineDep) -> StreamingResponse:
        """The same query as `POST /query` (same body), answered as Server-Sent Events.

        Events, in order: one `stage` per trace step (`stage`, `duration_ms`, `details` with
        the step's figures); when answered, one `sentence` per answer sentence the request's
        strictness kept (`index`, `text`, `citations`, `support`: its weakest claim's); last, one `report` whose data is
        exactly the `POST /query` response. An abstention sends the stages, then the report
        (`abstained`, `abstain_reason`). Each event's data is one line of JSON.

        Stages are sent live, as the agent records them. Input is checked before the first
        byte, so a bad input or an unavailable model gets the same 4xx/503 JSON error as
        `POST /query`, not a stream; a failure after the stream began ends it with one
        `error` event (`message`). While the query is quiet (a slow LLM call), a `: keep-alive`
        comment line goes out every 15 s; SSE clients ignore comments.
        """
        loop = asyncio.get_running_loop()
        # Stages from the worker thread, in order; None once the query has ended.
        stages: asyncio.Queue[TraceStep | None] = asyncio.Queue()

        def on_stage(step: TraceStep) -> None:
            loop.call_soon_threadsafe(stages.put_nowait, step)

        task = asyncio.ensure_future(run_query(body, p, on_stage))
        # Scheduled after every stage callback the thread queued, so the sentinel comes last.
        task.add_done_callback(lambda _: stages.put_nowait(None))
        first = await stages.get()
        if first is None:
            task.result()  # ended before any stage: an input or model error, raised as JSON

        async def events() -> AsyncIterator[str]:
            step = first
            while step is not None:
                yield sse_event("stage", _step_out(step).model_dump(mode="json"))
                # One get() waited on across heartbeats (cancelling it on each timeout could drop
                # a stage that arrived at that moment); a keep-alive comment each quiet spell.
                getter = asyncio.ensure_future(stages.get())
                try:
                    while not (await asyncio.wait({getter}, timeout=streaming.HEARTBEAT_S))[0]:
                        yield streaming.KEEP_ALIVE
                finally:
                    getter.cancel()  # the client went away: stop waiting for the worker
                step = getter.result()
            try:
                result = task.result()
            except Exception as exc:
                logger.error("query failed after its stream began", exc_info=exc)
                yield sse_event("error", {"message": f"{type(exc).__name__}: {exc}"})
                return
            sentences = [
                {"text": s.text, "citations": [_fields(c, *_CITATION_FIELDS) for c in s.citations]}
                for s in result.sentences
            ]
            for event in query_events(_query_out(result), sentences, stages=False):
                yield event

        return StreamingResponse(
            events(),
            media_type=STREAM_MEDIA_TYPE,
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    @_get_with_head(
        app, "/stats", response_model=StatsOut, responses={503: _ERROR_RESPONSES[503]}, tags=["service"]
    )
    async def stats(p: PipelineDep) -> StatsOut:
        """Documents, chunks, index version, embedder, data dir, and the learned checks with their thresholds."""
        return StatsOut(**p.stats())

    @_get_with_head(
        app,
        "/metrics",
        response_class=PlainTextResponse,
        responses={200: {"content": {CONTENT_TYPE: {"example": "verityrag_documents 605\n"}}}},
        tags=["service"],
    )
    async def metrics() -> PlainTextResponse:
        """Prometheus text format: requests, query latency histogram, abstentions by reason, corpus gauges."""
        p = holder.pipeline
        documents = p.index.n_documents if p is not None else None
        chunks = p.index.snapshot().n_live if p is not None else None
        return PlainTextResponse(api_metrics.render(documents, chunks), media_type=CONTENT_TYPE)

    return app


_CITATION_FIELDS = ("chunk_id", "doc_id", "title", "start", "end")


def _fields(obj: object, *names: str) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in names}


def _ingest_batch(p: VerityRAGPipeline, body: DocumentBatchIn) -> list[IngestedDocument]:
    docs: list[Document] = []
    for i, d in enumerate(body.documents):
        # Checked here only to name the document at fault; the pipeline checks the same again.
        # All of its checks: a bad title or metadata was named bare ("metadata"), not documents[i].
        try:
            docs.append(p.validate_document(Document(d.doc_id, d.title, d.text, d.metadata)))
        except InvalidInputError as exc:
            raise InvalidInputError(f"documents[{i}].{exc.field}", exc.problem) from exc
    replaced = [p.index.has_document(d.doc_id) for d in docs]
    p.ingest_documents(docs, progress=False)
    return [
        IngestedDocument(doc_id=d.doc_id, n_chunks=len(p.index.chunks_of(d.doc_id)), replaced=r)
        for d, r in zip(docs, replaced, strict=True)
    ]


def _plain(value: Any) -> Any:
    """Trace details as JSON: numpy scalars to Python, non-finite floats to null."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _step_out(step: TraceStep) -> TraceStepOut:
    return TraceStepOut(stage=step.stage, duration_ms=step.duration_ms, details=_plain(step.details))


def _query_out(result: QueryResult) -> QueryOut:
    return QueryOut(
        question=result.question,
        answer=result.answer,
        abstained=result.abstained,
        abstain_reason=result.abstain_reason.value if result.abstain_reason else None,
        confidence=result.confidence,
        grounding=GroundingOut(
            overall_score=result.grounding.overall_score,
            claims=[ClaimOut(claim=c.claim, support=c.support) for c in result.grounding.claims],
        ),
        unsupported_claims=list(result.unsupported_claims),
        citations=[CitationOut(**_fields(c, *_CITATION_FIELDS)) for c in result.citations],
        trace=[_step_out(t) for t in result.trace],
        latency_ms=result.latency_ms,
    )


# ----------------------------------------------------------------- errors


def _field_path(loc: Sequence[int | str]) -> str | None:
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    path = ""
    for part in parts:
        if part in UNION_TAGS:
            continue
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


def _allowed_methods(request: Request) -> list[str]:
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, APIRoute) and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods or set()
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first: dict[str, Any] = (
            dict(errors[0]) if errors else {"loc": (), "msg": "invalid request", "type": ""}
        )
        field: str | None
        if first.get("type") == "json_invalid":
            ctx = first.get("ctx") or {}
            field, problem = "body", f"is not valid JSON ({ctx.get('error', first['msg'])})"
        elif isinstance(first.get("input"), bytes):
            # FastAPI parses a body as JSON only under a JSON Content-Type and passes any other as
            # bytes, which failed as "Input should be a valid dictionary": `curl -d '{...}'` sends
            # application/x-www-form-urlencoded.
            field = "body"
            sent = request.headers.get("content-type", "none")
            problem = f"must be JSON sent with Content-Type: application/json (the request's was {sent})"
        else:
            field = _field_path(first.get("loc", ()))
            pattern = str((first.get("ctx") or {}).get("pattern", ""))
            rule = PATTERN_RULES.get(pattern) if first.get("type") == "string_pattern_mismatch" else None
            problem = rule or str(first["msg"])
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        return _error(422, field, f"{field}: {problem}{more}")

    @app.exception_handler(InvalidInputError)
    async def on_invalid_input(_: Request, exc: InvalidInputError) -> JSONResponse:
        return _error(422, exc.field, str(exc))

    @app.exception_handler(VerityRAGError)
    async def on_unavailable(_: Request, exc: VerityRAGError) -> JSONResponse:
        # ModelLoadError, StorageError, BackendUnavailableError, NotFittedError: the
        # request was fine, a model or backend is not; retrying later may work.
        logger.error("503 %s: %s", type(exc).__name__, exc)
        return _error(503, None, f"{type(exc).__name__}: {exc}", headers={"Retry-After": "5"})

    @app.exception_handler(ApiError)
    async def on_api_error(_: Request, exc: ApiError) -> JSONResponse:
        return _error(exc.status, exc.field, exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:
            # FastAPI's "error parsing the body" (e.g. bytes that are not UTF-8): one status
            # for every unreadable body, the documented 422 naming the body.
            return _error(422, "body", f"body: is not valid JSON ({exc.detail})")
        if exc.status_code == 405:
            # Starlette answers from the first route whose path matches, so its Allow
            # header lists that route's methods only; list every route's for this path.
            allowed = _allowed_methods(request)
            return _error(405, None, str(exc.detail), headers={"Allow": ", ".join(allowed)})
        return _error(exc.status_code, None, str(exc.detail), headers=exc.headers)

    @app.exception_handler(Exception)
    async def on_unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.error("unexpected error on %s %s", request.method, request.url.path, exc_info=exc)
        return _error(500, None, f"internal error ({type(exc).__name__}); it has been logged")


app = create_app()
