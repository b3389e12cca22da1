"""``python -m verityrag.mcp_server``: VerityRAG as an MCP server over stdio.

Tools (built on the official ``mcp`` package, ``MCPServer``):

- ``query(question, strictness=None, filter=None)``: the pipeline's cited answer, or its abstention
  and why; ``filter`` keeps the evidence to documents whose metadata matches;
- ``ingest(doc_id, title, text)``: add or replace a document, searchable when the call returns;
- ``list_documents(limit=20, offset=0, filter=None)``: a page of the stored documents (no text);
- ``delete_document(doc_id)``: remove a document;
- ``verify(answer, evidence)``: claim-level grounding of ``answer`` against evidence texts.

The server reports the package's version (``verityrag.__version__``) in ``initialize``.

State lives in ``VERITYRAG_DATA_DIR`` (or ``--data-dir``) when set, else in memory. On start,
an empty index is filled with the bundled corpus (``data/built/corpus.jsonl``, built by ``make data``; ``--max-docs`` or
``VERITYRAG_MCP_MAX_DOCS`` keeps only the first N documents) so ``query`` works at once.
The whole corpus is then calibrated on its calibration questions, as the Streamlit app and
``make run``'s API are (a few seconds); a prefix of it is not (the questions' articles may be
missing from it), nor is an index restored from the data directory that holds other documents
than the bundled corpus: those keep the shipped gate.
Logs go to stderr: stdout carries the protocol.

Bad input is returned as an MCP tool error (``isError``) that names the field; any other
VerityRAG failure (e.g. an Elasticsearch backend that is down) as a tool error naming the
error and its reason, not the SDK's bare "Error executing tool".
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from verityrag import __version__
from verityrag.config import STRICTNESS_LEVELS
from verityrag.errors import InvalidInputError, VerityRAGError
from verityrag.index.filters import MetadataFilter
from verityrag.pipeline import VerityRAGPipeline
from verityrag.serve.bundled import bundled_pipeline, load_bundled_corpus
from verityrag.types import Chunk, Citation, CitedSentence, QueryResult
from verityrag.verify.grounding import GroundingChecker
from verityrag.verify.sources import iso_time

logger = logging.getLogger(__name__)

MAX_DOCS_ENV = "VERITYRAG_MCP_MAX_DOCS"
SERVER_NAME = "verityrag"
MAX_EVIDENCE_ITEMS = 50
MAX_LIST_LIMIT = 1000


# ------------------------------------------------------------------ tool bodies
# Plain functions over a pipeline, so they can be tested without the protocol.


def _check_unicode(field: str, text: str) -> None:
    """JSON allows a lone surrogate (``"\\ud800"``, e.g. an emoji cut in half); the reply could not be sent."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(field, f"is not valid Unicode text ({exc.reason})") from exc


