"""Which MCP start-ups calibrate on the bundled questions: a whole bundled corpus, in its index or beside
other documents (then on a copy of it alone); a prefix of it keeps the shipped gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from verityrag import mcp_server
from verityrag.pipeline import VerityRAGPipeline
from verityrag.serve import bundled

pytestmark = pytest.mark.unit


@pytest.fixture
def calibrations(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> list[int]:
    """Record calibrate_on_bundled calls (the real one trains a reranker: seconds, tested elsewhere)."""
    calls: list[int] = []
    monkeypatch.setattr(
        bundled, "calibrate_on_bundled", lambda pipeline, data_dir: calls.append(pipeline.index.n_documents)
    )
    saved = tmp_path_factory.mktemp("calibration") / "none.json"
    monkeypatch.setattr(bundled, "calibration_path", lambda pipeline, data_dir=None: saved)  # none saved
    return calls


def test_whole_bundled_corpus_is_calibrated_once(calibrations: list[int]) -> None:
    pipeline = mcp_server.startup_pipeline(None, None)
    assert calibrations == [pipeline.index.n_documents]
    assert pipeline.index.n_documents > 500


def test_prefix_of_the_corpus_keeps_the_shipped_gate(calibrations: list[int]) -> None:
    pipeline = mcp_server.startup_pipeline(None, 20)
    assert pipeline.index.n_documents == 20
    assert calibrations == []


def test_restored_bundled_corpus_is_calibrated_again(tmp_path: Path, calibrations: list[int]) -> None:
    mcp_server.startup_pipeline(tmp_path, None).store.close()  # type: ignore[union-attr]
    restored = mcp_server.startup_pipeline(tmp_path, None)
    assert calibrations == [restored.index.n_documents] * 2


def test_restored_index_of_other_documents_is_not_refilled_and_calibrated_on_a_copy(
    tmp_path: Path, calibrations: list[int]
) -> None:
    own = VerityRAGPipeline(data_dir=tmp_path)
    own.ingest_document("mine", "Mine", "A document of the user's own, not the bundled corpus.")
    assert own.store is not None
    own.store.close()
    pipeline = mcp_server.startup_pipeline(tmp_path, None)
    assert pipeline.index.n_documents == 1
    assert calibrations == [len(bundled.bundled_documents())]  # the bundled corpus alone, in memory


def test_the_demo_collection_is_loaded_once_and_not_again_once_removed(
    tmp_path: Path, calibrations: list[int]
) -> None:
    first = mcp_server.startup_pipeline(tmp_path, None)
    n = first.index.n_documents
    assert first.list_documents({"collection": "demo"}, 0, 1)[0] == n
    for doc in first.list_documents({"collection": "demo"}, 0, n)[1]:
        first.delete_document(doc.doc_id)
    assert first.store is not None
    first.store.close()
    again = mcp_server.startup_pipeline(tmp_path, None)
    assert again.index.n_documents == 0  # an empty index, but not a new one: the demo stays removed


def test_a_data_folder_that_is_a_file_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "not_a_folder"
    a_file.write_text("")
    with pytest.raises(SystemExit) as stopped:
        mcp_server.main(["--data-dir", str(a_file)])
    assert stopped.value.code == 2
    assert "is a file: give a folder" in capsys.readouterr().err
