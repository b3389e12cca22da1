"""The API's endpoints, as module-level functions that ``create_app`` registers with :func:`add_routes`.

Thin by design: every endpoint calls the pipeline (in a worker thread, so the event loop
keeps serving) and translates its result or error; no logic of its own. The pipeline, its
holder and the metrics come from ``request.app.state`` through the dependencies in
:mod:`verityrag.api.deps`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Annotated, Any

from fastapi import Body, FastAPI, File, Form, Query, UploadFile
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.concurrency import run_in_threadpool

import verityrag.api.streaming as streaming
from verityrag import __version__
from verityrag.api.collection_routes import collection_endpoints, delete_collection
from verityrag.api.deps import (
    HolderDep,
    MetricsDep,
    PipelineDep,
)
from verityrag.api.error_responses import ApiError
from verityrag.api.prometheus import CONTENT_TYPE, ApiMetrics
from verityrag.api.routing import (
    ERROR_RESPONSES,
    NOT_FOUND,
    READ,
    READ_RESPONSES,
    WRITE,
    WRITE_RESPONSES,
    RouteTable,
)
from verityrag.api.schemas import (
    INGEST_EXAMPLES,
    CitationOut,
    DeletedOut,
    DocumentBatchIn,
    DocumentIn,
    DocumentListOut,
    DocumentOut,
    DocumentsIn,
    DocumentSummaryOut,
    FilesIngestOut,
    HealthOut,
    IngestedDocument,
    IngestedFile,
    IngestOut,
    LearnedCheckOut,
    QueryIn,
    QueryOut,
    StatsOut,
    TraceStepOut,
)
from verityrag.api.streaming import EVENT_SCHEMA as STREAM_EVENT_SCHEMA
from verityrag.api.streaming import EXAMPLE as STREAM_EXAMPLE
from verityrag.api.streaming import MEDIA_TYPE as STREAM_MEDIA_TYPE
from verityrag.api.streaming import query_events, sse_event
from verityrag.errors import InvalidInputError
from verityrag.index.filters import MetadataFilter
from verityrag.ingest.files import document_from_file
from verityrag.ingest.parsers import FORMATS, ParsedFile
from verityrag.pipeline import VerityRAGPipeline
from verityrag.serve.query_reply import citation_reply, query_reply, trace_step_reply
from verityrag.types import Document, QueryResult, TraceStep
from verityrag.verify.sources import iso_time

__all__ = ["OPEN_ENDPOINTS", "WRITE_ENDPOINTS", "RouteTable", "add_routes"]

logger = logging.getLogger(__name__)

endpoints = RouteTable()


def add_routes(app: FastAPI) -> None:
    """Register every endpoint of the API on ``app``."""
    endpoints.add_to(app)
    collection_endpoints.add_to(app)


@endpoints.get_with_head(
    "/health", response_model=HealthOut, responses={503: {"model": HealthOut}}, tags=["service"]
)
async def health(holder: HolderDep) -> Any:
    """Liveness and readiness: 200 when the pipeline is up, 503 with the reason when not."""
    try:
        p = await holder.get()
    except ApiError:
        out = HealthOut(status="unavailable", version=__version__, documents=None, reason=holder.failure)
        return JSONResponse(out.model_dump(), status_code=503)
    return HealthOut(status="ok", version=__version__, documents=p.index.n_documents)


@endpoints.post(
    "/documents",
    response_model=IngestOut,
    responses=WRITE_RESPONSES,
    dependencies=WRITE,
    tags=["documents"],
)
async def ingest(
    body: Annotated[DocumentsIn, Body(openapi_examples=INGEST_EXAMPLES)], p: PipelineDep
) -> IngestOut:
    """Add one document, or a batch as `{"documents": [...]}`. Re-posting a doc_id replaces it.

    A batch is validated in full before anything is written; the error names the
    document (`documents[3].text`). A batch is all or nothing: one store transaction writes it,
    so a crash or a failure leaves every document of it stored, or none. Searchable when the
    response arrives. Metadata may nest 32 levels, hold 1,000 keys and 64 KiB of JSON.
    """
    if isinstance(body, DocumentIn):
        result = await run_in_threadpool(p.ingest_document, body.doc_id, body.title, body.text, body.metadata)
        return IngestOut(documents=[IngestedDocument(**_fields(result, "doc_id", "n_chunks", "replaced"))])
    return IngestOut(documents=await run_in_threadpool(_ingest_batch, p, body))


#: The largest upload ``POST /documents/files`` takes (all files together); other bodies keep
#: the API's ``max_body_bytes``.
MAX_UPLOAD_BYTES = 32 * 1024 * 1024
#: The most files one upload may carry.
MAX_UPLOAD_FILES = 100


@endpoints.post(
    "/documents/files",
    response_model=FilesIngestOut,
    responses=WRITE_RESPONSES,
    dependencies=WRITE,
    tags=["documents"],
)
async def ingest_files(
    p: PipelineDep,
    files: Annotated[
        list[UploadFile],
        File(
            min_length=1,
            max_length=MAX_UPLOAD_FILES,
            description=f"One or more files ({', '.join(FORMATS)}); at most {MAX_UPLOAD_FILES}.",
        ),
    ],
    metadata: Annotated[
        str | None,
        Form(
            description="A JSON object stored with every file's document, e.g. "
            '`{"collection": "manuals"}`; `source` (the file name), `title` and `format` are '
            "added to it."
        ),
    ] = None,
) -> FilesIngestOut:
    """Add files as documents: PDF, DOCX, HTML, Markdown, CSV or plain text, as `multipart/form-data`.

    Each file becomes the document `doc_id` = its name (characters outside `A-Za-z0-9._:-`
    as `-`; a name with non-ASCII characters also carries 8 hex digits of its hash, so
    `договор.txt` and `счёт.txt` stay two documents); uploading the same name again replaces it. The text is extracted (pypdf,
    python-docx, an HTML reader; Markdown through CommonMark), the title taken from the file
    (PDF/DOCX properties, HTML `<title>`, the first heading) or its name. The document's
    metadata holds `source` (the file name, shown with citations), `title` and `format`.
    A file that cannot be read (damaged, encrypted, a scan without text, binary) is a 422
    naming it (`files[2]`) and why, and nothing of the upload is written: all files or none.
    Up to 32 MiB per request (`MAX_UPLOAD_BYTES`).
    """
    extra = _form_metadata(metadata)
    uploads = [(f.filename or f"file-{i}", f.content_type, await f.read()) for i, f in enumerate(files)]
    return FilesIngestOut(documents=await run_in_threadpool(_ingest_files, p, uploads, extra))


def _form_metadata(raw: str | None) -> dict[str, Any]:
    if raw is None or not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ApiError(422, "metadata", f"metadata: is not valid JSON ({exc})") from exc
    except RecursionError as exc:  # nested deeper than Python's parser goes
        raise ApiError(422, "metadata", "metadata: nests too deep to read") from exc
    if not isinstance(value, dict):
        raise ApiError(422, "metadata", "metadata: must be a JSON object")
    return value


def _ingest_files(
    p: VerityRAGPipeline, uploads: list[tuple[str, str | None, bytes]], extra: dict[str, Any]
) -> list[IngestedFile]:
    parsed: list[ParsedFile] = []
    docs: list[Document] = []
    for i, (filename, content_type, data) in enumerate(uploads):
        try:
            doc, one = document_from_file(filename, data, content_type, p.settings.max_document_chars, extra)
            docs.append(p.validate_document(doc))
        except InvalidInputError as exc:
            field = f"files[{i}]" if exc.field == "file" else f"files[{i}].{exc.field}"
            problem = exc.problem if exc.field == "file" else f"({filename!r}) {exc.problem}"
            raise InvalidInputError(field, problem) from exc
        parsed.append(one)
    seen: dict[str, int] = {}
    for i, doc in enumerate(docs):
        if doc.doc_id in seen:
            raise InvalidInputError(
                f"files[{i}]",
                f"{uploads[i][0]!r} gives the doc_id {doc.doc_id!r}, as files[{seen[doc.doc_id]}] does: "
                "rename one of them",
            )
        seen[doc.doc_id] = i
    replaced = [p.index.has_document(d.doc_id) for d in docs]
    p.ingest_documents(docs, progress=False)
    return [
        IngestedFile(
            doc_id=d.doc_id,
            n_chunks=len(p.index.chunks_of(d.doc_id)),
            replaced=r,
            title=one.title,
            source=one.source,
            format=one.format,
            chars=len(one.text),
        )
        for d, r, one in zip(docs, replaced, parsed, strict=True)
    ]


@endpoints.get_with_head(
    "/documents",
    response_model=DocumentListOut,
    responses=READ_RESPONSES,
    dependencies=READ,
    tags=["documents"],
)
async def list_documents(
    p: PipelineDep,
    limit: Annotated[int, Query(ge=1, le=1000, description="Documents per page.")] = 50,
    offset: Annotated[
        int, Query(ge=0, description="Documents to skip (`next_offset` of the last page).")
    ] = 0,
    filter: Annotated[
        str | None,
        Query(
            description="A metadata filter as JSON, as `POST /query` takes it: "
            '`{"source": "steam.pdf"}` or `{"lang": {"$in": ["en", "de"]}}`.',
            examples=['{"source": "encyclopedia"}'],
        ),
    ] = None,
    title: Annotated[
        str | None,
        Query(max_length=200, description="Only documents whose title holds these words (any case)."),
    ] = None,
    collection: Annotated[
        str | None,
        Query(
            max_length=200,
            description="Only this collection's documents (`yours`: those added without a collection).",
        ),
    ] = None,
) -> DocumentListOut:
    """The stored documents, ordered by doc_id, a page at a time, without their text.

    `total` counts every document the filter, `title` and `collection` pass; `next_offset` is
    where the next page starts (null on the last one). A document added or deleted between
    pages shifts them.
    """
    flt = _query_filter(filter)
    total, page = await run_in_threadpool(p.list_documents, flt, offset, limit, title, collection)
    return DocumentListOut(
        total=total,
        offset=offset,
        limit=limit,
        next_offset=offset + limit if offset + limit < total else None,
        documents=[
            DocumentSummaryOut(
                doc_id=d.doc_id,
                title=d.title,
                metadata=d.metadata,
                n_chunks=d.n_chunks,
                ingested_at=iso_time(d.ingested_at),
                chars=d.chars,
            )
            for d in page
        ],
    )


def _query_filter(raw: str | None) -> MetadataFilter | None:
    if raw is None or not raw.strip():
        return None
    try:
        spec = json.loads(raw)
    except ValueError as exc:
        raise ApiError(422, "filter", f"filter: is not valid JSON ({exc})") from exc
    except RecursionError as exc:  # nested deeper than Python's parser goes
        raise ApiError(422, "filter", "filter: nests too deep to read") from exc
    if not isinstance(spec, dict):
        raise ApiError(422, "filter", 'filter: must be a JSON object such as {"source": "x"}')
    return MetadataFilter.from_dict(spec)


@endpoints.get_with_head(
    "/documents/{doc_id:path}",
    response_model=DocumentOut,
    responses={**NOT_FOUND, **READ_RESPONSES},
    dependencies=READ,
    tags=["documents"],
)
async def get_document(doc_id: str, p: PipelineDep) -> Response:
    """A stored document, with the number of chunks it was split into and when it was ingested."""
    body = await run_in_threadpool(_document_json, p, doc_id)
    if body is None:
        raise ApiError(404, "doc_id", f"no document {doc_id!r}")
    return Response(body, media_type="application/json")


def _document_json(p: VerityRAGPipeline, doc_id: str) -> bytes | None:
    """The document as JSON, written by ``json`` rather than the response model's serializer: that
    one stops at 255 levels (pydantic), and a store may hold metadata nested deeper from before
    ingest limited it. Whatever the store returns is served."""
    doc = p.get_document(doc_id)
    if doc is None:
        return None
    found = p.writer.provenance([doc_id]).get(doc_id)
    out = {
        "doc_id": doc.doc_id,
        "title": doc.title,
        "text": doc.text,
        "metadata": doc.metadata,
        "n_chunks": len(p.index.chunks_of(doc_id)),
        "ingested_at": iso_time(found.ingested_at) if found is not None else None,
    }
    try:
        return json.dumps(out, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate stored before ingest refused them: escaped
        return json.dumps(out, allow_nan=False).encode("ascii")


@endpoints.delete(
    "/documents/{doc_id:path}",
    response_model=DeletedOut,
    responses={**WRITE_RESPONSES, **NOT_FOUND},
    dependencies=WRITE,
    tags=["documents"],
)
async def delete_document(doc_id: str, p: PipelineDep) -> DeletedOut:
    """Remove a document from the store and both indexes."""
    if not await run_in_threadpool(p.delete_document, doc_id):
        raise ApiError(404, "doc_id", f"no document {doc_id!r}")
    return DeletedOut(doc_id=doc_id, deleted=True)


async def run_query(
    body: QueryIn,
    p: VerityRAGPipeline,
    api_metrics: ApiMetrics,
    on_stage: Callable[[TraceStep], None] | None = None,
) -> QueryResult:
    """``p.query`` for ``body`` in a worker thread, with the request's overrides; recorded in ``api_metrics``."""
    changes = {
        name: getattr(body, name)
        for name in ("verify", "strictness", "min_sources")
        if getattr(body, name) is not None
    }
    settings = p.settings.replace(**changes) if changes else None
    started = time.perf_counter()
    # p.query checks the filter and collection before its first stage: a bad one is a 422, not a stream
    result = await run_in_threadpool(
        p.query, body.question, body.k, settings, on_stage, body.filter, body.collection
    )
    elapsed = time.perf_counter() - started
    api_metrics.record_query(elapsed, result.abstain_reason.value if result.abstain_reason else None)
    return result


