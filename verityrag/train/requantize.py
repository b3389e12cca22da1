"""Recipe: re-quantise model folders' fp32 ONNX to int8 with the current settings, and say so in metadata.

    python -m verityrag.train requantize guard_work/guard guard_work/nli

For a folder built before a change to ``verityrag.train.exporter.QUANTIZATION``: the
int8 file is rebuilt from ``model.onnx`` (no retraining), the int8-vs-fp32 logit gap on
the folder's validation pairs is measured and recorded, and ``metadata.json`` notes that
its other metrics were measured with the earlier int8 file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from verityrag.errors import VerityRAGError
from verityrag.models import ModelMetadata, OnnxCrossEncoder
from verityrag.models.folder import ONNX_FP32_FILE, ONNX_INT8_FILE
from verityrag.train._common import recipe_parser, utc_now
from verityrag.train.exporter import QUANTIZATION, quantize_int8
from verityrag.train.model_build import read_pairs

#: The (long, short) fields of each model's pair files.
FIELDS = {"first": (("evidence", "answer"), ("premise", "hypothesis")), "second": (("question", "evidence"),)}
#: The folder's validation pairs, written by its build: the logit gap is measured on them.
VALIDATION_FILE = Path("data") / "validation.jsonl.gz"


class _InputError(Exception):
    """A model folder that cannot be re-quantised; the message names the folder and what is wrong."""


def validation_pairs(folder: Path, long_side: str, n: int) -> list[tuple[str, str]]:
    path = folder / VALIDATION_FILE
    if not path.is_file():
        raise _InputError(f"{path}: no such file (the validation pairs the logit gap is measured on)")
    try:
        rows = read_pairs(path)[:n]
    # gzip.BadGzipFile is an OSError, a truncated file raises EOFError, bad JSON a ValueError.
    except (OSError, EOFError, ValueError) as exc:
        raise _InputError(f"{path}: not a readable pair file ({exc})") from exc
    for a, b in FIELDS[long_side]:
        if rows and isinstance(rows[0], dict) and a in rows[0]:
            return [(r[a], r[b]) for r in rows]
    raise _InputError(f"{folder}: no known pair fields in its validation file")


def check_folder(folder: Path, n: int) -> tuple[ModelMetadata, list[tuple[str, str]]]:
    """The folder's metadata and validation pairs, checked before any folder is changed."""
    if not folder.is_dir():
        raise _InputError(f"{folder}: {'not a folder' if folder.exists() else 'no such folder'}")
    what = f"model folder {folder}"
    try:
        # metadata.json, the served int8 file and the tokenizer; then the fp32 file it is rebuilt from.
        meta = OnnxCrossEncoder(folder, what=what).check_files()
        OnnxCrossEncoder(folder, what=what, onnx_file=ONNX_FP32_FILE).check_files()
    except VerityRAGError as exc:
        raise _InputError(str(exc)) from exc
    return meta, validation_pairs(folder, meta.long_side, n)


def main(argv: Sequence[str] | None = None) -> int:
    p = recipe_parser("requantize", __doc__)
    p.add_argument("folders", nargs="+", type=Path)
    p.add_argument("--pairs", type=int, default=400, help="validation pairs for the logit-gap check")
    args = p.parse_args(argv)
    try:
        # All folders first: a typo in the last must not stop the run after the first is rewritten.
        checked = [(folder, *check_folder(folder, args.pairs)) for folder in args.folders]
    except _InputError as exc:
        p.error(str(exc))
    for folder, meta, pairs in checked:
        fp32 = np.array(
            [max(x) for x in OnnxCrossEncoder(folder, onnx_file=ONNX_FP32_FILE).window_logits(pairs)]
        )
        before = np.array([max(x) for x in OnnxCrossEncoder(folder).window_logits(pairs)])
        quantize_int8(folder / ONNX_FP32_FILE, folder / ONNX_INT8_FILE)
        after = np.array([max(x) for x in OnnxCrossEncoder(folder).window_logits(pairs)])
        gap = {
            "pairs": len(pairs),
            "before_mean_max_abs_logit_diff_vs_fp32": [
                float(np.abs(before - fp32).mean()),
                float(np.abs(before - fp32).max()),
            ],
            "after_mean_max_abs_logit_diff_vs_fp32": [
                float(np.abs(after - fp32).mean()),
                float(np.abs(after - fp32).max()),
            ],
        }
        meta.training["int8_quantization"] = f"dynamic int8, {QUANTIZATION}"
        meta.metrics["requantized"] = {
            "date": utc_now(),
            "note": "int8 file rebuilt from model.onnx with the settings above; the other metrics in this "
            "file were measured with the earlier per-tensor int8 file",
            "validation_logit_gap": gap,
        }
        meta.write(folder)
        print(folder, gap)
    return 0
