"""``python -m verityrag.mcp_server``: VerityRAG as an MCP server over stdio.

Tools (built on the official ``mcp`` package, ``MCPServer``):

- ``query(question, strictness=None, filter=None, collection=None)``: the pipeline's cited answer,
  or its abstention and why; ``filter`` keeps the evidence to documents whose metadata matches,
  ``collection`` chooses which (default: the user's documents when there are any, else the
  bundled ``demo`` collection);
- ``ingest(doc_id, title, text)``: add or replace a document, searchable when the call returns;
- ``list_documents(limit=20, offset=0, filter=None)``: a page of the stored documents (no text);
- ``delete_document(doc_id)``: remove a document;
- ``verify(answer, evidence)``: claim-level grounding of ``answer`` against evidence texts.

The server reports the package's version (``verityrag.__version__``) in ``initialize``.

With ``--api-url URL`` (or ``VERITYRAG_API_URL``) the tools call the REST API at ``URL``, the one
``make run`` starts, with the key in ``VERITYRAG_API_KEY`` if it asks for one: the MCP server,
the API and the app then serve one index, and the server starts in a second, holding no
index of its own. Without it the server builds its own pipeline:
state lives in ``VERITYRAG_DATA_DIR`` (or ``--data-dir``) when set, else in memory. On start,
an empty index is filled with the bundled corpus (``data/built/corpus.jsonl``, built by ``make data``; ``--max-docs`` or
``VERITYRAG_MCP_MAX_DOCS`` keeps only the first N documents) so ``query`` works at once.
The whole corpus is then calibrated on its calibration questions, as the Streamlit app and
``make run``'s API are (a few seconds); a prefix of it is not (the questions' articles may be
missing from it), nor is an index restored from the data directory that holds other documents
than the bundled corpus: those keep the shipped gate.
Logs go to stderr: stdout carries the protocol.

Bad input is returned as an MCP tool error (``isError``) that names the field (an argument
the tool does not take too, rather than dropped; ``verify`` takes an answer of at most 4,000
characters and evidence texts of at most 20,000 each); any other
VerityRAG failure (e.g. an Elasticsearch backend that is down) as a tool error naming the
error and its reason, not the SDK's bare "Error executing tool".
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from verityrag import __version__
from verityrag.config import STRICTNESS_LEVELS, Settings
from verityrag.errors import InvalidInputError, VerityRAGError
from verityrag.index.collections import DEMO_COLLECTION
from verityrag.index.filters import MetadataFilter
from verityrag.ingest.writer import data_dir_from_env
from verityrag.pipeline import VerityRAGPipeline
from verityrag.serve.api_client import API_KEY_ENV, ApiClient
from verityrag.serve.bundled import bundled_pipeline, load_bundled_corpus
from verityrag.serve.mcp_stdio import run_stdio
from verityrag.serve.query_reply import query_reply
from verityrag.text.unicode import check_utf8, utf8_safe
from verityrag.types import Chunk, Citation, CitedSentence
from verityrag.verify.grounding import GroundingChecker
from verityrag.verify.sources import iso_time

logger = logging.getLogger(__name__)

MAX_DOCS_ENV = "VERITYRAG_MCP_MAX_DOCS"
API_URL_ENV = "VERITYRAG_API_URL"
SERVER_NAME = "verityrag"
MAX_EVIDENCE_ITEMS = 50
#: ``verify``'s bounds: an answer is a few sentences, each evidence text a passage or a page; a
#: megabyte answer would hold the grounding model for minutes.
MAX_VERIFY_ANSWER_CHARS = 4_000
MAX_EVIDENCE_CHARS = 20_000
MAX_LIST_LIMIT = 1000
CITATION_FIELDS = ("chunk_id", "doc_id", "title", "start", "end")


# ------------------------------------------------------------------ tool bodies
# Plain functions over a pipeline, so they can be tested without the protocol.


def run_query(
    pipeline: VerityRAGPipeline,
    question: str,
    strictness: str | None = None,
    filter: dict[str, Any] | None = None,
    collection: str | None = None,
) -> dict[str, Any]:
    """Answer ``question`` or abstain; ``strictness`` overrides the pipeline's for this call,
    ``filter`` (metadata, as ``VerityRAGPipeline.query`` takes it) limits the evidence, and
    ``collection`` chooses the documents (``VerityRAGPipeline.query``)."""
    if isinstance(question, str):  # the pipeline names any other type
        check_utf8("question", question)
    settings = None
    if strictness is not None:
        settings = pipeline.settings.replace(strictness=strictness)  # validated: names the allowed levels
    result = pipeline.query(question, settings=settings, filter=filter, collection=collection)
    return query_tool_reply(query_reply(result))


def _check_limit(limit: int) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidInputError("limit", f"must be an integer from 1 to {MAX_LIST_LIMIT}, got {limit!r}")


def run_list_documents(
    pipeline: VerityRAGPipeline, limit: int = 20, offset: int = 0, filter: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A page of the stored documents ordered by doc_id, without their text."""
    _check_limit(limit)
    total, page = pipeline.list_documents(MetadataFilter.from_dict(filter), offset, limit)
    return {
        "total": total,
        "offset": offset,
        "limit": limit,
        "next_offset": offset + limit if offset + limit < total else None,
        "documents": [
            {
                "doc_id": d.doc_id,
                "title": d.title,
                "metadata": d.metadata,
                "n_chunks": d.n_chunks,
                "ingested_at": iso_time(d.ingested_at),
            }
            for d in page
        ],
    }


