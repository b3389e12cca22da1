"""The bundled corpus as a ready pipeline (the terminal, the Streamlit app, make run's API, MCP)."""

from __future__ import annotations

from pathlib import Path

import pytest

from verityrag import VerityRAGPipeline
from verityrag.pipeline import IN_MEMORY
from verityrag.serve.bundled import bundled_pipeline


@pytest.mark.integration
def test_a_store_of_other_documents_is_not_filled_and_gets_the_calibration_of_the_bundled_corpus_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Fitted on the bundled questions against these documents, the gate refused everything: the
    # calibration comes from the bundled corpus alone (an in-memory copy, or the saved fit).
    own = VerityRAGPipeline(data_dir=tmp_path)
    own.ingest_document("q3", "Quarterly report", "Our Q3 revenue was 4 million dollars, up from 3 million.")
    assert own.store is not None
    own.store.close()

    alone = bundled_pipeline(store_dir=IN_MEMORY)
    pipeline = bundled_pipeline(store_dir=tmp_path)
    assert pipeline.index.n_documents == 1
    assert pipeline.gate.threshold_ == alone.gate.threshold_
    assert pipeline.query("What was our Q3 revenue?").abstained is False


@pytest.mark.unit
def test_in_memory_ignores_the_users_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERITYRAG_DATA_DIR", str(tmp_path / "store"))
    pipeline = bundled_pipeline(store_dir=IN_MEMORY, calibrate=False)
    assert pipeline.store is None
    assert pipeline.index.n_documents > 500
    assert not (tmp_path / "store").exists()