def run_query(
    pipeline: VerityRAGPipeline,
    question: str,
    strictness: str | None = None,
    filter: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Answer ``question`` or abstain; ``strictness`` overrides the pipeline's for this call,
    ``filter`` (metadata, as ``VerityRAGPipeline.query`` takes it) limits the evidence."""
    if isinstance(question, str):  # the pipeline names any other type
        _check_unicode("question", question)
    settings = None
    if strictness is not None:
        settings = pipeline.settings.replace(strictness=strictness)  # validated: names the allowed levels
    result = pipeline.query(question, settings=settings, filter=MetadataFilter.from_dict(filter))
    return query_result_dict(result)


def run_list_documents(
    pipeline: VerityRAGPipeline, limit: int = 20, offset: int = 0, filter: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A page of the stored documents ordered by doc_id, without their text."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidInputError("limit", f"must be an integer from 1 to {MAX_LIST_LIMIT}, got {limit!r}")
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


def query_result_dict(result: QueryResult) -> dict[str, Any]:
    return {
        "question": result.question,
        "answer": result.answer,
        "short_answer": result.short_answer.text if result.short_answer else None,
        "abstained": result.abstained,
        "abstain_reason": result.abstain_reason.value if result.abstain_reason else None,
        "explanation": result.explanation,
        "confidence": result.confidence,
        "grounding_score": result.grounding.overall_score,
        "unsupported_claims": list(result.unsupported_claims),
        "citations": [
            {"chunk_id": c.chunk_id, "doc_id": c.doc_id, "title": c.title, "start": c.start, "end": c.end}
            for c in result.citations
        ],
        "latency_ms": result.latency_ms,
    }


def run_ingest(pipeline: VerityRAGPipeline, doc_id: str, title: str, text: str) -> dict[str, Any]:
    """Add or replace one document."""
    res = pipeline.ingest_document(doc_id, title, text)
    return {"doc_id": res.doc_id, "n_chunks": res.n_chunks, "replaced": res.replaced}


def run_verify(checker: GroundingChecker, answer: str, evidence: Sequence[str]) -> dict[str, Any]:
    """Score every claim of ``answer`` against all of ``evidence`` (each text a throwaway chunk)."""
    if not isinstance(answer, str) or not answer.strip():
        raise InvalidInputError("answer", "is empty")
    _check_unicode("answer", answer)
    if not evidence:
        raise InvalidInputError("evidence", "is empty: give at least one evidence text")
    if len(evidence) > MAX_EVIDENCE_ITEMS:
        raise InvalidInputError("evidence", f"has {len(evidence)} items; the limit is {MAX_EVIDENCE_ITEMS}")
    chunks: dict[str, Chunk] = {}
    for i, text in enumerate(evidence):
        if not isinstance(text, str) or not text.strip():
            raise InvalidInputError(f"evidence[{i}]", "is empty")
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


# ---------------------------------------------------------------------- server


def build_server(pipeline: VerityRAGPipeline) -> MCPServer[Any]:
    """An ``MCPServer`` exposing query, ingest and verify over ``pipeline``."""
    server: MCPServer[Any] = MCPServer(
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
        if isinstance(exc, InvalidInputError):
            return ToolError(f"invalid input: {exc.field}: {exc.problem}")
        return ToolError(f"{type(exc).__name__}: {exc}")

    @server.tool(
        description="Answer a question from the indexed documents with citations, or abstain with a "
        "reason. Returns {question, answer (the cited sentences, or null when it abstained), "
        "short_answer, abstained, abstain_reason, explanation (why, in words), confidence, "
        "grounding_score (0..1), unsupported_claims, citations: [{chunk_id, doc_id, title, start, "
        f"end}}], latency_ms}}.\n\nstrictness: one of {', '.join(STRICTNESS_LEVELS)} (default: the "
        "server's setting). filter: only documents whose metadata matches, e.g. "
        '{"source": "steam.pdf"} or {"lang": {"$in": ["en", "de"]}} (exact match on top-level '
        "keys, all must hold)."
    )
    def query(
        question: str, strictness: str | None = None, filter: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        try:
            return run_query(pipeline, question, strictness, filter)
        except VerityRAGError as exc:
            raise tool_error(exc) from exc

    @server.tool(
        description="Add a document, or replace the one with this doc_id; searchable when this returns. "
        "Returns {doc_id, n_chunks (passages it was split into), replaced (true if it replaced one)}."
    )
    def ingest(doc_id: str, title: str, text: str) -> dict[str, Any]:
        try:
            return run_ingest(pipeline, doc_id, title, text)
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
            return run_list_documents(pipeline, limit, offset, filter)
        except VerityRAGError as exc:
            raise tool_error(exc) from exc

    @server.tool(
        description="Remove a document from the store and the indexes; it is no longer searchable "
        "when this returns. Returns {doc_id, deleted} (deleted: false when there was no such document)."
    )
    def delete_document(doc_id: str) -> dict[str, Any]:
        try:
            return run_delete_document(pipeline, doc_id)
        except VerityRAGError as exc:
            raise tool_error(exc) from exc

    @server.tool(
        description="Score each claim of an answer against evidence texts. Returns {overall_score "
        "(0..1: the weakest claim's support), claims: [{claim, support (0..1), details}]}."
    )
    def verify(answer: str, evidence: list[str]) -> dict[str, Any]:
        try:
            return run_verify(pipeline.grounding, answer, evidence)
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


def startup_pipeline(data_dir: Path | None, max_docs: int | None) -> VerityRAGPipeline:
    """The served pipeline: the bundled corpus loaded into an empty index, calibrated when whole."""
    if max_docs is None:
        return bundled_pipeline(store_dir=data_dir)
    pipeline = VerityRAGPipeline(data_dir=data_dir)
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
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:  # a bad setting, data folder or store: one line on stderr (stdout is the protocol)
        max_docs = args.max_docs if args.max_docs is not None else _max_docs_from_env()
        if max_docs is not None and max_docs < 1:
            parser.error("--max-docs must be a positive integer")
        pipeline = startup_pipeline(args.data_dir, max_docs)
    except VerityRAGError as exc:
        parser.error(str(exc))
    logger.info("VerityRAG MCP server ready on stdio: %s", pipeline.stats())
    build_server(pipeline).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
