"""Trains a three-way NLI cross-encoder (entailment / neutral / contradiction), resumably.

A ``*ForSequenceClassification`` head of three classes on an encoder (all-MiniLM-L6-v2 by
default), cross-entropy over (premise, hypothesis) pairs encoded by the base's own tokenizer
(the premise is truncated first, as :class:`~verityrag.verify.nli.HFSequenceClassificationScorer`
serves it). The saved folder is a plain Hugging Face model whose ``id2label`` names the
classes, so the scorer reads "entailment" as the support score and windows long evidence.

Built like :class:`~verityrag.crossenc.qa_trainer.ReaderTrainer` for long runs on a small machine:

- **Resumable.** A checkpoint (weights, optimizer, schedule, step, RNG) is written every
  ``checkpoint_minutes`` and when ``max_minutes`` runs out; the same command continues where it
  stopped, on the same batches, to the same weights.
- **Fast on what is there.** CUDA when a GPU is present; bfloat16 autocast on a GPU or a CPU
  with AVX-512 BF16 / AMX; batches of similar length.

Training only: imports torch at call time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from verityrag.crossenc.qa_trainer import cpu_supports_bf16, epoch_batches
from verityrag.crossenc.trainer import minilm_path, random_config
from verityrag.errors import InvalidInputError, NotFittedError

logger = logging.getLogger(__name__)

Precision = Literal["auto", "fp32", "bf16"]
CHECKPOINT_FILE = "checkpoint.pt"
ID2LABEL = {0: "entailment", 1: "neutral", 2: "contradiction"}


@dataclass(frozen=True)
class NLITrainingConfig:
    """Everything that decides the trained weights (a checkpoint of another config is not resumed)."""

    max_length: int = 256
    epochs: int = 2
    batch_size: int = 32
    learning_rate: float = 3e-5
    warmup_fraction: float = 0.06
    weight_decay: float = 0.01
    seed: int = 13

    def __post_init__(self) -> None:
        for name in ("max_length", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise InvalidInputError(name, f"must be >= 1, got {getattr(self, name)}")
        if not 0 < self.learning_rate < 1:
            raise InvalidInputError("learning_rate", f"must be in (0, 1), got {self.learning_rate}")
        if not 0 <= self.warmup_fraction < 1:
            raise InvalidInputError("warmup_fraction", f"must be in [0, 1), got {self.warmup_fraction}")


class NLITrainer:
    """Trains the three-way head; :meth:`fit` returns self, ``model_`` is the result.

    ``out``: the run folder (its checkpoint lives there). ``base_model``: a Hugging Face folder
    with a tokenizer (None: all-MiniLM-L6-v2). ``random_init_config``: a random model of these
    config fields instead (tests). ``max_minutes``: stop (checkpoint written) after training
    that long in this run; ``finished_`` says whether the planned epochs are done.
    """

    def __init__(
        self,
        out: Path,
        config: NLITrainingConfig | None = None,
        base_model: Path | None = None,
        random_init_config: dict[str, Any] | None = None,
        threads: int = 2,
        precision: Precision = "auto",
        device: str | None = None,
        max_minutes: float | None = None,
        checkpoint_minutes: float = 15.0,
        progress: bool = True,
    ) -> None:
        self.out = Path(out)
        self.config = config or NLITrainingConfig()
        self.base_model = base_model
        self.random_init_config = random_init_config
        self.threads = threads
        self.precision = precision
        self.device = device
        self.max_minutes = max_minutes
        self.checkpoint_minutes = checkpoint_minutes
        self.progress = progress

    def _base(self) -> Path:
        return self.base_model if self.base_model is not None else minilm_path()

    def tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(self._base()))

    def _build_model(self) -> Any:
        from transformers import AutoModelForSequenceClassification

        labels = {"num_labels": 3, "id2label": ID2LABEL, "label2id": {v: k for k, v in ID2LABEL.items()}}
        if self.random_init_config is not None:
            return AutoModelForSequenceClassification.from_config(  # type: ignore[no-untyped-call]
                random_config(self.random_init_config, **labels)
            )
        return AutoModelForSequenceClassification.from_pretrained(str(self._base()), **labels)

    def _device_and_precision(self) -> tuple[str, bool]:
        import torch

        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self.precision == "auto":
            bf16 = torch.cuda.is_bf16_supported() if device == "cuda" else cpu_supports_bf16()
        else:
            bf16 = self.precision == "bf16"
        return device, bf16

    def encode(self, rows: Sequence[dict[str, Any]]) -> list[dict[str, np.ndarray]]:
        """Token ids (and token types, where the tokenizer has them) per pair, premise cut first."""
        tokenizer = self.tokenizer()
        enc = tokenizer(
            [r["premise"] for r in rows],
            [r["hypothesis"] for r in rows],
            truncation="longest_first",
            max_length=self.config.max_length,
        )
        names = [n for n in ("input_ids", "token_type_ids") if n in enc]
        self.pad_id_ = int(tokenizer.pad_token_id or 0)
        return [{n: np.asarray(enc[n][i], dtype=np.int32) for n in names} for i in range(len(rows))]

    def fit(self, rows: Sequence[dict[str, Any]], data_digest: str = "") -> NLITrainer:
        """Train on ``rows`` (``premise``, ``hypothesis``, ``label`` 0/1/2)."""
        import torch
        from tqdm.auto import tqdm

        if not rows:
            raise InvalidInputError("rows", "is empty")
        bad = [r["label"] for r in rows if r["label"] not in ID2LABEL]
        if bad:
            raise InvalidInputError("rows", f"labels must be 0, 1 or 2 ({ID2LABEL}); got {bad[:3]}")
        cfg = self.config
        torch.set_num_threads(self.threads)
        torch.manual_seed(cfg.seed)
        t0 = time.perf_counter()
        features = self.encode(rows)
        labels = [int(r["label"]) for r in rows]
        lengths = [len(f["input_ids"]) for f in features]
        per_epoch = len(epoch_batches(lengths, cfg.batch_size, cfg.seed, 0))
        total = cfg.epochs * per_epoch
        warmup = max(1, int(total * cfg.warmup_fraction))
        device, bf16 = self._device_and_precision()
        self.device_, self.bf16_ = device, bf16
        model = self._build_model().to(device)
        decay = [p for n, p in model.named_parameters() if not n.endswith("bias") and "LayerNorm" not in n]
        no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
        optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=cfg.learning_rate,
        )

        def rate(step: int) -> float:
            return min((step + 1) / warmup, max(0.0, (total - step) / max(1, total - warmup)))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
        identity = {"config": asdict(cfg), "data_digest": data_digest, "pairs": len(rows)}
        state = self._load_checkpoint(model, optimizer, scheduler, identity)
        step, trained_seconds, losses = state["step"], state["trained_seconds"], state["losses"]
        logger.info(
            "NLI training: %d pairs, %d steps (%d per epoch), device %s, bf16 %s, starting at step %d",
            len(rows), total, per_epoch, device, bf16, step,
        )  # fmt: skip
        model.train()
        run_start = last_checkpoint = time.perf_counter()
        bar = tqdm(total=total, initial=step, desc="train NLI", disable=not self.progress, unit="batch")
        self.stopped_early_ = False
        batches: tuple[int, list[list[int]]] = (-1, [])
        while step < total:
            epoch, index = divmod(step, per_epoch)
            if batches[0] != epoch:  # drawn from (seed, epoch) alone: a resumed run gets the same ones
                batches = (epoch, epoch_batches(lengths, cfg.batch_size, cfg.seed, epoch))
            batch = batches[1][index]
            inputs = self._tensors([features[i] for i in batch], device)
            target = torch.tensor([labels[i] for i in batch], device=device)
            with torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=bf16):
                logits = model(**inputs).logits
            loss: Any = torch.nn.functional.cross_entropy(logits.float(), target)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(float(loss.item()))
            step += 1
            bar.update(1)
            if step % 20 == 0:
                bar.set_postfix(loss=f"{np.mean(losses[-200:]):.3f}", epoch=epoch)
            now = time.perf_counter()
            out_of_time = self.max_minutes is not None and now - run_start > self.max_minutes * 60
            if step < total and (out_of_time or now - last_checkpoint > self.checkpoint_minutes * 60):
                self._save_checkpoint(
                    model, optimizer, scheduler, identity, step, trained_seconds + now - run_start, losses
                )
                last_checkpoint = now
                if out_of_time:
                    self.stopped_early_ = True
                    break
        bar.close()
        model.eval()
        self.model_ = model.to("cpu")
        self.step_, self.total_steps_ = step, total
        self.finished_ = step >= total
        self.train_seconds_ = trained_seconds + time.perf_counter() - run_start
        self.setup_seconds_ = run_start - t0
        self.final_loss_ = float(np.mean(losses[-200:])) if losses else float("nan")
        self.pairs_per_second_ = (
            (step - state["step"]) * cfg.batch_size / max(1e-9, time.perf_counter() - run_start)
        )
        return self

    def _tensors(self, batch: Sequence[dict[str, np.ndarray]], device: str) -> dict[str, Any]:
        import torch

        width = max(len(f["input_ids"]) for f in batch)
        out: dict[str, Any] = {}
        for name in batch[0]:
            pad = self.pad_id_ if name == "input_ids" else 0
            t = torch.full((len(batch), width), pad, dtype=torch.long)
            for row, f in enumerate(batch):
                t[row, : len(f[name])] = torch.from_numpy(f[name].astype(np.int64))
            out[name] = t.to(device)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, f in enumerate(batch):
            mask[row, : len(f["input_ids"])] = 1
        out["attention_mask"] = mask.to(device)
        return out

    def predict_proba(self, pairs: Sequence[tuple[str, str]], batch_size: int = 64) -> np.ndarray:
        """Class probabilities ``[n, 3]`` of (premise, hypothesis) pairs, premise cut to fit (no
        windows: the served scorer windows; this is for checks on short pairs)."""
        import torch

        if not hasattr(self, "model_"):
            raise NotFittedError("NLITrainer is not fitted; call fit(rows) first")
        features = self.encode([{"premise": p, "hypothesis": h} for p, h in pairs])
        out = []
        with torch.inference_mode():
            for b in range(0, len(features), batch_size):
                logits = self.model_(**self._tensors(features[b : b + batch_size], "cpu")).logits.float()
                out.append(torch.softmax(logits, dim=-1).numpy())
        return np.concatenate(out) if out else np.zeros((0, 3))

    def save(self, folder: Path) -> Path:
        """The model and its tokenizer as a plain Hugging Face folder (labels in ``id2label``; the
        tokenizer's ``model_max_length`` is the training length, so served windows match it)."""
        if not hasattr(self, "model_"):
            raise NotFittedError("NLITrainer is not fitted; call fit(rows) first")
        folder.mkdir(parents=True, exist_ok=True)
        self.model_.save_pretrained(str(folder))
        tokenizer = self.tokenizer()
        # The served scorer windows evidence to the tokenizer's limit: the length trained on.
        tokenizer.model_max_length = self.config.max_length
        tokenizer.save_pretrained(str(folder))
        return folder

    def _checkpoint_path(self) -> Path:
        return self.out / CHECKPOINT_FILE

    def _save_checkpoint(
        self,
        model: Any,
        optimizer: Any,
        scheduler: Any,
        identity: dict[str, Any],
        step: int,
        trained_seconds: float,
        losses: list[float],
    ) -> None:
        import torch

        self.out.mkdir(parents=True, exist_ok=True)
        partial = self._checkpoint_path().with_suffix(".partial")
        torch.save(
            {
                "identity": identity,
                "model": model.state_dict(),
                "optimizer": optimizer.state_dict(),
                "scheduler": scheduler.state_dict(),
                "step": step,
                "trained_seconds": trained_seconds,
                "losses": losses[-1000:],
                "torch_rng": torch.get_rng_state(),
            },
            partial,
        )
        partial.replace(self._checkpoint_path())  # whole or not at all
        logger.info("NLI training: checkpoint at step %d written to %s", step, self._checkpoint_path())

    def _load_checkpoint(
        self, model: Any, optimizer: Any, scheduler: Any, identity: dict[str, Any]
    ) -> dict[str, Any]:
        import torch

        path = self._checkpoint_path()
        if not path.is_file():
            return {"step": 0, "trained_seconds": 0.0, "losses": []}
        saved = torch.load(path, map_location="cpu", weights_only=False)
        if saved["identity"] != identity:
            raise InvalidInputError(
                "out",
                f"{path} is a checkpoint of another run (settings or data differ: {saved['identity']} vs "
                f"{identity}); delete it to start over, or train into another folder",
            )
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["torch_rng"])
        logger.info("NLI training: resuming from %s at step %d", path, saved["step"])
        return {
            "step": saved["step"],
            "trained_seconds": saved["trained_seconds"],
            "losses": list(saved["losses"]),
        }

    def remove_checkpoint(self) -> None:
        """Delete the run's checkpoint once its model is saved."""
        self._checkpoint_path().unlink(missing_ok=True)
