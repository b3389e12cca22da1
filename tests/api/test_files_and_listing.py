"""File uploads (POST /documents/files), listing (GET /documents) and filtered queries, over a
real uvicorn server on loopback driven with httpx; the files are made in the test."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import httpx
import pytest
from fastapi import FastAPI

from verityrag import Settings, VerityRAGPipeline
from verityrag.api import create_app
from verityrag.ingest.files import doc_id_for_file
from verityrag.ingest.sample_files import make_docx, make_pdf
from verityrag.types import is_valid_doc_id

pytestmark = pytest.mark.integration

API_KEY = "files-key"
Serve = Callable[[FastAPI], AbstractContextManager[str]]
WATT = "James Watt improved the steam engine in 1776 by adding a separate condenser."


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> VerityRAGPipeline:
    p = VerityRAGPipeline(data_dir=tmp_path_factory.mktemp("files-data"), settings=Settings())
    p.ingest_documents(
        [
            {
                "doc_id": "rhine",
                "title": "Rhine",
                "text": "The Rhine flows from the Swiss Alps to the North Sea through Germany.",
                "metadata": {"collection": "rivers", "lang": "en"},
            },
            {
                "doc_id": "danube",
                "title": "Danube",
                "text": "The Danube flows from the Black Forest to the Black Sea through Vienna.",
                "metadata": {"collection": "rivers", "lang": "de"},
            },
        ],
        progress=False,
    )
    return p


@pytest.fixture(scope="module")
def base_url(pipeline: VerityRAGPipeline, serve: Serve) -> Iterator[str]:
    with serve(create_app(pipeline, api_key=API_KEY)) as url:
        yield url


@pytest.fixture
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, headers={"X-API-Key": API_KEY}, timeout=30) as c:
        yield c


def _error(response: httpx.Response, status: int) -> dict[str, str]:
    assert response.status_code == status, response.text
    error: dict[str, str] = response.json()["error"]
    return error


def test_upload_pdf_docx_html_markdown_and_text_in_one_request(client: httpx.Client) -> None:
    files = [
        (
            "files",
            (
                "steam.pdf",
                make_pdf([f"Steam power\n\n{WATT}", "Page two."], title="Steam Power"),
                "application/pdf",
            ),
        ),
        ("files", ("watt.docx", make_docx([WATT], heading="Watt"), "application/octet-stream")),
        (
            "files",
            (
                "page.html",
                b"<html><head><title>Page</title></head><body><p>Boulton was Watt's partner.</p></body></html>",
                "text/html",
            ),
        ),
        ("files", ("notes.md", b"# Notes\n\nThe **Soho Manufactory** was in Birmingham.\n", "text/markdown")),
        ("files", ("plain.txt", b"Matthew Boulton sold engines to mines in Cornwall.", "text/plain")),
    ]
    response = client.post(
        "/documents/files", files=files, data={"metadata": json.dumps({"collection": "uploads"})}
    )
    assert response.status_code == 200, response.text
    docs = {d["doc_id"]: d for d in response.json()["documents"]}
    assert set(docs) == {"steam.pdf", "watt.docx", "page.html", "notes.md", "plain.txt"}
    assert [docs[n]["format"] for n in sorted(docs)] == ["markdown", "html", "text", "pdf", "docx"]
    assert (docs["steam.pdf"]["title"], docs["watt.docx"]["title"], docs["page.html"]["title"]) == (
        "Steam Power",
        "Watt",
        "Page",
    )
    assert docs["plain.txt"]["title"] == "plain"
    assert all(d["n_chunks"] >= 1 and not d["replaced"] for d in docs.values())

    stored = client.get("/documents/steam.pdf").json()
    assert WATT in stored["text"]
    assert stored["title"] == "Steam Power"
    assert stored["metadata"] == {
        "collection": "uploads",
        "source": "steam.pdf",
        "title": "Steam Power",
        "format": "pdf",
    }

    answer = client.post(
        "/query", json={"question": "Who improved the steam engine?", "filter": {"collection": "uploads"}}
    ).json()
    assert all(c["doc_id"] in docs for c in answer["citations"])
    if not answer["abstained"]:
        assert {c["source"] for c in answer["citations"]} <= set(docs)

    again = client.post(
        "/documents/files", files=[("files", ("plain.txt", b"Boulton and Watt built engines.", "text/plain"))]
    )
    assert again.json()["documents"][0]["replaced"] is True


def test_upload_of_an_unreadable_file_is_422_naming_it_and_writes_nothing(client: httpx.Client) -> None:
    before = client.get("/documents").json()["total"]
    files = [
        ("files", ("good.txt", b"A good file about pumps.", "text/plain")),
        ("files", ("broken.pdf", b"%PDF-1.4 this is not really a pdf", "application/pdf")),
    ]
    error = _error(client.post("/documents/files", files=files), 422)
    assert error["field"] == "files[1]"
    assert "'broken.pdf' is not a readable PDF" in error["message"]
    scan = _error(
        client.post("/documents/files", files=[("files", ("scan.pdf", make_pdf([""]), "application/pdf"))]),
        422,
    )
    assert "'scan.pdf' has no text layer" in scan["message"]
    binary = _error(
        client.post("/documents/files", files=[("files", ("x.bin", b"\x00\x01\x02\xff", None))]), 422
    )
    assert "is binary" in binary["message"]
    assert client.get("/documents").json()["total"] == before
    assert client.get("/documents/good.txt").status_code == 404


def test_upload_bad_form_fields_and_duplicate_names_are_422(client: httpx.Client) -> None:
    one = [("files", ("a.txt", b"Some text here.", "text/plain"))]
    assert (
        _error(client.post("/documents/files", files=one, data={"metadata": "{not json"}), 422)["field"]
        == "metadata"
    )
    assert (
        _error(client.post("/documents/files", files=one, data={"metadata": "[1]"}), 422)["field"]
        == "metadata"
    )
    twice = [*one, ("files", ("a.txt", b"Other text.", "text/plain"))]
    assert _error(client.post("/documents/files", files=twice), 422)["field"] == "files[1]"
    assert _error(client.post("/documents/files", data={"metadata": "{}"}), 422)["field"] == "files"


def test_upload_needs_the_write_key(base_url: str) -> None:
    with httpx.Client(base_url=base_url, timeout=10) as anonymous:
        files = [("files", ("a.txt", b"Some text.", "text/plain"))]
        assert anonymous.post("/documents/files", files=files).status_code == 401


def test_upload_over_the_default_body_limit_is_accepted_up_to_the_upload_limit(client: httpx.Client) -> None:
    text = ("The beam engine pumped water from the mine. " * 60_000).encode()  # ~2.6 MB, over 2 MiB
    response = client.post("/documents/files", files=[("files", ("big.txt", text, "text/plain"))])
    # Accepted by the body limit; the pipeline's max_document_chars decides, naming the file (the
    # parse stops once the text is over it).
    if response.status_code == 422:
        assert response.json()["error"]["field"] == "files[0]"
        assert "'big.txt'" in response.json()["error"]["message"]
        assert "max_document_chars" in response.json()["error"]["message"]
    else:
        assert response.status_code == 200, response.text
        client.delete("/documents/big.txt")


def test_list_documents_pages_and_filters(client: httpx.Client) -> None:
    first = client.get("/documents", params={"limit": 1}).json()
    assert first["limit"] == 1
    assert first["total"] >= 2
    assert first["next_offset"] == 1
    ids: list[str] = []
    offset: int | None = 0
    while offset is not None:
        page = client.get("/documents", params={"limit": 2, "offset": offset}).json()
        ids += [d["doc_id"] for d in page["documents"]]
        offset = page["next_offset"]
    assert ids == sorted(ids)
    assert len(ids) == first["total"]
    rivers = client.get("/documents", params={"filter": json.dumps({"collection": "rivers"})}).json()
    assert [d["doc_id"] for d in rivers["documents"]] == ["danube", "rhine"]
    assert rivers["documents"][0]["metadata"] == {"collection": "rivers", "lang": "de"}
    assert rivers["documents"][0]["n_chunks"] == 1
    assert "text" not in rivers["documents"][0]
    en = client.get(
        "/documents", params={"filter": json.dumps({"lang": {"$in": ["en"]}, "collection": "rivers"})}
    )
    assert [d["doc_id"] for d in en.json()["documents"]] == ["rhine"]
    assert client.head("/documents").status_code == 200


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"filter": "{oops"}, "filter"),
        ({"filter": "[1, 2]"}, "filter"),
        ({"filter": json.dumps({"lang": {"$gt": 1}})}, "filter.lang"),
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"offset": -1}, "offset"),
    ],
)
def test_list_documents_bad_parameters_are_422_naming_them(
    client: httpx.Client, params: dict[str, object], field: str
) -> None:
    assert _error(client.get("/documents", params=params), 422)["field"] == field  # type: ignore[arg-type]


def test_query_filter_limits_evidence_and_bad_filters_are_422(client: httpx.Client) -> None:
    question = "Where does the Rhine flow?"
    de = client.post("/query", json={"question": question, "filter": {"lang": "de"}}).json()
    assert all(c["doc_id"] == "danube" for c in de["citations"])
    none = client.post("/query", json={"question": question, "filter": {"collection": "poetry"}}).json()
    assert none["abstained"] is True
    assert none["abstain_reason"] == "no_evidence"
    for bad, field in [
        ({"lang": {"$in": []}}, "filter.lang"),
        ({"lang": None}, "filter.lang"),
        ({"lang": {"$gt": 1}}, "filter.lang"),
        ({"": "x"}, "filter"),
    ]:
        error = _error(client.post("/query", json={"question": question, "filter": bad}), 422)
        assert error["field"].startswith(field), (bad, error)
    stream = client.post("/chat/stream", json={"question": question, "filter": {"lang": {"$in": [None]}}})
    assert stream.status_code == 422


def test_openapi_lists_the_new_endpoints_and_the_query_filter(client: httpx.Client) -> None:
    spec = client.get("/openapi.json").json()
    assert "get" in spec["paths"]["/documents"]
    assert "post" in spec["paths"]["/documents/files"]
    assert "multipart/form-data" in spec["paths"]["/documents/files"]["post"]["requestBody"]["content"]
    assert "filter" in spec["components"]["schemas"]["QueryIn"]["properties"]


@pytest.mark.parametrize(
    ("name", "doc_id"),
    [
        ("report.pdf", "report.pdf"),
        ("My Report (final).docx", "My-Report-final-.docx"),
        ("C:\\Users\\me\\notes.md", "notes.md"),
        ("../../etc/passwd", "passwd"),
        ("..", "file"),
        ("---.txt", "txt"),
        ("ümlaut.txt", "mlaut-f34494f7.txt"),
        ("договор.txt", "01feb781.txt"),
        ("報告", "64442e2b"),
    ],
)
def test_doc_id_for_file_is_always_a_valid_doc_id(name: str, doc_id: str) -> None:
    assert doc_id_for_file(name) == doc_id
    assert is_valid_doc_id(doc_id)


def test_file_names_without_ascii_letters_stay_distinct_documents() -> None:
    names = ["договор.txt", "счёт.txt", "договор.md", "契約.txt", "合同.txt"]
    ids = [doc_id_for_file(n) for n in names]
    assert len(set(ids)) == len(names)
    assert doc_id_for_file("договор.txt") == ids[0]  # the same name replaces its document


@pytest.mark.parametrize("doc_id", ["x//y", "slash/", "a/./b", "a/../b"])
def test_a_doc_id_with_an_empty_or_dot_path_segment_is_refused(client: httpx.Client, doc_id: str) -> None:
    # Clients and proxies merge "//", drop a trailing "/" and resolve dots: the URL would name another id.
    assert not is_valid_doc_id(doc_id)
    error = _error(
        client.post("/documents", json={"doc_id": doc_id, "title": "t", "text": "Some text."}), 422
    )
    assert error["field"].endswith("doc_id")


def test_a_title_over_the_limit_is_refused_naming_the_limit(client: httpx.Client) -> None:
    from verityrag.ingest.writer import MAX_DOCUMENT_TITLE_CHARS

    long = "T" * (MAX_DOCUMENT_TITLE_CHARS + 1)
    error = _error(
        client.post("/documents", json={"doc_id": "long-title", "title": long, "text": "Some text."}), 422
    )
    assert error["field"].endswith("title")
    assert f"{MAX_DOCUMENT_TITLE_CHARS:,}" in error["message"]
    assert client.get("/documents/long-title").status_code == 404


def test_a_multipart_body_without_a_boundary_is_named_as_such(client: httpx.Client) -> None:
    reply = client.post(
        "/documents/files", content=b"--x\r\nabc", headers={"content-type": "multipart/form-data"}
    )
    error = _error(reply, 422)
    assert error["field"] == "body"
    assert "multipart/form-data" in error["message"]
    assert "JSON" not in error["message"]


def test_upload_of_more_files_than_allowed_is_422_naming_files(client: httpx.Client) -> None:
    from verityrag.api.routes import MAX_UPLOAD_FILES

    many = [("files", (f"f{i}.txt", b"Some text.", "text/plain")) for i in range(MAX_UPLOAD_FILES + 1)]
    assert _error(client.post("/documents/files", files=many), 422)["field"] == "files"