def run_delete_document(pipeline: VerityRAGPipeline, doc_id: str) -> dict[str, Any]:
    """Remove ``doc_id`` from the store and both indexes; ``deleted`` is False when it was not there."""
    if not isinstance(doc_id, str) or not doc_id:
        raise InvalidInputError("doc_id", "must be a non-empty string")
    return {"doc_id": doc_id, "deleted": pipeline.delete_document(doc_id)}


def query_tool_reply(reply: Mapping[str, Any]) -> dict[str, Any]:
    """The ``query`` tool's reply: fields of the reply every front end gives
    (:func:`verityrag.serve.query_reply.query_reply`, ``POST /query``'s body), fewer and flatter
    for a model to read: the short answer's text, the grounding score, each citation's place."""
    short = reply.get("short_answer")  # .get: an API of an older version may not send it
    return {
        "question": reply["question"],
        "answer": reply["answer"],
        "short_answer": short["text"] if short else None,
        "abstained": reply["abstained"],
        "abstain_reason": reply["abstain_reason"],
        "case": reply.get("case"),
        "headline": reply.get("headline"),
        "explanation": reply.get("explanation"),
        "candidate": (reply.get("candidate") or {}).get("text"),
        "confidence": reply["confidence"],
        "grounding_score": reply["grounding"]["overall_score"],
        "unsupported_claims": reply.get("unsupported_claims", []),
        "citations": [{k: c[k] for k in CITATION_FIELDS} for c in reply["citations"]],
        "latency_ms": reply["latency_ms"],
    }


def run_ingest(pipeline: VerityRAGPipeline, doc_id: str, title: str, text: str) -> dict[str, Any]:
    """Add or replace one document."""
    res = pipeline.ingest_document(doc_id, title, text)
    return {"doc_id": res.doc_id, "n_chunks": res.n_chunks, "replaced": res.replaced}


