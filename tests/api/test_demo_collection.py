"""``make run``'s API: the index kept across restarts, the bundled corpus as a ``demo`` collection
that answers only while the user has no documents (or when asked for), and removable."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from verityrag.api import create_app
from verityrag.api.app import pipeline_from_env
from verityrag.pipeline import VerityRAGPipeline

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

TESLA = "Who did Tesla work for in New York in 1884?"
MILL = {
    "doc_id": "mill",
    "title": "Wexcombe tide mill",
    "text": "The tide mill at Wexcombe was built by the Ashby family in 1790. It ground corn until 1921.",
}


def _start(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> VerityRAGPipeline:
    monkeypatch.setenv("VERITYRAG_DATA_DIR", str(data_dir))
    monkeypatch.setenv("VERITYRAG_LOAD_BUNDLED", "1")
    return pipeline_from_env()


def test_pipeline_from_env_reads_the_settings_and_the_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The API's entry point reads the environment; the pipeline's constructor reads none.
    monkeypatch.setenv("VERITYRAG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("VERITYRAG_TOP_K", "2")
    pipeline = pipeline_from_env()
    try:
        assert pipeline.settings.top_k == 2
        assert pipeline.data_dir == tmp_path
    finally:
        pipeline.close()


def _stop(pipeline: VerityRAGPipeline) -> None:
    assert pipeline.store is not None
    pipeline.store.close()


def test_what_you_add_survives_a_restart_and_is_asked_before_the_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _start(tmp_path, monkeypatch)
    with TestClient(create_app(first)) as client:
        demo = {c["name"]: c["documents"] for c in client.get("/collections").json()["collections"]}
        assert set(demo) == {"demo"}
        assert demo["demo"] > 500
        assert client.post("/query", json={"question": TESLA}).json()["abstained"] is False  # demo only
        assert client.post("/documents", json=MILL).status_code == 200
    _stop(first)

    again = _start(tmp_path, monkeypatch)
    with TestClient(create_app(again)) as client:
        assert client.get("/documents/mill").status_code == 200  # kept across the restart
        sizes = {c["name"]: c["documents"] for c in client.get("/collections").json()["collections"]}
        assert sizes == {"demo": demo["demo"], "yours": 1}  # the demo was not loaded twice
        mine = client.post("/query", json={"question": "Who built the tide mill at Wexcombe?"}).json()
        assert "Ashby" in (mine["answer"] or ""), mine
        tesla = client.post("/query", json={"question": TESLA}).json()
        assert tesla["abstained"] is True  # your documents are asked, not the demo
        asked_demo = client.post("/query", json={"question": TESLA, "collection": "demo"}).json()
        assert "Edison" in (asked_demo["answer"] or "")
        both = client.post(
            "/query", json={"question": TESLA, "filter": {"collection": "demo"}, "collection": "demo"}
        )
        assert both.status_code == 422
        removed = client.delete("/collections/demo").json()
        assert removed == {"name": "demo", "deleted_documents": demo["demo"]}
        assert client.delete("/collections/demo").status_code == 404
    _stop(again)

    third = _start(tmp_path, monkeypatch)  # removed stays removed
    assert third.index.n_documents == 1
    _stop(third)