@endpoints.post(
    "/query", response_model=QueryOut, responses=READ_RESPONSES, dependencies=READ, tags=["query"]
)
async def query(body: QueryIn, p: PipelineDep, api_metrics: MetricsDep) -> QueryOut:
    """Answer with cited evidence, or abstain with a reason (both are 200).

    `verify`, `strictness` and `min_sources` override the pipeline's settings for this request
    only; `filter` keeps the evidence to documents whose metadata matches (applied inside
    retrieval; none matching abstains with `no_evidence`); `collection` chooses which documents
    (default: yours when there are any, the bundled demo only when nothing else is there). Each citation names its document's
    declared `source` and when it was ingested.
    """
    return _query_out(await run_query(body, p, api_metrics))


@endpoints.post(
    "/chat/stream",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "A Server-Sent Events stream: `stage` events, `sentence` events, a `report`.",
            "content": {STREAM_MEDIA_TYPE: {"schema": STREAM_EVENT_SCHEMA, "example": STREAM_EXAMPLE}},
        },
        **READ_RESPONSES,
    },
    dependencies=READ,
    tags=["query"],
)
async def chat_stream(body: QueryIn, p: PipelineDep, api_metrics: MetricsDep) -> StreamingResponse:
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

    task = asyncio.ensure_future(run_query(body, p, api_metrics, on_stage))
    # Scheduled after every stage callback the thread queued, so the sentinel comes last.
    task.add_done_callback(lambda _: stages.put_nowait(None))
    first = await stages.get()
    if first is None:
        task.result()  # ended before any stage: an input or model error, raised as JSON

    async def events() -> AsyncIterator[str]:
        step = first
        while step is not None:
            yield sse_event(
                "stage", TraceStepOut.model_validate(trace_step_reply(step)).model_dump(mode="json")
            )
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
            {
                "text": s.text,
                "citations": [
                    CitationOut.model_validate(citation_reply(c)).model_dump(mode="json") for c in s.citations
                ],
            }
            for s in result.sentences
        ]
        for event in query_events(_query_out(result), sentences, stages=False):
            yield event

    return StreamingResponse(
        events(),
        media_type=STREAM_MEDIA_TYPE,
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


@endpoints.get_with_head(
    "/stats",
    response_model=StatsOut,
    responses={503: ERROR_RESPONSES[503], 401: READ_RESPONSES[401]},
    dependencies=READ,
    tags=["service"],
)
async def stats(p: PipelineDep) -> StatsOut:
    """Documents, chunks, index version, embedder, whether documents persist, and the learned
    checks with their thresholds. No filesystem path: the data folder and model folders stay private."""
    found = p.stats()
    checks = {
        stage: LearnedCheckOut(
            **{k: v for k, v in check.items() if k != "model_dir"},
            model=Path(check["model_dir"]).name if check.get("model_dir") else None,
        )
        for stage, check in found["learned_checks"].items()
    }
    return StatsOut(
        documents=found["documents"],
        chunks=found["chunks"],
        index_version=found["index_version"],
        embedder=found["embedder"],
        persistent=found["data_dir"] is not None,
        learned_checks=checks,
    )


@endpoints.get_with_head(
    "/metrics",
    response_class=PlainTextResponse,
    responses={
        200: {"content": {CONTENT_TYPE: {"example": "verityrag_documents 605\n"}}},
        401: READ_RESPONSES[401],
    },
    dependencies=READ,
    tags=["service"],
)
async def metrics(holder: HolderDep, api_metrics: MetricsDep) -> PlainTextResponse:
    """Prometheus text format: requests, query latency histogram, abstentions by reason, corpus gauges."""
    p = holder.pipeline
    documents = p.index.n_documents if p is not None else None
    chunks = p.index.snapshot().n_live if p is not None else None
    return PlainTextResponse(api_metrics.render(documents, chunks), media_type=CONTENT_TYPE)


def _fields(obj: object, *names: str) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in names}


def _ingest_batch(p: VerityRAGPipeline, body: DocumentBatchIn) -> list[IngestedDocument]:
    docs = [Document(d.doc_id, d.title, d.text, d.metadata) for d in body.documents]
    return [
        IngestedDocument(**_fields(result, "doc_id", "n_chunks", "replaced"))
        for result in p.ingest_batch(docs)
    ]


def _query_out(result: QueryResult) -> QueryOut:
    """The reply every front end gives (:func:`verityrag.serve.query_reply.query_reply`), checked
    against the API's documented schema."""
    return QueryOut.model_validate(query_reply(result))


#: What AuthMiddleware asks of each endpoint (verityrag.api.auth): writes need the write key,
#: /health nothing, every other route (and an unmatched path) the read key when there is one.
WRITE_ENDPOINTS: frozenset[object] = frozenset({ingest, ingest_files, delete_document, delete_collection})
OPEN_ENDPOINTS: frozenset[object] = frozenset({health})
