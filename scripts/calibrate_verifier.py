"""Fit a verifier's decision threshold and calibration map on labelled JSONL, confirmed on a held-out part.

Each input line is ``{"label": 1|0, "score": float}`` (1 = supported), or
``{"label": ..., "premise": ..., "hypothesis": ...}`` scored here with ``--verifier``
(lexical, grounding, onnx:<folder>, hf:<model>; see verityrag.eval.ragtruth).

    python scripts/calibrate_verifier.py labelled.jsonl --verifier onnx:guard_work/guard \\
        --target-precision 0.9 --out calibration.json

The rows are split (seeded) into a fitting part and a held-out part (``--holdout``):
the threshold (``pick_threshold``) and isotonic map are fitted on the first, and the
precision (Wilson 95% interval) and accept rate are confirmed on the second. The output
records what it was fitted for: the verifier, its model version (file hashes for
local folders), the data file's sha256, and the date. Refit when any of them changes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import random
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from verityrag.errors import VerityRAGError
from verityrag.thresholds.precision import IsotonicCalibrator, confirm_threshold, pick_threshold

ROOT = Path(__file__).resolve().parent.parent


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_version(name: str, scorer: Any) -> dict[str, Any]:
    """What identifies the model: a folder's file hashes and metadata, or the scorer's own version."""
    out: dict[str, Any] = {"verifier": name}
    folder = getattr(scorer, "folder", None)
    if name.startswith("hf:"):
        candidate = Path(name[3:])
        folder = candidate if candidate.is_dir() else None
        scorer.warm_up()
        out["model_version"] = scorer.model_version
    if folder is not None and Path(folder).is_dir():
        files = sorted(
            p
            for p in Path(folder).iterdir()
            if p.is_file() and p.suffix in {".onnx", ".json", ".safetensors", ".bin"}
        )
        out["files"] = {p.name: sha256(p) for p in files}
        meta = Path(folder) / "metadata.json"
        if meta.exists():
            data = json.loads(meta.read_text(encoding="utf-8"))
            out["metadata"] = {
                k: data.get(k) for k in ("name", "base_model", "created", "threshold") if k in data
            }
    if name in ("lexical", "grounding"):
        import verityrag

        out["model_version"] = (
            f"verityrag {getattr(verityrag, '__version__', 'unversioned')} ({name}, no weights)"
        )
    return out


class DataError(Exception):
    """A problem with the data file; the message names the file (and line) and what is wrong."""


def load_rows(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if not path.is_file():
        raise DataError(f"{path}: not a file")
    rows = []
    try:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                rows.append(check_row(path, n, line))
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise DataError(f"{path}: {exc.strerror or exc}") from exc
    if not rows:
        raise DataError(f"{path}: no rows")
    return rows


def check_row(path: Path, n: int, line: str) -> dict[str, Any]:
    """One JSONL line as a row, or a DataError naming ``path:n`` and what is wrong with it."""
    try:
        row = json.loads(line.rstrip())  # without the newline, the error's column is on this line
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{n}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(row, dict):
        raise DataError(f"{path}:{n}: must be a JSON object, got {type(row).__name__}")
    if row.get("label") not in (0, 1):
        raise DataError(f"{path}:{n}: 'label' must be 0 or 1")
    if "score" in row:
        score = row["score"]
        # bool is an int to Python, and NaN / inf parse from JSON: neither is a score.
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            raise DataError(f"{path}:{n}: 'score' must be a finite number, got {json.dumps(score)}")
    elif not ("premise" in row and "hypothesis" in row):
        raise DataError(f"{path}:{n}: needs 'score', or 'premise' and 'hypothesis' with --verifier")
    elif not (isinstance(row["premise"], str) and isinstance(row["hypothesis"], str)):
        raise DataError(f"{path}:{n}: 'premise' and 'hypothesis' must be strings")
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("data", type=Path, help="labelled JSONL")
    p.add_argument(
        "--verifier", default=None, help="scores rows without a 'score' (lexical, grounding, onnx:…, hf:…)"
    )
    p.add_argument("--target-precision", type=float, default=0.9)
    p.add_argument(
        "--min-accept", type=float, default=0.1, help="refuse thresholds accepting less than this share"
    )
    p.add_argument("--conservative", action="store_true", help="the Wilson lower bound must reach the target")
    p.add_argument("--holdout", type=float, default=0.5, help="share of rows kept for confirmation")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("calibration.json"))
    args = p.parse_args(argv)
    if not 0.0 < args.holdout < 1.0:
        p.error("--holdout must be within (0, 1)")
    # Checked before any scoring: a typo must not cost a model run.
    if not 0.0 < args.target_precision <= 1.0:
        p.error("--target-precision must be within (0, 1]")
    if not 0.0 <= args.min_accept <= 1.0:
        p.error("--min-accept must be within [0, 1]")
    if args.out.is_dir():
        p.error(f"--out {args.out} is a folder: give a file path")

    try:
        rows = load_rows(args.data)
    except DataError as exc:
        p.error(str(exc))
    cut = round(len(rows) * (1 - args.holdout))
    if not 0 < cut < len(rows):
        # An empty part can neither fit nor confirm (confirm_threshold raised from inside);
        # checked before any scoring, as the other arguments are.
        empty = "fitting" if cut == 0 else "held-out"
        p.error(
            f"--holdout {args.holdout} of {len(rows)} rows leaves the {empty} part empty: "
            "give more rows or a --holdout nearer 0.5"
        )
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        p.error(f"--out {args.out}: part of its folder path is a file")
    except OSError as exc:
        p.error(f"--out {args.out}: cannot create its folder ({exc.strerror or exc})")
    fitted_for: dict[str, Any] = {"verifier": args.verifier or "precomputed scores"}
    if any("score" not in r for r in rows):
        if not args.verifier:
            p.error("rows without 'score' need --verifier")
        from verityrag.eval.ragtruth import build_scorer

        todo = [i for i, r in enumerate(rows) if "score" not in r]
        try:
            scorer = build_scorer(args.verifier)  # an unknown name raises InvalidInputError
            scores = scorer.score_pairs([(rows[i]["premise"], rows[i]["hypothesis"]) for i in todo])
        except VerityRAGError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        for i, s in zip(todo, scores, strict=True):
            rows[i]["score"] = s
        fitted_for = model_version(args.verifier, scorer)

    order = list(range(len(rows)))
    random.Random(args.seed).shuffle(order)
    fit, held = [rows[i] for i in order[:cut]], [rows[i] for i in order[cut:]]
    try:
        choice = pick_threshold(
            [r["score"] for r in fit],
            [r["label"] for r in fit],
            args.target_precision,
            args.min_accept,
            args.conservative,
        )
    except VerityRAGError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    check = confirm_threshold(choice, [r["score"] for r in held], [r["label"] for r in held])
    calibrator = IsotonicCalibrator().fit([r["score"] for r in fit], [r["label"] for r in fit])
    result = {
        "fitted_for": fitted_for,
        "data": {
            "path": str(args.data),
            "sha256": sha256(args.data),
            "rows": len(rows),
            "fit": len(fit),
            "held_out": len(held),
        },
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "seed": args.seed,
        "threshold": choice.as_dict(),
        "held_out": check.as_dict(),
        "isotonic": calibrator.to_dict(),
    }
    try:
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        p.error(f"--out {args.out}: cannot write ({exc.strerror or exc})")
    print(
        f"threshold {choice.threshold:.4f}: precision {choice.precision:.3f} "
        f"[{choice.precision_low:.3f}, {choice.precision_high:.3f}], accept {choice.accept_rate:.1%} (fit); "
        f"held-out precision {check.precision:.3f} [{check.precision_low:.3f}, {check.precision_high:.3f}], "
        f"accept {check.accept_rate:.1%}, target {'met' if check.meets_target else 'NOT met'}"
    )
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
