"""The REST API over a real uvicorn server on loopback, driven with httpx.

One server (with an API key) serves a persisted pipeline holding the first 60 documents of the
bundled SQuAD corpus (Super Bowl 50 and Nikola Tesla); tests that add documents use
their own ids and clean up after themselves.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from verityrag import AbstainReason, ModelLoadError, Settings, VerityRAGPipeline
from verityrag.agent.controller import GROUNDING_THRESHOLDS
from verityrag.api import MAX_BODY_BYTES, create_app

pytestmark = pytest.mark.integration

API_KEY = "test-key-123"
MAX_DOCUMENT_CHARS = 20_000  # small, so a too-long document fits well inside the body limit
ANSWERABLE = "Which team did the Denver Broncos defeat in Super Bowl 50?"
OUT_OF_DOMAIN = "What is the capital city of Mongolia?"
Serve = Callable[[FastAPI], AbstractContextManager[str]]  # the ``serve`` fixture (conftest.py)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory, squad_docs: list[dict[str, str]]) -> VerityRAGPipeline:
    """Persisted in a data dir, as a deployment would be (and so metadata round-trips)."""
    p = VerityRAGPipeline(
        data_dir=tmp_path_factory.mktemp("api-data"),
        settings=Settings().replace(max_document_chars=MAX_DOCUMENT_CHARS),
    )
    p.ingest_documents(squad_docs, progress=False)
    return p


@pytest.fixture(scope="module")
def base_url(pipeline: VerityRAGPipeline, serve: Serve) -> Iterator[str]:
    with serve(create_app(pipeline, api_key=API_KEY)) as url:
        yield url


@pytest.fixture
def client(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, headers={"X-API-Key": API_KEY}, timeout=10) as c:
        yield c


@pytest.fixture
def anonymous(base_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=base_url, timeout=10) as c:
        yield c


def _doc(
    doc_id: str, text: str = "The zorblat engine was built by Quentin Marlowe in 1893."
) -> dict[str, object]:
    return {"doc_id": doc_id, "title": "Zorblat", "text": text, "metadata": {"source": "test"}}


def _error(response: httpx.Response, status: int) -> dict[str, str]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error: dict[str, str] = response.json()["error"]
    assert error["message"]
    return error


def _metric(text: str, line_prefix: str) -> float:
    for line in text.splitlines():
        if line.startswith(line_prefix + " "):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


# ----------------------------------------------------------------- service


def test_health_when_pipeline_ready_reports_ok_and_documents(anonymous: httpx.Client) -> None:
    body = anonymous.get("/health").json()
    assert body["status"] == "ok"
    assert body["documents"] >= 60


def test_stats_counts_match_the_pipeline(anonymous: httpx.Client, pipeline: VerityRAGPipeline) -> None:
    body = anonymous.get("/stats").json()
    expected = pipeline.stats()
    assert body["documents"] == expected["documents"] >= 60
    assert body["chunks"] == expected["chunks"] >= body["documents"]
    assert body["embedder"] == expected["embedder"]
    assert body["learned_checks"] == expected["learned_checks"] == {}  # none unless the settings ask


class _ReaderStub:
    """Stands in for a reader check attached in code; /stats reads only its threshold and folder."""

    threshold = 0.25
    model_dir = Path("guard_work/reader")

    def score(self, question: str, evidence: str, answer: str) -> float:
        return 1.0


def test_stats_lists_the_learned_checks_with_their_threshold_source(
    anonymous: httpx.Client, pipeline: VerityRAGPipeline
) -> None:
    pipeline.reader_check = _ReaderStub()
    try:
        checks = anonymous.get("/stats").json()["learned_checks"]
    finally:
        pipeline.reader_check = None
    assert checks == {
        "reader": {
            "threshold": 0.25,
            "threshold_from": "attached",
            "model": "reader",  # the folder's name: /stats shows no filesystem path
            "sufficiency_threshold": None,  # set only for an answerability gate fitted jointly
        }
    }


def test_unknown_route_is_404_json(anonymous: httpx.Client) -> None:
    _error(anonymous.get("/nope"), 404)


# --------------------------------------------------------------- documents


def test_ingest_one_document_then_get_returns_it(client: httpx.Client) -> None:
    response = client.post("/documents", json=_doc("api-one"))
    assert response.status_code == 200, response.text
    assert response.json() == {"documents": [{"doc_id": "api-one", "n_chunks": 1, "replaced": False}]}
    got = client.get("/documents/api-one").json()
    assert got["text"].startswith("The zorblat engine")
    assert (got["title"], got["metadata"], got["n_chunks"]) == ("Zorblat", {"source": "test"}, 1)
    client.delete("/documents/api-one")


def test_ingest_same_doc_id_again_replaces_it(client: httpx.Client) -> None:
    client.post("/documents", json=_doc("api-replace"))
    before = client.get("/stats").json()["documents"]
    second = client.post("/documents", json=_doc("api-replace", "Quentin Marlowe later sold the engine."))
    assert second.json()["documents"][0]["replaced"] is True
    assert client.get("/documents/api-replace").json()["text"] == "Quentin Marlowe later sold the engine."
    assert client.get("/stats").json()["documents"] == before
    client.delete("/documents/api-replace")


def test_ingest_batch_returns_every_id_and_chunk_count(client: httpx.Client) -> None:
    docs = [_doc("api-batch-1"), _doc("api-batch-2", "Short. " * 400)]
    body = client.post("/documents", json={"documents": docs}).json()
    assert [d["doc_id"] for d in body["documents"]] == ["api-batch-1", "api-batch-2"]
    assert body["documents"][0]["n_chunks"] == 1
    assert body["documents"][1]["n_chunks"] > 1  # 800 words split into several chunks
    for d in docs:
        assert client.delete(f"/documents/{d['doc_id']}").status_code == 200


def test_ingest_batch_with_one_bad_document_writes_nothing_and_names_it(client: httpx.Client) -> None:
    docs = [_doc("api-batch-ok"), _doc("api-batch-bad", "?!")]
    error = _error(client.post("/documents", json={"documents": docs}), 422)
    assert error["field"] == "documents[1].text"
    assert client.get("/documents/api-batch-ok").status_code == 404


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (
            '{"doc_id": "api-batch-nan", "text": "Fine text.", "metadata": {"x": NaN}}',
            "documents[1].metadata",
        ),
        ('{"doc_id": "api-batch-sur", "text": "Fine text.", "title": "\\ud800"}', "documents[1].title"),
    ],
)
def test_ingest_batch_with_bad_title_or_metadata_names_the_document_and_writes_nothing(
    client: httpx.Client, bad: str, field: str
) -> None:
    # The batch's own checks named only doc_id and text; the pipeline's title and metadata
    # checks then named the bare field ("metadata"), not which of the documents it was.
    body = '{"documents": [' + json.dumps(_doc("api-batch-fine")) + ", " + bad + "]}"
    response = client.post("/documents", content=body, headers={"content-type": "application/json"})
    assert _error(response, 422)["field"] == field
    assert client.get("/documents/api-batch-fine").status_code == 404


def test_ingest_batch_with_a_repeated_doc_id_names_both_positions_and_writes_nothing(
    client: httpx.Client,
) -> None:
    docs = [_doc("api-dup-a"), _doc("api-dup-b"), _doc("api-dup-a")]
    error = _error(client.post("/documents", json={"documents": docs}), 422)
    assert error["field"] == "documents[2].doc_id"  # the field the request sent, not a bare doc_id
    assert "(documents[0] and documents[2])" in error["message"]
    assert client.get("/documents/api-dup-a").status_code == 404


def test_ingest_document_over_max_chars_is_422_naming_text(client: httpx.Client) -> None:
    error = _error(client.post("/documents", json=_doc("api-long", "word " * MAX_DOCUMENT_CHARS)), 422)
    assert error["field"] == "text"
    assert "max_document_chars" in error["message"]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"title": "t", "text": "no id"}, "doc_id"),
        ({"doc_id": "bad id with spaces", "text": "words"}, "doc_id"),
        ({"documents": [{"doc_id": "x"}]}, "documents[0].text"),
        ({"documents": []}, "documents"),
        ([1, 2], "body"),
    ],
)
def test_ingest_bad_document_is_422_naming_field(client: httpx.Client, payload: object, field: str) -> None:
    assert _error(client.post("/documents", json=payload), 422)["field"] == field


def test_invalid_json_body_is_422_naming_body(client: httpx.Client) -> None:
    response = client.post("/documents", content=b"{not json", headers={"content-type": "application/json"})
    assert _error(response, 422)["field"] == "body"


@pytest.mark.parametrize("path", ["/query", "/chat/stream", "/documents"])
def test_json_body_without_json_content_type_is_422_naming_the_header(
    client: httpx.Client, path: str
) -> None:
    # What `curl -d '{...}'` sends: the body is JSON, the Content-Type form-urlencoded. The error
    # said "Input should be a valid dictionary or object to extract fields from".
    body = json.dumps({"question": ANSWERABLE} if path != "/documents" else _doc("api-form")).encode()
    response = client.post(path, content=body, headers={"content-type": "application/x-www-form-urlencoded"})
    error = _error(response, 422)
    assert error["field"] == "body"
    assert "Content-Type: application/json" in error["message"]
    assert "application/x-www-form-urlencoded" in error["message"]


def test_delete_document_then_get_and_delete_are_404(client: httpx.Client) -> None:
    client.post("/documents", json=_doc("api-delete"))
    assert client.delete("/documents/api-delete").json() == {"doc_id": "api-delete", "deleted": True}
    assert _error(client.get("/documents/api-delete"), 404)["field"] == "doc_id"
    _error(client.delete("/documents/api-delete"), 404)


def test_oversized_body_is_413(client: httpx.Client) -> None:
    blob = json.dumps(_doc("api-huge", "x" * MAX_BODY_BYTES)).encode()
    assert _error(client.post("/documents", content=blob), 413)["field"] == "body"


def test_oversized_chunked_body_without_length_is_413(client: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(3):
            yield b" " * (MAX_BODY_BYTES // 2)

    _error(client.post("/documents", content=chunks()), 413)


# ------------------------------------------------------------------- query


def test_query_answered_cites_spans_of_chunk_text(client: httpx.Client, pipeline: VerityRAGPipeline) -> None:
    body = client.post("/query", json={"question": ANSWERABLE}).json()
    assert body["abstained"] is False, body
    assert body["answer"]
    assert body["abstain_reason"] is None
    assert 0.0 < body["grounding"]["overall_score"] <= 1.0
    assert body["grounding"]["claims"]
    assert body["confidence"] > 0
    assert body["citations"]
    for cit in body["citations"]:
        chunk = next(c for c in pipeline.index.chunks_of(cit["doc_id"]) if c.chunk_id == cit["chunk_id"])
        cited = chunk.text[cit["start"] : cit["end"]]
        assert cited.strip()
        assert cited.strip() in body["answer"]
        assert cit["title"] == chunk.title
    assert [s["stage"] for s in body["trace"]][-1] == "answer"


def test_query_out_of_domain_abstains_with_reason(client: httpx.Client) -> None:
    body = client.post("/query", json={"question": OUT_OF_DOMAIN}).json()
    assert body["abstained"] is True
    assert body["answer"] is None
    assert body["citations"] == []
    assert body["abstain_reason"] in {r.value for r in AbstainReason}
    assert body["trace"][-1]["details"]["reason"] == body["abstain_reason"]


def test_query_per_request_strictness_and_verify_apply(anonymous: httpx.Client) -> None:
    for level, threshold in GROUNDING_THRESHOLDS.items():
        body = anonymous.post("/query", json={"question": ANSWERABLE, "k": 3, "strictness": level}).json()
        grounding = [s for s in body["trace"] if s["stage"] == "grounding"]
        assert grounding
        assert grounding[0]["details"]["threshold"] == threshold
    unverified = anonymous.post("/query", json={"question": ANSWERABLE, "verify": False})
    assert unverified.status_code == 200
    assert "grounding" not in [s["stage"] for s in unverified.json()["trace"]]


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({"question": ANSWERABLE, "strictness": "extreme"}, "strictness"),
        ({"question": ""}, "question"),
        ({"question": "   "}, "question"),
        ({"question": "why? " * 1000}, "question"),
        ({}, "question"),
        ({"question": ANSWERABLE, "k": 0}, "k"),
        ({"question": ANSWERABLE, "verify": "perhaps"}, "verify"),
        ({"question": ANSWERABLE, "temperature": 1}, "temperature"),
    ],
)
def test_query_bad_input_is_422_naming_field(anonymous: httpx.Client, payload: object, field: str) -> None:
    error = _error(anonymous.post("/query", json=payload), 422)
    assert error["field"] == field
    if field == "strictness":
        assert "paranoid" in error["message"]
        assert "strict" in error["message"]


@pytest.mark.parametrize("path", ["/query", "/chat/stream"])
def test_query_blank_question_is_422_in_words_not_a_regex(anonymous: httpx.Client, path: str) -> None:
    # pydantic's message quoted the spec's pattern: "question: String should match pattern '\\S'".
    error = _error(anonymous.post(path, json={"question": " \n\t "}), 422)
    assert error["field"] == "question"
    assert error["message"] == "question: must contain a character other than whitespace"


def test_query_when_model_fails_is_503_with_reason(
    client: httpx.Client, pipeline: VerityRAGPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise ModelLoadError("the sentence selector", [("bundled", "file is truncated")])

    monkeypatch.setattr(pipeline, "query", broken)
    response = client.post("/query", json={"question": ANSWERABLE})
    assert "file is truncated" in _error(response, 503)["message"]


def test_query_unexpected_error_is_500_json(
    client: httpx.Client, pipeline: VerityRAGPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(pipeline, "query", broken)
    assert "RuntimeError" in _error(client.post("/query", json={"question": ANSWERABLE}), 500)["message"]


def test_slow_query_does_not_block_other_requests(
    base_url: str, pipeline: VerityRAGPipeline, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The query is held until /health has answered: no duration to measure (it was: /health within
    # 0.5 s while a 1 s query ran), so a busy machine cannot fail it.
    real_query = pipeline.query
    entered, release = threading.Event(), threading.Event()

    def slow(*args: object, **kwargs: object) -> object:
        entered.set()
        assert release.wait(60)
        return real_query(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "query", slow)
    results: list[int] = []
    thread = threading.Thread(
        target=lambda: results.append(
            httpx.post(f"{base_url}/query", json={"question": ANSWERABLE}, timeout=60).status_code
        )
    )
    thread.start()
    try:
        assert entered.wait(60)
        assert httpx.get(f"{base_url}/health", timeout=30).status_code == 200
        assert not results  # /health answered while the query was still running
    finally:
        release.set()
        thread.join(60)
    assert results == [200]


def test_query_citations_name_the_source_and_ingest_time_and_min_sources_asks_for_two(
    client: httpx.Client,
) -> None:
    client.post("/documents", json=_doc("api-prov"))  # metadata {"source": "test"}
    try:
        body = client.post("/query", json={"question": "Who built the zorblat engine?"}).json()
        assert body["abstained"] is False, body
        (cited,) = [c for c in body["citations"] if c["doc_id"] == "api-prov"]
        assert cited["source"] == "test"
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", cited["ingested_at"])
        assert body["trace"][-1]["details"]["sources"][0]["source"] == "test"
        alone = client.post(
            "/query", json={"question": "Who built the zorblat engine?", "min_sources": 2}
        ).json()
        assert alone["abstained"] is True  # one document says it: not corroborated
        assert alone["abstain_reason"] == AbstainReason.CORROBORATION.value
        assert "min_sources" in alone["explanation"]
    finally:
        client.delete("/documents/api-prov")


@pytest.mark.parametrize("bad", [0, 11, "2", True])
def test_query_min_sources_out_of_range_is_422_naming_it(anonymous: httpx.Client, bad: object) -> None:
    body = {"question": ANSWERABLE, "min_sources": bad}
    assert _error(anonymous.post("/query", json=body), 422)["field"] == "min_sources"


# -------------------------------------------------------------- api key


def test_writes_without_valid_key_are_401_and_reads_stay_open(anonymous: httpx.Client) -> None:
    assert _error(anonymous.post("/documents", json=_doc("api-nokey")), 401)["field"] == "X-API-Key"
    _error(anonymous.post("/documents", json=_doc("api-nokey"), headers={"X-API-Key": "wrong"}), 401)
    _error(anonymous.delete("/documents/squad-super-bowl-50-000"), 401)
    assert anonymous.get("/documents/squad-super-bowl-50-000").status_code == 200
    assert anonymous.post("/query", json={"question": ANSWERABLE}).status_code == 200
    assert anonymous.get("/stats").status_code == 200


def test_server_without_key_accepts_writes(pipeline: VerityRAGPipeline, serve: Serve) -> None:
    with serve(create_app(pipeline, api_key="")) as url:
        assert httpx.post(f"{url}/documents", json=_doc("api-open")).status_code == 200
        assert httpx.delete(f"{url}/documents/api-open").status_code == 200


# ------------------------------------------------- lazy pipeline, data dir


def test_app_without_pipeline_opens_data_dir_and_state_persists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serve: Serve
) -> None:
    monkeypatch.setenv("VERITYRAG_DATA_DIR", str(tmp_path))
    with serve(create_app(api_key="")) as url:
        assert httpx.post(f"{url}/documents", json=_doc("api-persist")).status_code == 200
    with serve(create_app(api_key="")) as url:  # a fresh app and pipeline on the same data dir
        assert httpx.get(f"{url}/documents/api-persist").json()["metadata"] == {"source": "test"}
        stats = httpx.get(f"{url}/stats")
        assert stats.json()["persistent"] is True
        assert str(tmp_path) not in stats.text  # /stats shows no filesystem path


def test_unusable_data_dir_gives_503_with_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serve: Serve
) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("not a directory")
    monkeypatch.setenv("VERITYRAG_DATA_DIR", str(not_a_dir))
    with serve(create_app(api_key="")) as url:
        health = httpx.get(f"{url}/health")
        assert health.status_code == 503
        assert health.json()["status"] == "unavailable"
        assert health.json()["reason"]
        _error(httpx.post(f"{url}/query", json={"question": ANSWERABLE}), 503)


def test_unusable_data_dir_is_logged_in_one_line_without_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("not a directory")
    monkeypatch.setenv("VERITYRAG_DATA_DIR", str(not_a_dir))
    with caplog.at_level(logging.ERROR, logger="verityrag.api"), serve(create_app(api_key="")) as url:
        assert httpx.get(f"{url}/health").status_code == 503
    failures = [r for r in caplog.records if r.getMessage().startswith("could not create the pipeline")]
    assert failures
    assert all(r.exc_info is None for r in failures)  # a VerityRAGError says it all: no 30-line traceback
    assert "StorageError: the data folder" in failures[0].getMessage()


def test_uvicorn_entry_point_reads_data_dir_and_key_from_env(
    tmp_path: Path, child_env: dict[str, str], python_exe: str
) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    env = {**child_env, "VERITYRAG_DATA_DIR": str(tmp_path), "VERITYRAG_API_KEY": API_KEY}
    cmd = [
        python_exe,
        "-m",
        "uvicorn",
        "verityrag.api:app",
        "--fd",
        str(sock.fileno()),
        "--log-level",
        "warning",
    ]
    proc = subprocess.Popen(cmd, env=env, pass_fds=[sock.fileno()])
    try:
        deadline = time.monotonic() + 60  # it loads its models before /health says ready
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, "uvicorn exited"
            assert time.monotonic() < deadline, "uvicorn did not come up"
            time.sleep(0.05)
        _error(httpx.post(f"{url}/documents", json=_doc("api-cli")), 401)
        ok = httpx.post(f"{url}/documents", json=_doc("api-cli"), headers={"X-API-Key": API_KEY})
        assert ok.status_code == 200
        assert (tmp_path / "verityrag.sqlite3").exists()
    finally:
        proc.terminate()
        proc.wait(10)
        sock.close()


# ---------------------------------------------------------- metrics, openapi


def test_metrics_expose_counts_latency_abstentions_and_gauges(client: httpx.Client) -> None:
    query_ok = 'verityrag_http_requests_total{method="POST",endpoint="/query",status="200"}'
    abstained = f'verityrag_abstentions_total{{reason="{AbstainReason.SUFFICIENCY.value}"}}'
    before = client.get("/metrics")
    assert before.headers["content-type"].startswith("text/plain; version=0.0.4")
    client.post("/query", json={"question": ANSWERABLE})
    abstain = client.post("/query", json={"question": OUT_OF_DOMAIN}).json()
    client.post("/query", json={"question": ""})
    after = client.get("/metrics").text
    for name in (
        "verityrag_http_requests_total",
        "verityrag_query_latency_seconds_bucket",
        "verityrag_query_latency_seconds_count",
        "verityrag_abstentions_total",
        "verityrag_documents",
        "verityrag_chunks",
    ):
        assert f"# TYPE {name.removesuffix('_bucket').removesuffix('_count')} " in after
    assert _metric(after, query_ok) == _metric(before.text, query_ok) + 2
    bad = 'verityrag_http_requests_total{method="POST",endpoint="/query",status="422"}'
    assert _metric(after, bad) >= _metric(before.text, bad) + 1
    count = "verityrag_query_latency_seconds_count"
    assert _metric(after, count) == _metric(before.text, count) + 2
    reason = abstained.replace(AbstainReason.SUFFICIENCY.value, abstain["abstain_reason"])
    assert _metric(after, reason) == _metric(before.text, reason) + 1
    assert _metric(after, "verityrag_documents") >= 60
    assert re.search(r'^verityrag_query_latency_seconds_bucket\{le="\+Inf"\} \d+$', after, re.M)


def test_openapi_lists_every_path_with_examples(anonymous: httpx.Client) -> None:
    spec = anonymous.get("/openapi.json").json()
    assert set(spec["paths"]) == {
        "/health",
        "/documents",
        "/documents/files",
        "/documents/{doc_id}",
        "/query",
        "/chat/stream",
        "/stats",
        "/metrics",
        "/collections",
        "/collections/{name}",
    }
    schemas = spec["components"]["schemas"]
    for name in (
        "DocumentIn",
        "DocumentBatchIn",
        "IngestOut",
        "DocumentOut",
        "DocumentListOut",
        "FilesIngestOut",
        "QueryIn",
        "QueryOut",
        "ErrorOut",
        "CollectionsOut",
        "DeletedCollectionOut",
    ):
        assert schemas[name].get("examples"), name
    assert spec["paths"]["/query"]["post"]["responses"]["422"]
    assert set(spec["paths"]["/documents"]) == {"get", "post"}
    assert spec["components"]["schemas"]["QueryIn"]["properties"]["filter"]["title"] == "Filter"
    assert "APIKeyHeader" in spec["components"]["securitySchemes"]
