"""What the recipes share: the repository's folders, their command line, and the files they write."""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verityrag import datasets
from verityrag.config import Settings
from verityrag.eval.metrics import OPERATING_FALSE_FLAG_RATE, threshold_for_false_flag_rate
from verityrag.models.encoding import LongSide
from verityrag.models.folder import METADATA_FILE, ModelMetadata, model_folder
from verityrag.train.cross_encoder import CrossEncoderTrainer
from verityrag.train.model_build import (
    SquadSources,
    add_training_arguments,
    base_model_name,
    export_with_check,
    require_pair_files,
)

#: The repository the recipes build in (their work folders are under ``guard_work/``).
ROOT = datasets.REPO_ROOT
#: Where a recipe's figures are kept (committed; README and docs read them).
RESULTS_DIR = ROOT / "scripts" / "results"
#: The bundled corpus's manifest: the articles no recipe may train on.
MANIFEST = ROOT / "data" / "built" / "corpus_manifest.json"
#: HaluEval QA under the datasets root: the guard's, the gemma answers' and the reader check's items.
HALUEVAL = datasets.datasets_root() / datasets.HALUEVAL_QA


#: Names the folder that keeps the recipes' training state (built data, checkpoints, run logs).
TRAIN_DIR_ENV = "VERITYRAG_TRAIN_DIR"


def model_dir(name: str) -> Path:
    """The folder of the model ``name`` under the models root the environment names
    (``VERITYRAG_MODELS_DIR``, through ``Settings.from_env()``), else the checkout's guard_work/."""
    return model_folder(name, Settings.from_env().models_dir)


def train_dir() -> Path:
    """Where long training runs keep their state: ``$VERITYRAG_TRAIN_DIR``, else
    ``~/.cache/verityrag/train``. Outside the work tree, so a fresh checkout on the same machine
    resumes a run where it stopped; nothing there is ever committed."""
    configured = os.environ.get(TRAIN_DIR_ENV)
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "verityrag" / "train"


def command(name: str) -> str:
    """How a recipe is run: ``python -m verityrag.train NAME``."""
    return f"python -m verityrag.train {name}"


def recipe_parser(name: str, doc: str | None) -> argparse.ArgumentParser:
    """The recipe's parser: its module docstring as the description, the recipe's command as ``prog``."""
    return argparse.ArgumentParser(
        prog=command(name), description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def add_domains_argument(parser: argparse.ArgumentParser) -> None:
    """``--domains DIR`` (repeatable): user domains (``../shared/domains`` format) a recipe fits on."""
    parser.add_argument(
        "--domains",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="add the user domains of DIR, each asked alone (never the test domains)",
    )


def check_domains(
    parser: argparse.ArgumentParser, folders: Sequence[Path], refused: Sequence[str] = ("test",)
) -> None:
    """A usage error for a ``--domains`` folder named like one that is only measured."""
    for folder in folders:
        if folder.resolve().name in refused:
            parser.error(f"--domains {folder}: the {folder.resolve().name} domains are not fitted on")


def training_parser(name: str, doc: str | None, data: Path, out: Path, lr: float) -> argparse.ArgumentParser:
    """A cross-encoder recipe's parser with the options every trainer takes (``add_training_arguments``)."""
    parser = recipe_parser(name, doc)
    add_training_arguments(parser, data, out, lr=lr)
    return parser


def require_splits(parser: argparse.ArgumentParser, data: Path, splits: Sequence[str], builder: str) -> None:
    """A usage error when a split's pair file (``<data>/<split>.jsonl.gz``) is missing, naming the
    recipe ``builder`` that writes it."""
    require_pair_files(parser, [data / f"{s}.jsonl.gz" for s in splits], command(builder))


def command_line(name: str, argv: Sequence[str] | None) -> str:
    """The command that ran a recipe with ``argv`` (the process's arguments when ``None``), for its records."""
    return " ".join([command(name), *(sys.argv[1:] if argv is None else argv)])


def add_seed_and_out(parser: argparse.ArgumentParser, out: Path) -> None:
    """A data recipe's ``--seed`` (13, as every pair set was built with) and ``--out`` options."""
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", type=Path, default=out)


def load_squad(args: argparse.Namespace) -> SquadSources:
    """The SQuAD 2.0 articles a recipe may train on, from ``add_squad_arguments``' options; never an
    article the bundled corpus reserves for the main eval (``MANIFEST``)."""
    return SquadSources.load(args, MANIFEST)


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def repo_relative(path: Path) -> Path:
    """``path`` relative to the repository when it is inside it, for records that travel."""
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def read_jsonl_gz(path: Path) -> list[dict[str, Any]]:
    """The records of a gzipped JSON-lines file (HaluEval QA's items), blank lines skipped."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def scores_by_kind(scores: Sequence[float], rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """The scores grouped by their row's ``kind``, in the order the kinds first appear."""
    by_kind: dict[str, list[float]] = {}
    for s, r in zip(scores, rows, strict=True):
        by_kind.setdefault(r["kind"], []).append(s)
    return by_kind


def label_one_scores(scores: Sequence[float], rows: Sequence[dict[str, Any]]) -> list[float]:
    """The scores of the rows labelled 1 (supported, entailed)."""
    return [s for s, r in zip(scores, rows, strict=True) if r["label"]]


def operating_threshold(positive_scores: Sequence[float]) -> float:
    """The highest threshold that flags at most ``OPERATING_FALSE_FLAG_RATE`` of these positives."""
    return threshold_for_false_flag_rate(positive_scores, OPERATING_FALSE_FLAG_RATE)


def export_trained(
    trainer: CrossEncoderTrainer,
    args: argparse.Namespace,
    name: str,
    long_side: LongSide,
    sample: Sequence[tuple[str, str]],
    base_model: str | None = None,
    data: dict[str, Any] | None = None,
) -> tuple[ModelMetadata, float, dict[str, float]]:
    """Save and export the trained model into ``args.out``, checked on ``sample`` (ONNX fp32 and int8
    against torch); its metadata, the export's seconds and the check.

    The metadata is written first, as the ONNX scorer needs it to load the folder; the recipe
    rewrites it with the threshold and the figures.
    """
    meta = ModelMetadata(
        name=name,
        base_model=base_model_name(args) if base_model is None else base_model,
        data=data or {},
        created=utc_now(),
        max_length=args.max_length,
        long_side=long_side,
        threshold=0.5,
    )
    meta.write(args.out)
    export_s, export_check = export_with_check(trainer, args.out, sample)
    return meta, export_s, export_check


def write_results(path: Path, folder: Path, run_by: str) -> None:
    """``path``: the command that trained the model in ``folder`` (``run_by``), then its ``metadata.json``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    saved = json.loads((folder / METADATA_FILE).read_text(encoding="utf-8"))
    path.write_text(json.dumps({"command": run_by, **saved}, indent=2) + "\n", encoding="utf-8")
