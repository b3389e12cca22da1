"""Shared fixtures: hermetic environment, no network in unit tests, small real data, tiny helpers."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from verityrag.embed.hashing import HashingEmbedder
from verityrag.index.live import LiveIndex
from verityrag.types import Chunk

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data" / "built"  # the bundled corpus and question sets (`make data`)
# Where the tests find the datasets, and whether a missing one fails (CI) or skips (elsewhere).
KEPT_VARIABLES = ("VERITYRAG_DATASETS", "VERITYRAG_REQUIRE_DATASETS", "VERITYRAG_REQUIRE_BROWSER")


@pytest.fixture(autouse=True)
def _hermetic_environment(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """A developer's VERITYRAG_* variables (data dir, profile, top_k...) must not leak into tests,
    and no test may write into (or resume from) the real training state in the home folder."""
    for name in list(os.environ):
        if name.startswith("VERITYRAG_") and name not in KEPT_VARIABLES:
            monkeypatch.delenv(name)
    monkeypatch.setenv("VERITYRAG_TRAIN_DIR", str(tmp_path_factory.getbasetemp() / "train_dir"))


def _require_dataset(relative: str) -> Path:
    from verityrag import datasets
    from verityrag.errors import DatasetMissingError

    try:
        return datasets.dataset_file(relative)
    except DatasetMissingError as exc:
        if os.environ.get("VERITYRAG_REQUIRE_DATASETS") == "1":
            pytest.fail(f"dataset required here: {exc}")
        pytest.skip(f"dataset not available: {exc}")


@pytest.fixture
def require_dataset() -> Callable[[str], Path]:
    """``require_dataset(name)``: the file under the datasets root; the test skips when it is absent,
    and fails instead in CI (``VERITYRAG_REQUIRE_DATASETS=1``, set by .ci/run: ../shared/data is there)."""
    return _require_dataset


# ---------------------------------------------------------------- test tiers

TIERS = ("unit", "integration")
# Importing one of these is how a model of theirs starts to load (and costs seconds by itself).
HEAVY_LIBRARIES = ("torch", "transformers", "sentence_transformers")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test is of exactly one tier, so ``-m unit`` and ``-m integration`` split the suite."""
    wrong = []
    for item in items:
        tiers = sorted({m.name for m in item.iter_markers()} & set(TIERS))
        if len(tiers) != 1:
            wrong.append(f"{item.nodeid}: {tiers or 'no tier'}")
    if wrong:
        raise pytest.UsageError(
            "each test is marked exactly one of unit or integration "
            "(a function's mark adds to its module's pytestmark):\n  " + "\n  ".join(wrong)
        )


