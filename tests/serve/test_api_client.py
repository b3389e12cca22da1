"""The one HTTP client of the API (``serve.api_client.ApiClient``): each endpoint's body over an
in-process API, and every failure as the package's error."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import pytest
from fastapi.testclient import TestClient
from made_up_results import ANSWER

from verityrag.api import create_app
from verityrag.errors import BackendUnavailableError, InvalidInputError
from verityrag.pipeline import VerityRAGPipeline
from verityrag.serve.api_client import ApiClient, document_path
from verityrag.serve.query_reply import query_reply

pytestmark = pytest.mark.unit

URL = "http://api.test"
LIGHTHOUSE = "The Kellmark lighthouse stands on the northern pier. It was designed by Ilse Varga in 1911."


@pytest.fixture
def pipeline() -> VerityRAGPipeline:
    return VerityRAGPipeline()


@pytest.fixture
def api(pipeline: VerityRAGPipeline) -> ApiClient:
    return ApiClient(URL, client=TestClient(create_app(pipeline, api_key=""), base_url=URL))


def answering_with(reply: Callable[[httpx.Request], httpx.Response]) -> ApiClient:
    """A client of a made-up API that answers every request with ``reply(request)``."""
    return ApiClient(URL, client=httpx.Client(base_url=URL, transport=httpx.MockTransport(reply)))


def test_a_document_added_is_read_listed_and_deleted_through_the_client(
    api: ApiClient, pipeline: VerityRAGPipeline
) -> None:
    added = api.add_document("notes/kellmark", "Kellmark lighthouse", LIGHTHOUSE, {"lang": "en"})
    assert added == {"doc_id": "notes/kellmark", "n_chunks": 1, "replaced": False}
    assert api.add_document("notes/kellmark", "Kellmark lighthouse", LIGHTHOUSE)["replaced"] is True
    stored = api.document("notes/kellmark")
    assert stored is not None
    assert (stored["text"], stored["metadata"]) == (LIGHTHOUSE, {})
    assert api.list_documents(limit=10)["total"] == 1
    assert api.list_documents(filter={"lang": "en"})["total"] == 0  # the replacement has no lang
    assert api.stats()["documents"] == pipeline.index.n_documents == 1
    assert api.delete_document("notes/kellmark") is True
    assert api.delete_document("notes/kellmark") is False
    assert api.document("notes/kellmark") is None


def test_a_file_is_parsed_by_the_api_and_named_by_its_file(api: ApiClient) -> None:
    added = api.add_file("harbour/kellmark.txt", LIGHTHOUSE.encode(), "text/plain")
    assert (added["doc_id"], added["source"], added["format"]) == (
        "kellmark.txt",
        "harbour/kellmark.txt",
        "text",
    )


def test_collections_are_counted_and_removed(api: ApiClient) -> None:
    api.add_document("demo-1", "Demo", LIGHTHOUSE, {"collection": "demo"})
    api.add_document("mine", "Mine", LIGHTHOUSE)
    assert api.collections() == {"demo": 1, "yours": 1}
    assert api.remove_collection("demo") == 1
    assert api.remove_collection("demo") == 0
    assert api.collections() == {"yours": 1}
    assert api.remove_collection("yours") == 1  # the documents added without a collection
    assert api.collections() == {}


def test_query_returns_the_one_reply(pipeline: VerityRAGPipeline, api: ApiClient) -> None:
    pipeline.query = lambda *args, **kwargs: ANSWER  # type: ignore[method-assign]
    assert api.query("Who designed the Kellmark lighthouse?") == query_reply(ANSWER)


def test_query_sends_only_the_options_given() -> None:
    sent: list[dict[str, object]] = []

    def reply(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        return httpx.Response(200, json=query_reply(ANSWER))

    client = answering_with(reply)
    client.query("q")
    client.query("q", k=3, strictness="strict", filter={"lang": "en"}, collection="all")
    assert sent == [
        {"question": "q"},
        {"question": "q", "k": 3, "strictness": "strict", "filter": {"lang": "en"}, "collection": "all"},
    ]


def test_a_refused_input_is_an_input_error_naming_the_field(api: ApiClient) -> None:
    with pytest.raises(InvalidInputError) as refused:
        api.query("x" * 5000)
    assert refused.value.field == "question"
    with pytest.raises(InvalidInputError, match="either here or in the filter"):
        api.query("q", filter={"collection": "demo"}, collection="manuals")


@pytest.mark.parametrize(
    ("status", "body", "error", "match"),
    [
        (
            404,
            {"error": {"field": "doc_id", "message": "no document 'x'"}},
            InvalidInputError,
            "doc_id: no document",
        ),
        (422, "not json", InvalidInputError, "request: not json"),
        (
            503,
            {"error": {"field": None, "message": "the index is loading"}},
            BackendUnavailableError,
            "503: the index is loading",
        ),
        (500, "Internal Server Error", BackendUnavailableError, "500: Internal Server Error"),
        (200, "<html>another service</html>", BackendUnavailableError, "something other than JSON"),
    ],
)
def test_each_failed_reply_is_the_packages_error(
    status: int, body: object, error: type[Exception], match: str
) -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        if isinstance(body, str):
            return httpx.Response(status, text=body)
        return httpx.Response(status, json=body)

    with pytest.raises(error, match=match):
        answering_with(reply).stats()


def test_an_api_that_does_not_answer_is_unavailable() -> None:
    def reply(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(BackendUnavailableError, match=r"the API at http://api\.test did not answer"):
        answering_with(reply).health()


def test_a_document_path_keeps_the_ids_slashes_and_quotes_the_rest() -> None:
    assert document_path("notes/kellmark") == "/documents/notes/kellmark"
    assert document_path("a b?c") == "/documents/a%20b%3Fc"
