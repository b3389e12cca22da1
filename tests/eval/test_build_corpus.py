"""data/build_corpus.py builds the evaluation corpus from the datasets root, byte for byte the same.

The repository holds no copy of SQuAD: `make data` builds the corpus and the question sets into
the git-ignored data/built/. The sha256 of each output below is the one published with every
evaluation figure so far; a build that differs would change them.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from verityrag import datasets

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
EXPECTED_SHA256 = {
    "corpus.jsonl": "068fae7c6b834b974d88a6b28d304edd0c695aec9bc407635cb95b8fd0de75ec",
    "questions/calibration.jsonl": "bd2d26fe6a6ab5a394efe845493ba0f92b683ca9ea0f1bc54b7c830421ca85fb",
    "questions/test.jsonl": "0f1963f66b527a02b0c8f66e06dacff10ff20b7413a8cb30cebed28eb6af44d9",
    "corpus_manifest.json": "621f33e2172d8872646db5eaa9d1bc1dcf9b2aef62482d89d6606cdf507fc32b",
}


def _load_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_corpus", DATA / "build_corpus.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def build_corpus() -> ModuleType:
    return _load_script()


@pytest.fixture
def sources(require_dataset: Callable[[str], Path]) -> Path:
    """The datasets root, when it holds the corpus's three sources (skips or fails otherwise)."""
    for name in (datasets.SQUAD_V1_DEV, datasets.SQUAD_V2_DEV, datasets.SQUAD_V2_SPLIT):
        require_dataset(name)
    return datasets.datasets_root()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_build_from_the_datasets_root_gives_the_published_files(
    build_corpus: ModuleType, sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert build_corpus.main(["--out-dir", str(tmp_path)]) == 0
    # No sha256 warning: the SQuAD 1.1 dev file is the official one.
    assert "warning" not in capsys.readouterr().err
    assert {name: _digest(tmp_path / name) for name in EXPECTED_SHA256} == EXPECTED_SHA256


def test_if_stale_skips_an_up_to_date_build_and_redoes_a_changed_one(
    build_corpus: ModuleType, sources: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert build_corpus.main(["--out-dir", str(tmp_path), "--if-stale"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert build_corpus.main(["--out-dir", str(tmp_path), "--if-stale"]) == 0
    assert "up to date" in capsys.readouterr().out
    (tmp_path / "questions" / "test.jsonl").unlink()  # an output lost
    assert build_corpus.main(["--out-dir", str(tmp_path), "--if-stale"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert build_corpus.main(["--out-dir", str(tmp_path), "--if-stale", "--seed", "14"]) == 0  # another seed
    assert "wrote" in capsys.readouterr().out


def test_sources_are_read_from_the_folder_the_variable_names(
    build_corpus: ModuleType, sources: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "datasets"
    for name in (datasets.SQUAD_V1_DEV, datasets.SQUAD_V2_DEV, datasets.SQUAD_V2_SPLIT):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(sources / name, root / name)
    monkeypatch.setenv(datasets.ENV_VAR, str(root))
    assert build_corpus.main(["--out-dir", str(tmp_path / "out")]) == 0
    assert _digest(tmp_path / "out" / "corpus.jsonl") == EXPECTED_SHA256["corpus.jsonl"]


def test_a_missing_source_is_an_error_naming_the_file_and_the_variable(
    build_corpus: ModuleType,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path / "empty"))
    assert build_corpus.main(["--out-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert datasets.SQUAD_V1_DEV in err
    assert datasets.ENV_VAR in err
    assert "make data" in err
    assert not (tmp_path / "out").exists()


def test_gzipped_and_plain_sources_hash_and_load_alike(build_corpus: ModuleType, tmp_path: Path) -> None:
    payload = json.dumps({"data": [{"title": "Ünïcode"}]}).encode("utf-8")
    plain, packed = tmp_path / "s.json", tmp_path / "s.json.gz"
    plain.write_bytes(payload)
    packed.write_bytes(gzip.compress(payload))
    assert build_corpus.content_digest(plain) == build_corpus.content_digest(packed)
    assert build_corpus.load_json(plain) == build_corpus.load_json(packed)
    assert build_corpus.source_entry(packed) == build_corpus.source_entry(plain)


def test_a_source_other_than_the_official_file_is_warned_about(
    build_corpus: ModuleType,
    sources: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(build_corpus, "SQUAD_V1_DEV_SHA256", "0" * 64)  # as if the file had been edited
    assert build_corpus.main(["--out-dir", str(tmp_path)]) == 0
    assert "SQuAD 1.1 dev sha256 differs from the official file" in capsys.readouterr().err