class _RefuseHeavyImports:
    """A meta path finder that refuses a first import of a heavy model library."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] in HEAVY_LIBRARIES:
            raise RuntimeError(
                f"unit tests must not import {name} (a model library); mark the test integration"
            )
        return None


def _refuse(what: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"unit tests must not {what}; mark the test integration or use a stand-in")

    return refuse


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """A ``unit`` test, its fixtures included (a session fixture it is the first to use too), cannot
    touch the network, load an ONNX model, import a torch model library, start a process or bind a
    port. Exact under ``pytest -m unit``; in a mixed run a model an integration test already loaded
    may be reused unseen (the readers share one session per folder)."""
    if item.get_closest_marker("unit") is None:
        yield
        return
    import multiprocessing.process
    import subprocess

    import onnxruntime

    patch = pytest.MonkeyPatch()
    patch.setattr(socket.socket, "connect", _refuse("touch the network"))
    patch.setattr(socket, "create_connection", _refuse("touch the network"))
    patch.setattr(socket.socket, "bind", _refuse("bind a socket (a server)"))
    patch.setattr(onnxruntime, "InferenceSession", _refuse("load an ONNX model"))
    patch.setattr(subprocess.Popen, "_execute_child", _refuse("start a process"))
    patch.setattr(os, "fork", _refuse("fork a process"))
    patch.setattr(multiprocessing.process.BaseProcess, "start", _refuse("start a process"))
    patch.setattr(sys, "meta_path", [_RefuseHeavyImports(), *sys.meta_path])  # asked only if not imported
    try:
        yield
    finally:
        patch.undo()


# ------------------------------------------------------------------ real data


@pytest.fixture(scope="session")
def corpus_slice() -> list[dict[str, Any]]:
    """The first 200 documents of the committed SQuAD corpus (4 articles), each declaring its
    article as its source, as the bundled corpus is loaded (``serve.bundled_corpus.load_corpus``)."""
    with (DATA_DIR / "corpus.jsonl").open(encoding="utf-8") as fh:
        rows = [json.loads(line) for _, line in zip(range(200), fh, strict=False)]
    return [{**row, "metadata": {"source": row["title"]}} for row in rows]


@pytest.fixture(scope="session")
def test_questions() -> list[dict[str, Any]]:
    with (DATA_DIR / "questions" / "test.jsonl").open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture(scope="session")
def answered_question(corpus_slice: list[dict[str, str]], test_questions: list[dict[str, Any]]) -> str:
    """A test question the extractive pipeline answers on ``corpus_slice`` (so the gates let it through)."""
    from verityrag import VerityRAGPipeline

    pipeline = VerityRAGPipeline()
    pipeline.ingest_documents(corpus_slice)
    in_slice = {d["doc_id"] for d in corpus_slice}
    for q in test_questions:
        if q["answers"] and q["source_doc_id"] in in_slice and not pipeline.query(q["question"]).abstained:
            return str(q["question"])
    pytest.fail("no answered question in the corpus slice")


# ---------------------------------------------------------------- index helpers


def _make_chunk(doc_id: str, text: str, position: int = 0, title: str = "") -> Chunk:
    return Chunk(f"{doc_id}#{position}", doc_id, title, text, position, 0, len(text))


def _unit_rows(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    rows = rng.normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.fixture
def make_chunk() -> Callable[..., Chunk]:
    """``make_chunk(doc_id, text, position=0, title="")`` -> a Chunk spanning the whole text."""
    return _make_chunk


@pytest.fixture
def unit_rows() -> Callable[[np.random.Generator, int, int], np.ndarray]:
    """``unit_rows(rng, n, dim)`` -> float32 [n, dim] with unit-length rows."""
    return _unit_rows


@pytest.fixture
def add_texts() -> Callable[..., None]:
    """``add_texts(index, {doc_id: [chunk texts]}, title="")``: one upsert per doc, hashed vectors."""

    def add(index: LiveIndex, docs: dict[str, Sequence[str]], title: str = "") -> None:
        embedder = HashingEmbedder(dim=index.dim, analyzer=index.analyzer)
        upserts = []
        for doc_id, texts in docs.items():
            chunks = [_make_chunk(doc_id, t, i, title) for i, t in enumerate(texts)]
            upserts.append((doc_id, chunks, embedder.encode(texts)))
        index.apply(upserts)

    return add


class CountingEmbedder:
    """Wraps an embedder (same dim and fingerprint) and counts what it is asked to encode."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0
        self.texts = 0

    @property
    def dim(self) -> int:
        return int(self.inner.dim)

    def fingerprint(self) -> str:
        return str(self.inner.fingerprint())

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.encode(texts)


@pytest.fixture
def counting_embedder() -> type[CountingEmbedder]:
    return CountingEmbedder


# ----------------------------------------------------------------- processes


@pytest.fixture
def child_env() -> dict[str, str]:
    """Environment for a child Python: this checkout importable, no VERITYRAG_* settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERITYRAG_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    return env


@pytest.fixture
def python_exe() -> str:
    return sys.executable


def _load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a module (scripts/ is not a package); registered in sys.modules
    so the dataclasses it defines can find their module."""
    spec = importlib.util.spec_from_file_location(f"{name}_script", REPO_ROOT / "scripts" / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_script() -> Callable[[str], ModuleType]:
    return _load_script