def run_verify(checker: GroundingChecker, answer: str, evidence: Sequence[str]) -> dict[str, Any]:
    """Score every claim of ``answer`` against all of ``evidence`` (each text a throwaway chunk)."""
    if not isinstance(answer, str) or not answer.strip():
        raise InvalidInputError("answer", "is empty")
    check_utf8("answer", answer)
    if len(answer) > MAX_VERIFY_ANSWER_CHARS:
        raise InvalidInputError(
            "answer", f"has {len(answer):,} characters; the limit is {MAX_VERIFY_ANSWER_CHARS:,}"
        )
    if not isinstance(evidence, list | tuple):
        raise InvalidInputError("evidence", "must be a list of texts")
    if not evidence:
        raise InvalidInputError("evidence", "is empty: give at least one evidence text")
    if len(evidence) > MAX_EVIDENCE_ITEMS:
        raise InvalidInputError("evidence", f"has {len(evidence)} items; the limit is {MAX_EVIDENCE_ITEMS}")
    chunks: dict[str, Chunk] = {}
    for i, text in enumerate(evidence):
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError(f"evidence[{i}]", "is empty")
        if len(text) > MAX_EVIDENCE_CHARS:
            raise InvalidInputError(
                f"evidence[{i}]", f"has {len(text):,} characters; the limit is {MAX_EVIDENCE_CHARS:,}"
            )
        chunk_id = f"evidence#{i}"
        chunks[chunk_id] = Chunk(chunk_id, "evidence", "", text, i, 0, len(text))
    citations = tuple(Citation(c.chunk_id, c.doc_id, c.title, c.start, c.end) for c in chunks.values())
    report = checker.check([CitedSentence(answer, citations)], chunks)
    return {
        "overall_score": report.overall_score,
        "claims": [
            {"claim": c.claim, "support": c.support, "details": dict(c.details)} for c in report.claims
        ],
    }


# ------------------------------------------------------------- tool sources


class ToolSource(Protocol):
    """What the tools run on: a pipeline in this process, or the REST API."""

    def query(
        self, question: str, strictness: str | None, filter: dict[str, Any] | None, collection: str | None
    ) -> dict[str, Any]: ...
    def ingest(self, doc_id: str, title: str, text: str) -> dict[str, Any]: ...
    def list_documents(self, limit: int, offset: int, filter: dict[str, Any] | None) -> dict[str, Any]: ...
    def delete_document(self, doc_id: str) -> dict[str, Any]: ...
    def verify(self, answer: str, evidence: Sequence[str]) -> dict[str, Any]: ...


@dataclass(frozen=True)
class PipelineTools:
    """The tools over a pipeline in this process."""

    pipeline: VerityRAGPipeline

    def query(
        self, question: str, strictness: str | None, filter: dict[str, Any] | None, collection: str | None
    ) -> dict[str, Any]:
        return run_query(self.pipeline, question, strictness, filter, collection)

    def ingest(self, doc_id: str, title: str, text: str) -> dict[str, Any]:
        return run_ingest(self.pipeline, doc_id, title, text)

    def list_documents(self, limit: int, offset: int, filter: dict[str, Any] | None) -> dict[str, Any]:
        return run_list_documents(self.pipeline, limit, offset, filter)

    def delete_document(self, doc_id: str) -> dict[str, Any]:
        return run_delete_document(self.pipeline, doc_id)

    def verify(self, answer: str, evidence: Sequence[str]) -> dict[str, Any]:
        return run_verify(self.pipeline.grounding, answer, evidence)


class ApiTools:
    """The tools over the REST API at ``url``: the same replies as :class:`PipelineTools`, from
    the API's index. The API checks the input (its 4xx errors name the field, as tool errors);
    ``verify`` needs no index and runs here."""

    def __init__(self, url: str, api_key: str | None = None, client: httpx.Client | None = None) -> None:
        # ``client``: one already pointed at the API (a test's in-process TestClient).
        self.api = ApiClient(url, api_key, client=client)
        self.grounding = GroundingChecker()

    def query(
        self, question: str, strictness: str | None, filter: dict[str, Any] | None, collection: str | None
    ) -> dict[str, Any]:
        if isinstance(question, str):
            check_utf8("question", question)
        reply = self.api.query(question, strictness=strictness, filter=filter, collection=collection)
        return query_tool_reply(reply)

    def ingest(self, doc_id: str, title: str, text: str) -> dict[str, Any]:
        out = self.api.add_document(doc_id, title, text)
        return {"doc_id": out["doc_id"], "n_chunks": out["n_chunks"], "replaced": out["replaced"]}

    def list_documents(self, limit: int, offset: int, filter: dict[str, Any] | None) -> dict[str, Any]:
        _check_limit(limit)
        return self.api.list_documents(limit, offset, filter)

    def delete_document(self, doc_id: str) -> dict[str, Any]:
        if not isinstance(doc_id, str) or not doc_id:
            raise InvalidInputError("doc_id", "must be a non-empty string")
        return {"doc_id": doc_id, "deleted": self.api.delete_document(doc_id)}

    def verify(self, answer: str, evidence: Sequence[str]) -> dict[str, Any]:
        return run_verify(self.grounding, answer, evidence)


