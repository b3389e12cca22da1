"""data/build_corpus.py rebuilds the committed evaluation corpus from the bundled sources.

The corpus and question files are committed, but a user must be able to check where they came
from on a fresh clone: the rebuild reads only files in data/ and gives the same bytes.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
OUTPUTS = ("corpus.jsonl", "corpus_manifest.json", "questions/calibration.jsonl", "questions/test.jsonl")


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


def test_defaults_read_only_files_inside_the_repository(build_corpus: ModuleType) -> None:
    for default in (build_corpus.DEFAULT_SQUAD_V1, build_corpus.DEFAULT_SQUAD_V2, build_corpus.DEFAULT_SPLIT):
        path = build_corpus.repo_path(default)
        assert path.is_file(), path
        assert ROOT in path.resolve().parents


def test_rebuild_from_the_bundled_sources_gives_the_committed_files(
    build_corpus: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert build_corpus.main(["--out-dir", str(tmp_path)]) == 0
    # No sha256 warning: the bundled SQuAD 1.1 dev is the official file, compressed.
    assert "warning" not in capsys.readouterr().err
    for name in OUTPUTS:
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name


def test_gzipped_and_plain_sources_hash_and_load_alike(build_corpus: ModuleType, tmp_path: Path) -> None:
    payload = json.dumps({"data": [{"title": "Ünïcode"}]}).encode("utf-8")
    plain, packed = tmp_path / "s.json", tmp_path / "s.json.gz"
    plain.write_bytes(payload)
    packed.write_bytes(gzip.compress(payload))
    assert build_corpus.content_digest(plain) == build_corpus.content_digest(packed)
    assert build_corpus.load_json(plain) == build_corpus.load_json(packed)
    assert build_corpus.source_entry(packed) == build_corpus.source_entry(plain)


def test_a_missing_source_is_an_error_naming_it(
    build_corpus: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.json.gz"
    assert build_corpus.main(["--squad-v1", str(missing), "--out-dir", str(tmp_path / "out")]) == 2
    assert str(missing) in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_source_other_than_the_official_file_is_warned_about(
    build_corpus: ModuleType,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(build_corpus, "SQUAD_V1_DEV_SHA256", "0" * 64)  # as if the file had been edited
    assert build_corpus.main(["--out-dir", str(tmp_path)]) == 0
    assert "SQuAD 1.1 dev sha256 differs from the official file" in capsys.readouterr().err
