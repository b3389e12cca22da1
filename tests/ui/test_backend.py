"""The app's backends: over the API it sees what the pipeline in-process sees (one index)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from verityrag.api import create_app
from verityrag.config import Settings
from verityrag.pipeline import VerityRAGPipeline
from verityrag.ui.answer_source import AddedDocument, ApiBackend, LocalBackend, api_url_from_args, document_id

pytestmark = pytest.mark.unit

TEXT = (
    "The Kellmark lighthouse stands on the northern pier of the harbour. "
    "It was designed by the engineer Ilse Varga and first lit in 1911. "
    "Its lamp can be seen from 40 kilometres away on a clear night. " * 6
)


@pytest.fixture
def pipeline() -> VerityRAGPipeline:
    # No reader (a model): both backends answer with the sentence selector, from one index.
    return VerityRAGPipeline(settings=Settings(reader=False))


@pytest.fixture
def api(pipeline: VerityRAGPipeline) -> ApiBackend:
    client = TestClient(create_app(pipeline, api_key=""), base_url="http://api.test")
    return ApiBackend("http://api.test", client=client)


def test_document_added_through_the_api_is_in_the_pipelines_index(
    api: ApiBackend, pipeline: VerityRAGPipeline
) -> None:
    added = api.add_document("notes/lighthouse", "Kellmark lighthouse", TEXT, {"source": "notes.txt"})
    assert (added.doc_id, added.replaced, added.source) == ("notes/lighthouse", False, "notes.txt")
    assert added.n_chunks == len(pipeline.index.chunks_of("notes/lighthouse")) > 1
    assert api.stats()["documents"] == LocalBackend(pipeline).stats()["documents"] == 1


def test_passages_rebuilt_over_the_api_are_the_writers_chunks(
    api: ApiBackend, pipeline: VerityRAGPipeline
) -> None:
    api.add_document("notes/lighthouse", "Kellmark lighthouse", TEXT)
    rebuilt = api.chunks("notes/lighthouse")
    stored = {c.chunk_id: c for c in pipeline.index.chunks_of("notes/lighthouse")}
    assert rebuilt == stored
    assert api.chunks("no/such/doc") == {}


def test_a_query_over_the_api_names_the_passages_it_cites_or_found(
    api: ApiBackend, pipeline: VerityRAGPipeline
) -> None:
    api.add_document("notes/lighthouse", "Kellmark lighthouse", TEXT)
    result = api.query("Who designed the Kellmark lighthouse?", k=3, strictness="balanced")
    local = LocalBackend(pipeline).query("Who designed the Kellmark lighthouse?", k=3, strictness="balanced")
    assert (result.abstained, result.answer, result.abstain_reason) == (
        local.abstained,
        local.answer,
        local.abstain_reason,
    )
    assert result.evidence  # cited, or found instead: their text, from the document
    texts = {h.chunk_id: h.chunk.text for h in local.evidence}
    for hit in result.evidence:
        assert hit.chunk.text == texts[hit.chunk_id]


def test_a_refused_input_over_the_api_is_an_input_error_naming_the_field(api: ApiBackend) -> None:
    from verityrag.errors import InvalidInputError

    with pytest.raises(InvalidInputError) as refused:
        api.query("x" * 5000, k=3, strictness="balanced")
    assert refused.value.field == "question"


def test_api_url_comes_from_the_scripts_arguments() -> None:
    assert api_url_from_args(["--api-url", "http://127.0.0.1:8000"]) == "http://127.0.0.1:8000"
    assert api_url_from_args(["-k", "expr"]) is None
    assert api_url_from_args([]) is None


def test_document_id_is_stable_per_text_and_valid() -> None:
    assert document_id("Meeting notes, 3 March!", "a text") == document_id(
        "Meeting notes, 3 March!", "a text"
    )
    assert document_id("Meeting notes, 3 March!", "a text").startswith("added/meeting-notes-3-march-")
    assert document_id("", "a text") != document_id("", "another text")


def test_a_file_is_added_alike_through_the_api_and_in_process(
    api: ApiBackend, pipeline: VerityRAGPipeline
) -> None:
    from verityrag.ingest.sample_files import make_pdf

    pdf = make_pdf([TEXT], title="Kellmark lighthouse")
    over_api = api.add_file("harbour/Kellmark notes.pdf", pdf, "application/pdf")
    local = LocalBackend(VerityRAGPipeline()).add_file("harbour/Kellmark notes.pdf", pdf, "application/pdf")
    assert over_api == AddedDocument(
        "Kellmark-notes.pdf",
        "Kellmark lighthouse",
        over_api.n_chunks,
        False,
        "harbour/Kellmark notes.pdf",
        "pdf",
    )
    assert local == over_api
    assert pipeline.get_document("Kellmark-notes.pdf") is not None


def test_a_file_that_cannot_be_read_is_an_input_error_naming_it(api: ApiBackend) -> None:
    from verityrag.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match=r"broken\.pdf"):
        api.add_file("broken.pdf", b"%PDF-1.4 not really", "application/pdf")
    with pytest.raises(InvalidInputError, match=r"broken\.pdf"):
        LocalBackend(VerityRAGPipeline()).add_file("broken.pdf", b"%PDF-1.4 not really", "application/pdf")


@pytest.mark.unit
def test_the_uploaders_limit_is_the_apis() -> None:
    import tomllib
    from pathlib import Path

    from verityrag.api.routes import MAX_UPLOAD_BYTES

    config = tomllib.loads((Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 1024 * 1024 == MAX_UPLOAD_BYTES  # Streamlit's MB are MiB


def test_the_documents_are_listed_opened_and_deleted_alike_through_the_api_and_in_process(
    api: ApiBackend, pipeline: VerityRAGPipeline
) -> None:
    local = LocalBackend(pipeline)
    pipeline.ingest_document(
        "lighthouse", "Kellmark lighthouse", TEXT, {"collection": "harbour", "format": "text"}
    )
    pipeline.ingest_document("mill", "Wexcombe tide mill", "The mill was built in 1790.")
    for backend in (api, local):
        total, rows = backend.list_documents(0, 10, title="KELLMARK")
        assert total == 1
        (row,) = rows
        assert (row.doc_id, row.collection, row.format, row.chars) == (
            "lighthouse",
            "harbour",
            "text",
            len(TEXT.strip()),
        )
        assert row.passages == len(pipeline.index.chunks_of("lighthouse")) > 1
        assert backend.list_documents(0, 10, collection="yours")[1][0].doc_id == "mill"
        assert backend.list_documents(1, 10)[0] == 2  # the total, whatever the page
        opened = backend.open_document("lighthouse")
        assert opened is not None
        assert opened.passages == tuple(c.text for c in pipeline.index.chunks_of("lighthouse"))
        assert backend.open_document("nothing") is None
    assert api.delete_document("mill")
    assert not local.delete_document("mill")  # one index: already gone
    assert local.list_documents(0, 10)[0] == 1
