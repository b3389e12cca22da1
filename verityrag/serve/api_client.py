"""The one HTTP client of VerityRAG's REST API, shared by its clients: the Streamlit app under
``make run`` (:mod:`verityrag.ui.answer_source`), the MCP server with ``--api-url``
(:mod:`verityrag.mcp_server`) and ``make ask`` (:mod:`verityrag.__main__`).

Each endpoint is a method that returns its JSON body as the API wrote it (``query``: the reply of
:func:`verityrag.serve.query_reply.query_reply`); each front end turns that into its own shape.
Errors are the package's: a 4xx the API answers about the input is an ``InvalidInputError``
naming the field, anything else that fails (no answer, a 5xx, a body that is not JSON) a
``BackendUnavailableError``.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx

from verityrag.errors import BackendUnavailableError, InvalidInputError, VerityRAGError

__all__ = ["API_KEY_ENV", "API_KEY_HEADER", "ApiClient", "document_path", "running_api"]

API_KEY_ENV = "VERITYRAG_API_KEY"  # the launcher's environment: the key the API asks for, if any
API_KEY_HEADER = "X-API-Key"
# The statuses the API answers about the request itself (its error names the field at fault).
_INPUT_ERRORS = frozenset({400, 404, 413, 422})


class ApiClient:
    """The API at ``url``, with ``api_key`` when it asks for one.

    ``client``: an ``httpx.Client`` already pointed at the API (a test's in-process
    ``TestClient``); otherwise one is made, ignoring proxy variables (the API is usually local).
    """

    def __init__(
        self,
        url: str,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        client: httpx.Client | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        headers = {API_KEY_HEADER: api_key} if api_key else {}
        self.client = client or httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout_s, trust_env=False
        )

    def call(self, method: str, path: str, none_if_missing: bool = False, **kwargs: Any) -> Any:
        """One request: its JSON body (None for a 404 with ``none_if_missing``). ``kwargs`` go to
        ``httpx.Client.request`` (``json``, ``params``, ``files``)."""
        try:
            reply = self.client.request(method, path, **kwargs)
        except httpx.RequestError as exc:  # no connection, a timeout, a reply it could not read
            raise BackendUnavailableError(f"the API at {self.url} did not answer ({exc})") from exc
        if reply.status_code == 404 and none_if_missing:
            return None
        if reply.status_code in _INPUT_ERRORS:
            error = _error_of(reply)
            raise InvalidInputError(error.get("field") or "request", error.get("message") or reply.text)
        if reply.status_code >= 400:
            error = _error_of(reply)
            raise BackendUnavailableError(
                f"the API answered {reply.status_code}: {error.get('message') or reply.text[:200]}"
            )
        try:
            return reply.json()
        except ValueError as exc:  # another service at this address
            raise BackendUnavailableError(
                f"the API at {self.url} answered {method} {path} with something other than JSON"
            ) from exc

    def close(self) -> None:
        """Close the connections (the client given to the constructor too)."""
        self.client.close()

    def health(self) -> dict[str, Any]:
        """``GET /health``: ``status`` (``ok``), ``version``, ``documents``."""
        body: dict[str, Any] = self.call("GET", "/health")
        return body

    def stats(self) -> dict[str, Any]:
        """``GET /stats``: documents, chunks, the index version, the embedder, the learned checks."""
        body: dict[str, Any] = self.call("GET", "/stats")
        return body

    def query(
        self,
        question: str,
        *,
        k: int | None = None,
        strictness: str | None = None,
        filter: dict[str, Any] | None = None,
        collection: str | None = None,
    ) -> dict[str, Any]:
        """``POST /query``: the reply to ``question``; an option left None is the API's setting."""
        request: dict[str, Any] = {"question": question}
        options = {"k": k, "strictness": strictness, "filter": filter, "collection": collection}
        request.update((name, value) for name, value in options.items() if value is not None)
        body: dict[str, Any] = self.call("POST", "/query", json=request)
        return body

    def collections(self) -> dict[str, int]:
        """``GET /collections``: documents per collection name (``yours``: those added without one)."""
        return {c["name"]: c["documents"] for c in self.call("GET", "/collections")["collections"]}

    def remove_collection(self, name: str) -> int:
        """``DELETE /collections/{name}``: how many documents it deleted (0: no such collection)."""
        reply = self.call("DELETE", f"/collections/{quote(name, safe='')}", none_if_missing=True)
        return 0 if reply is None else int(reply["deleted_documents"])

    def add_document(
        self, doc_id: str, title: str, text: str, metadata: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """``POST /documents`` with one document: its ``doc_id``, ``n_chunks`` and ``replaced``."""
        doc = {"doc_id": doc_id, "title": title, "text": text, "metadata": metadata or {}}
        [out] = self.call("POST", "/documents", json=doc)["documents"]
        added: dict[str, Any] = out
        return added

    def add_file(self, filename: str, data: bytes, content_type: str | None = None) -> dict[str, Any]:
        """``POST /documents/files`` with one file (the API parses it): the document it became,
        with its ``title``, ``source`` and ``format``."""
        upload = {"files": (filename, data, content_type or "application/octet-stream")}
        [out] = self.call("POST", "/documents/files", files=upload)["documents"]
        added: dict[str, Any] = out
        return added

    def document(self, doc_id: str) -> dict[str, Any] | None:
        """``GET /documents/{doc_id}``: the stored document with its text; None when there is none."""
        found: dict[str, Any] | None = self.call("GET", document_path(doc_id), none_if_missing=True)
        return found

    def list_documents(
        self,
        limit: int = 50,
        offset: int = 0,
        filter: dict[str, Any] | None = None,
        title: str | None = None,
        collection: str | None = None,
    ) -> dict[str, Any]:
        """``GET /documents``: a page of the stored documents without their text (those whose
        title holds ``title``, of ``collection``, when given)."""
        params: dict[str, Any] = {"limit": limit, "offset": offset}
        if filter is not None:
            params["filter"] = json.dumps(filter)
        if title:
            params["title"] = title
        if collection:
            params["collection"] = collection
        page: dict[str, Any] = self.call("GET", "/documents", params=params)
        return page

    def delete_document(self, doc_id: str) -> bool:
        """``DELETE /documents/{doc_id}``: whether there was such a document."""
        return self.call("DELETE", document_path(doc_id), none_if_missing=True) is not None


def document_path(doc_id: str) -> str:
    """The API's path of one document (a doc_id may hold slashes: ``notes/kellmark``)."""
    return f"/documents/{quote(doc_id, safe='/:')}"


def running_api(url: str, timeout_s: float = 1.0) -> str | None:
    """``url`` (without a final ``/``) when a VerityRAG API answers its health check there, else None."""
    try:
        client = ApiClient(url, timeout_s=timeout_s)
    except httpx.InvalidURL:
        return None
    try:
        health = client.health()
    except VerityRAGError:
        return None
    finally:
        client.close()
    return url.rstrip("/") if isinstance(health, dict) and health.get("status") == "ok" else None


def _error_of(reply: httpx.Response) -> dict[str, Any]:
    try:
        error = reply.json().get("error")
    except (ValueError, AttributeError):  # not JSON, or JSON but not an object
        return {}
    return error if isinstance(error, dict) else {}