# ---------------------------------------------------------------------- server


class _StrictArgumentsServer(MCPServer[Any]):
    """An ``MCPServer`` whose tools refuse arguments they do not take: the SDK drops them
    silently, so a misspelt ``colection`` would answer from every document."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        known = {tool.name: tool for tool in await self.list_tools()}
        tool = known.get(name)
        if tool is not None:
            takes = tool.input_schema.get("properties", {})
            unknown = sorted(set(arguments) - set(takes))
            if unknown:
                raise ToolError(
                    utf8_safe(
                        f"invalid input: {', '.join(unknown)}: not an argument of {name}; it takes "
                        f"{', '.join(takes) or 'none'}"
                    )
                )
        return await super().call_tool(name, arguments, context)


def build_server(source: VerityRAGPipeline | ToolSource) -> MCPServer[Any]:
    """An ``MCPServer`` exposing the tools over a pipeline, or over another source (:class:`ApiTools`)."""
    tools = PipelineTools(source) if isinstance(source, VerityRAGPipeline) else source
    server: MCPServer[Any] = _StrictArgumentsServer(
        SERVER_NAME,
        version=__version__,
        instructions=(
            "VerityRAG answers only from its indexed documents, with citations, or abstains "
            "with a reason. Ingest documents with `ingest`, ask with `query`, see what is stored "
            "with `list_documents`, remove a document with `delete_document`, and check any "
            "answer against evidence texts with `verify`."
        ),
    )

    def tool_error(exc: VerityRAGError) -> ToolError:
        # Anything but a ToolError reaches the client as a bare "Error executing tool <name>".
        # Escaped: a lone surrogate echoed from the input could not be written, and the reply was lost.
        if isinstance(exc, InvalidInputError):
            return ToolError(utf8_safe(f"invalid input: {exc.field}: {exc.problem}"))
        return ToolError(utf8_safe(f"{type(exc).__name__}: {exc}"))

    @server.tool(
        description="Answer a question from the indexed documents with citations, or abstain with a "
        "reason. Returns {question, answer (the cited sentences, or null when it abstained), "
        "short_answer, abstained, abstain_reason, case (answered, not_found, not_sure, "
        "sources_disagree, unknown_name), headline (the case in words), explanation (why, in words), "
        "candidate (for not_sure: what a passage may say), confidence, "
        "grounding_score (0..1), unsupported_claims, citations: [{chunk_id, doc_id, title, start, "
        f"end}}], latency_ms}}.\n\nstrictness: one of {', '.join(STRICTNESS_LEVELS)} (default: the "
        "server's setting). filter: only documents whose metadata matches, e.g. "
        '{"source": "steam.pdf"} or {"lang": {"$in": ["en", "de"]}} (exact match on top-level '
        'keys, all must hold; {"$nin": [...]}: none of these). collection: which documents, a '
        "collection's name, 'all', or 'auto' (default): the user's documents when there are any, "
        "the bundled 'demo' collection only when nothing else is there."
    )
    def query(
        question: str,
        strictness: str | None = None,
        filter: dict[str, Any] | None = None,
        collection: str | None = None,
    ) -> dict[str, Any]:
        try:
            return tools.query(question, strictness, filter, collection)
        except VerityRAGError as exc:
            raise tool_error(exc) from exc

    @server.tool(
        description="Add a document, or replace the one with this doc_id; searchable when this returns. "
        "Returns {doc_id, n_chunks (passages it was split into), replaced (true if it replaced one)}."
    )
    def ingest(doc_id: str, title: str, text: str) -> dict[str, Any]:
        try:
            return tools.ingest(doc_id, title, text)
        except VerityRAGError as exc:
            raise tool_error(exc) from exc

    @server.tool(
        description="List the stored documents, ordered by doc_id, a page at a time, without their "
        "text. Returns {total (documents the filter passes), offset, limit, next_offset (null on the "
        "last page), documents: [{doc_id, title, metadata, n_chunks, ingested_at}]}. limit: 1 to "
        f"{MAX_LIST_LIMIT}; filter: as for query."
    )
    def list_documents(
        limit: int = 20, offset: int = 0, filter: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        try:
            return tools.list_documents(limit, offset, filter)
        except VerityRAGError as exc:
            raise tool_error(exc) from exc

    @server.tool(
        description="Remove a document from the store and the indexes; it is no longer searchable "
        "when this returns. Returns {doc_id, deleted} (deleted: false when there was no such document)."
    )
    def delete_document(doc_id: str) -> dict[str, Any]:
        try:
            return tools.delete_document(doc_id)
        except VerityRAGError as exc:
            raise tool_error(exc) from exc

    @server.tool(
        description="Score each claim of an answer against evidence texts. Returns {overall_score "
        "(0..1: the weakest claim's support), claims: [{claim, support (0..1), details}]}."
    )
    def verify(answer: str, evidence: list[str]) -> dict[str, Any]:
        try:
            return tools.verify(answer, evidence)
        except VerityRAGError as exc:
            raise tool_error(exc) from exc

    return server


def _max_docs_from_env() -> int | None:
    raw = os.environ.get(MAX_DOCS_ENV)
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInputError(MAX_DOCS_ENV, f"must be a positive integer, got {raw!r}") from None
    if value < 1:
        raise InvalidInputError(MAX_DOCS_ENV, f"must be a positive integer, got {raw!r}")
    return value


def startup_pipeline(
    data_dir: Path | None, max_docs: int | None, settings: Settings | None = None
) -> VerityRAGPipeline:
    """The served pipeline: the bundled corpus, as the ``demo`` collection, loaded into a new index;
    calibrated on it when whole (:func:`verityrag.serve.bundled.bundled_pipeline`). ``data_dir``
    None: in memory; ``settings`` None: the defaults (:func:`main` passes the environment's)."""
    if max_docs is None:
        return bundled_pipeline(store_dir=data_dir, collection=DEMO_COLLECTION, settings=settings)
    pipeline = VerityRAGPipeline(data_dir=data_dir, settings=settings)
    load_bundled_corpus(pipeline, max_docs)
    return pipeline


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m verityrag.mcp_server", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="persist state here (default: VERITYRAG_DATA_DIR or memory)",
    )
    parser.add_argument(
        "--max-docs", type=int, default=None, help=f"load only the first N bundled documents ({MAX_DOCS_ENV})"
    )
    parser.add_argument(
        "--api-url",
        default=os.environ.get(API_URL_ENV) or None,
        help=f"serve the index of the REST API at this URL, e.g. make run's http://127.0.0.1:8000 ({API_URL_ENV})",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if args.api_url:
        if args.data_dir is not None or args.max_docs is not None:
            parser.error("--api-url serves the API's index: --data-dir and --max-docs do not apply")
        try:  # the API must answer now: a wrong URL is a usage error, not a failure at the first call
            tools = ApiTools(args.api_url, os.environ.get(API_KEY_ENV) or None)
            health = tools.api.health()
        except VerityRAGError as exc:
            parser.error(f"--api-url {args.api_url}: {exc}")
        logger.info("VerityRAG MCP server ready on stdio, serving the API at %s: %s", args.api_url, health)
        run_stdio(build_server(tools))
        return 0
    try:  # a bad setting, data folder or store: one line on stderr (stdout is the protocol)
        max_docs = args.max_docs if args.max_docs is not None else _max_docs_from_env()
        if max_docs is not None and max_docs < 1:
            parser.error("--max-docs must be a positive integer")
        data_dir = args.data_dir if args.data_dir is not None else data_dir_from_env()
        pipeline = startup_pipeline(data_dir, max_docs, Settings.from_env())
    except VerityRAGError as exc:
        parser.error(str(exc))
    logger.info("VerityRAG MCP server ready on stdio: %s", pipeline.stats())
    try:
        run_stdio(build_server(pipeline))
    finally:
        pipeline.close()  # a clean stop writes the index image beside the store
    return 0


if __name__ == "__main__":
    sys.exit(main())
