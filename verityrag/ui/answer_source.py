"""Where the app's answers come from: the API that ``make run`` started, or a pipeline in this process.

Under ``make run`` the launcher gives the app the API's address (``streamlit run app.py --
--api-url URL``); the app then asks and adds documents through the API, so the app and the
API serve one index (docs/decisions/0054-one-index.md). Without it (``streamlit run app.py``
alone, the tests) the app builds the bundled pipeline in its own process. Both backends return the pipeline's
own ``QueryResult``, so the views do not know which one answered.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from verityrag.config import Settings
from verityrag.index.collections import COLLECTION_KEY, OWN_COLLECTION, collection_sizes, remove_collection
from verityrag.ingest.files import document_from_file
from verityrag.pipeline import VerityRAGPipeline
from verityrag.serve.api_client import API_KEY_ENV, ApiClient
from verityrag.serve.query_reply import result_from_reply
from verityrag.text.chunking import chunk_spans
from verityrag.types import Chunk, Citation, Hit, QueryResult, TraceStep
from verityrag.verify.sources import unix_seconds

API_URL_FLAG = "--api-url"


@dataclass(frozen=True, slots=True)
class AddedDocument:
    """A document the app added: what it was stored as, and how many chunks it became."""

    doc_id: str
    title: str
    n_chunks: int
    replaced: bool
    source: str | None = None
    format: str | None = None


@dataclass(frozen=True, slots=True)
class ListedDocument:
    """A document as the Documents view lists it."""

    doc_id: str
    title: str
    collection: str  # ``yours`` for one added without a collection
    format: str  # as parsed (pdf, docx, html, markdown, csv, text), or "" when added as text
    chars: int
    passages: int
    added: float | None  # Unix seconds


@dataclass(frozen=True, slots=True)
class OpenedDocument:
    """A document opened in the app: its parsed text, cut into the passages that are indexed."""

    doc_id: str
    title: str
    text: str
    metadata: dict[str, Any]
    passages: tuple[str, ...]


def listed(
    doc_id: str, title: str, metadata: dict[str, Any], n_chunks: int, added: float | None, chars: int
) -> ListedDocument:
    collection = metadata.get(COLLECTION_KEY)
    return ListedDocument(
        doc_id,
        title,
        collection if isinstance(collection, str) and collection else OWN_COLLECTION,
        str(metadata.get("format") or ""),
        chars,
        n_chunks,
        added,
    )


class Backend(Protocol):
    """What the app needs from whatever holds the index."""

    @property
    def api_url(self) -> str | None: ...

    @property
    def settings(self) -> Settings: ...

    def stats(self) -> dict[str, Any]: ...

    def query(self, question: str, k: int, strictness: str, collection: str | None = None) -> QueryResult: ...

    def collections(self) -> dict[str, int]: ...

    def remove_collection(self, name: str) -> int: ...

    def add_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, Any] | None = None
    ) -> AddedDocument: ...

    def add_file(self, filename: str, data: bytes, content_type: str | None = None) -> AddedDocument: ...

    def list_documents(
        self, offset: int, limit: int, title: str | None = None, collection: str | None = None
    ) -> tuple[int, list[ListedDocument]]: ...

    def open_document(self, doc_id: str) -> OpenedDocument | None: ...

    def delete_document(self, doc_id: str) -> bool: ...


def document_id(title: str, text: str) -> str:
    """A stable id for a document added in the app: its title as a slug and a hash of its text, so
    adding the same text again replaces it rather than storing it twice."""
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "document"
    return f"added/{slug}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:10]}"


class LocalBackend:
    """A pipeline in this process (``streamlit run app.py`` on its own)."""

    def __init__(self, pipeline: VerityRAGPipeline) -> None:
        self.pipeline = pipeline

    @property
    def api_url(self) -> str | None:
        return None

    @property
    def settings(self) -> Settings:
        return self.pipeline.settings

    def stats(self) -> dict[str, Any]:
        return self.pipeline.stats()

    def query(self, question: str, k: int, strictness: str, collection: str | None = None) -> QueryResult:
        settings = self.pipeline.settings.replace(strictness=strictness)
        return self.pipeline.query(question, k=k, settings=settings, collection=collection)

    def collections(self) -> dict[str, int]:
        return collection_sizes(self.pipeline.writer.metadata_index)

    def remove_collection(self, name: str) -> int:
        return remove_collection(self.pipeline, self.pipeline.writer.metadata_index, name)

    def add_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, Any] | None = None
    ) -> AddedDocument:
        result = self.pipeline.ingest_document(doc_id, title, text, metadata)
        meta = metadata or {}
        return AddedDocument(
            doc_id, title, result.n_chunks, result.replaced, meta.get("source"), meta.get("format")
        )

    def add_file(self, filename: str, data: bytes, content_type: str | None = None) -> AddedDocument:
        """As ``POST /documents/files`` adds a file (:mod:`verityrag.ingest.files`)."""
        max_chars = self.pipeline.settings.max_document_chars
        doc, _ = document_from_file(filename, data, content_type, max_chars)
        return self.add_document(doc.doc_id, doc.title, doc.text, doc.metadata)

    def list_documents(
        self, offset: int, limit: int, title: str | None = None, collection: str | None = None
    ) -> tuple[int, list[ListedDocument]]:
        total, page = self.pipeline.list_documents(None, offset, limit, title, collection)
        return total, [
            listed(d.doc_id, d.title, d.metadata, d.n_chunks, d.ingested_at, d.chars) for d in page
        ]

    def open_document(self, doc_id: str) -> OpenedDocument | None:
        doc = self.pipeline.get_document(doc_id)
        if doc is None:
            return None
        passages = tuple(c.text for c in self.pipeline.index.chunks_of(doc_id))
        return OpenedDocument(doc.doc_id, doc.title, doc.text, dict(doc.metadata), passages)

    def delete_document(self, doc_id: str) -> bool:
        return self.pipeline.delete_document(doc_id)


class ApiBackend:
    """The API at ``url`` (``make run``): every question and every document goes through it
    (:class:`verityrag.serve.api_client.ApiClient`).

    ``POST /query`` returns the answer, its citations and trace but not the passages' text; the
    passages the views quote are rebuilt from ``GET /documents/{id}`` with the same chunking
    the API's writer used (the launcher gives both processes the same settings).
    """

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        client: httpx.Client | None = None,
        settings: Settings | None = None,
    ) -> None:
        # ``client``: one already pointed at the API (a test's in-process TestClient).
        self.api = ApiClient(url, api_key, timeout_s, client)
        # The chunking the API's writer used: the launcher gives both processes one environment,
        # which the entry point reads (Settings.from_env()) and passes here.
        self._settings = settings if settings is not None else Settings()

    @property
    def api_url(self) -> str | None:
        return self.api.url

    @property
    def settings(self) -> Settings:
        return self._settings

    def stats(self) -> dict[str, Any]:
        return self.api.stats()

    def query(self, question: str, k: int, strictness: str, collection: str | None = None) -> QueryResult:
        reply = self.api.query(question, k=k, strictness=strictness, collection=collection)
        result = result_from_reply(reply)
        return dataclasses.replace(result, evidence=self._evidence(result.citations, result.trace))

    def collections(self) -> dict[str, int]:
        return self.api.collections()

    def remove_collection(self, name: str) -> int:
        return self.api.remove_collection(name)

    def add_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, Any] | None = None
    ) -> AddedDocument:
        out = self.api.add_document(doc_id, title, text, metadata)
        meta = metadata or {}
        return AddedDocument(
            doc_id, title, out["n_chunks"], out["replaced"], meta.get("source"), meta.get("format")
        )

    def add_file(self, filename: str, data: bytes, content_type: str | None = None) -> AddedDocument:
        """``POST /documents/files``: the API parses the file (a file it cannot read is an input error)."""
        out = self.api.add_file(filename, data, content_type)
        return AddedDocument(
            out["doc_id"], out["title"], out["n_chunks"], out["replaced"], out["source"], out["format"]
        )

    def list_documents(
        self, offset: int, limit: int, title: str | None = None, collection: str | None = None
    ) -> tuple[int, list[ListedDocument]]:
        page = self.api.list_documents(limit, offset, title=title, collection=collection)
        rows = [
            listed(
                d["doc_id"],
                d["title"],
                d["metadata"],
                d["n_chunks"],
                unix_seconds(d.get("ingested_at")),
                int(d.get("chars", 0)),
            )
            for d in page["documents"]
        ]
        return int(page["total"]), rows

    def open_document(self, doc_id: str) -> OpenedDocument | None:
        doc = self.api.document(doc_id)
        if doc is None:
            return None
        passages = tuple(c.text for c in self._cut(doc_id, doc["title"], doc["text"]).values())
        return OpenedDocument(doc_id, doc["title"], doc["text"], dict(doc.get("metadata") or {}), passages)

    def delete_document(self, doc_id: str) -> bool:
        return self.api.delete_document(doc_id)

    def chunks(self, doc_id: str) -> dict[str, Chunk]:
        """The chunks of a stored document by id, as the API's writer cut them ({} when it is gone)."""
        doc = self.api.document(doc_id)
        if doc is None:  # deleted since the answer
            return {}
        return self._cut(doc_id, doc["title"], doc["text"])

    def _cut(self, doc_id: str, title: str, text: str) -> dict[str, Chunk]:
        """``text`` cut into chunks as the API's writer cut it."""
        spans = chunk_spans(
            doc_id,
            text,
            max_words=self._settings.chunk_max_words,
            overlap_sentences=self._settings.chunk_overlap_sentences,
        )
        return {
            s.chunk_id: Chunk(s.chunk_id, doc_id, title, text[s.start : s.end], s.position, s.start, s.end)
            for s in spans
        }

    def _evidence(self, citations: tuple[Citation, ...], trace: tuple[TraceStep, ...]) -> tuple[Hit, ...]:
        """The passages the answer names: the cited chunks, then the last attempt's top chunks
        (the API reports their ids, not their scores: a score here is 0)."""
        wanted = [c.chunk_id for c in citations]
        attempts = [t for t in trace if t.stage.startswith("attempt_")]
        if attempts:
            wanted += [c for c in attempts[-1].details.get("top_chunks", []) if c not in wanted]
        by_doc: dict[str, dict[str, Chunk]] = {}
        hits = []
        for chunk_id in dict.fromkeys(wanted):
            doc_id = chunk_id.rpartition("#")[0]
            if doc_id not in by_doc:
                by_doc[doc_id] = self.chunks(doc_id)
            chunk = by_doc[doc_id].get(chunk_id)
            if chunk is not None:
                hits.append(Hit(chunk, 0.0))
        return tuple(hits)


def api_url_from_args(argv: Sequence[str]) -> str | None:
    """The ``--api-url`` among the script's arguments (Streamlit passes those after ``--``), or None."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument(API_URL_FLAG, default=None)
    known, _ = parser.parse_known_args(list(argv))
    url: str | None = known.api_url
    return url.strip() or None if url else None


def backend_for(api_url: str | None, build_local: Callable[[], VerityRAGPipeline]) -> Backend:
    """The API at ``api_url`` when given (with the key in ``VERITYRAG_API_KEY``, if any), else
    ``LocalBackend(build_local())``. The app's entry point: it reads the environment."""
    if api_url:
        return ApiBackend(api_url, os.environ.get(API_KEY_ENV) or None, settings=Settings.from_env())
    return LocalBackend(build_local())
