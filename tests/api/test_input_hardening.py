"""Inputs an independent test turned into 500s or a bricked data folder: a number past the float
range in metadata or a filter, JSON nested past Python's parser, a lone surrogate echoed in an
error, and a batch seen half-committed. Each must be a clear 4xx, or invisible until whole."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from verityrag import Settings, VerityRAGPipeline
from verityrag.api import create_app
from verityrag.index.filters import MetadataFilter, MetadataIndex

pytestmark = pytest.mark.unit

HUGE = "1" + "0" * 309  # an integer past the float range, as JSON
DEEP_FILTER = '{"a": ' * 1000 + "1" + "}" * 1000
DEEP_LISTS = "[" * 1000 + "]" * 1000


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    pipeline = VerityRAGPipeline(data_dir=tmp_path, settings=Settings(reader=False))
    pipeline.ingest_document("watt", "James Watt", "James Watt improved the steam engine in 1776.")
    return TestClient(create_app(pipeline))


def _post_json(client: TestClient, path: str, text: str) -> tuple[int, dict[str, object]]:
    reply = client.post(path, content=text.encode(), headers={"Content-Type": "application/json"})
    return reply.status_code, reply.json()


def test_a_number_past_the_float_range_in_metadata_is_refused_and_nothing_is_stored(
    client: TestClient,
) -> None:
    status, body = _post_json(
        client, "/documents", f'{{"doc_id": "x", "text": "hi", "metadata": {{"n": {HUGE}}}}}'
    )
    assert status == 422, body
    assert body["error"]["field"] == "metadata"  # type: ignore[index]
    assert client.get("/documents/x").status_code == 404
    batch = f'{{"documents": [{{"doc_id": "y", "text": "a"}}, {{"doc_id": "z", "text": "b", "metadata": {{"n": {HUGE}}}}}]}}'
    assert _post_json(client, "/documents", batch)[0] == 422
    assert client.get("/documents/y").status_code == 404  # all or nothing
    upload = client.post(
        "/documents/files",
        files=[("files", ("a.txt", b"some text", "text/plain"))],
        data={"metadata": f'{{"n": {HUGE}}}'},
    )
    assert upload.status_code == 422


@pytest.mark.parametrize("path", ["/query", "/chat/stream"])
def test_a_number_past_the_float_range_as_a_filter_value_is_a_422(client: TestClient, path: str) -> None:
    status, body = _post_json(client, path, f'{{"question": "x?", "filter": {{"n": {HUGE}}}}}')
    assert status == 422, body
    assert client.get("/documents", params={"filter": f'{{"n": {HUGE}}}'}).status_code == 422


def test_a_stored_number_past_the_float_range_does_not_stop_the_index() -> None:
    index = MetadataIndex()
    index.put_many([("old", {"n": int(HUGE), "lang": "en"})])  # as a store from before the check holds it
    lang = MetadataFilter.from_dict({"lang": "en"})
    assert lang is not None
    assert index.matching(lang) == {"old"}


def test_json_nested_past_the_parser_is_a_422(client: TestClient) -> None:
    assert client.get("/documents", params={"filter": DEEP_FILTER}).status_code == 422
    upload = client.post(
        "/documents/files",
        files=[("files", ("a.txt", b"some text", "text/plain"))],
        data={"metadata": DEEP_LISTS},
    )
    assert upload.status_code == 422
    assert "nests too deep" in upload.json()["error"]["message"]


@pytest.mark.parametrize("path", ["/query", "/chat/stream"])
def test_a_lone_surrogate_in_a_filter_key_is_a_422_in_valid_json(client: TestClient, path: str) -> None:
    status, body = _post_json(client, path, '{"question": "x?", "filter": {"\\ud800": {"$x": 1}}}')
    assert status == 422
    assert body["error"]["field"] == "filter" or "filter" in str(body["error"]["field"])  # type: ignore[index]
    status, body = _post_json(client, path, '{"question": "x?", "filter": {"\\ud800": "v"}}')
    assert status == 422
    assert "valid Unicode" in json.dumps(body)
    listing = client.get("/documents", params={"filter": '{"\\ud800": "v"}'})
    assert listing.status_code == 422


def test_a_batch_is_seen_whole_or_not_at_all_while_it_commits() -> None:
    index = MetadataIndex()
    tagged = MetadataFilter.from_dict({"b": "T"})
    assert tagged is not None
    seen: set[int] = set()
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.add(len(index.matching(tagged)))

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        for batch in range(5):
            index.put_many((f"d{batch}-{i}", {"b": "T"}) for i in range(2000))
    finally:
        done.set()
        watcher.join()
    assert seen <= {0, 2000, 4000, 6000, 8000, 10000}
