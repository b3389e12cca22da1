"""The resumable training loop that the extractive reader and the three-way NLI trainers share.

Built for a long run on a small machine:

- **Resumable.** A checkpoint (weights, optimizer, schedule, step, torch RNG) is written every
  ``checkpoint_minutes`` and when ``max_minutes`` runs out; running the same command again
  continues where it stopped, on the same batches, to the same weights. A checkpoint of other
  settings or other data is refused.
- **Fast on what is there.** CUDA when a GPU is present; bfloat16 autocast where the CPU
  supports it (AVX-512 BF16 or AMX) or on a GPU; batches of similar length (sorted within
  shuffled groups of 50 batches), so little of a batch is padding.

A trainer subclasses :class:`ResumableTrainer`, builds its model in ``_build_model`` and calls
:meth:`ResumableTrainer._train` with its items' lengths and the loss of one batch.
Training only: imports torch at call time.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

import numpy as np

from verityrag.crossenc.trainer import minilm_path
from verityrag.errors import InvalidInputError

if TYPE_CHECKING:
    import torch

Precision = Literal["auto", "fp32", "bf16"]
CHECKPOINT_FILE = "checkpoint.pt"
#: Batches sorted by length together (then cut into batches whose order is shuffled).
_SORT_GROUP = 50


@dataclass(frozen=True)
class TrainingConfig:
    """Everything that decides the trained weights (a checkpoint of another config is not resumed)."""

    max_length: int = 256
    epochs: int = 2
    batch_size: int = 32
    learning_rate: float = 3e-5
    warmup_fraction: float = 0.06
    weight_decay: float = 0.01
    seed: int = 13

    #: The fields that must be at least 1.
    _at_least_one: ClassVar[tuple[str, ...]] = ("max_length", "epochs", "batch_size")

    def __post_init__(self) -> None:
        for name in self._at_least_one:
            if getattr(self, name) < 1:
                raise InvalidInputError(name, f"must be >= 1, got {getattr(self, name)}")
        if not 0 < self.learning_rate < 1:
            raise InvalidInputError("learning_rate", f"must be in (0, 1), got {self.learning_rate}")
        if not 0 <= self.warmup_fraction < 1:
            raise InvalidInputError("warmup_fraction", f"must be in [0, 1), got {self.warmup_fraction}")


ConfigT = TypeVar("ConfigT", bound=TrainingConfig)
#: The loss of one batch: (model, the batch's item indices, device, bf16 autocast) -> a scalar tensor.
BatchLoss = Callable[[Any, list[int], str, bool], "torch.Tensor"]


def epoch_batches(lengths: Sequence[int], batch_size: int, seed: int, epoch: int) -> list[list[int]]:
    """The batches of one epoch: shuffled, sorted by length within groups, batch order shuffled."""
    rng = random.Random(seed * 1000 + epoch)
    order = list(range(len(lengths)))
    rng.shuffle(order)
    group = batch_size * _SORT_GROUP
    batches: list[list[int]] = []
    for g in range(0, len(order), group):
        chunk = sorted(order[g : g + group], key=lambda i: lengths[i])
        batches += [chunk[b : b + batch_size] for b in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def cpu_supports_bf16() -> bool:
    """AVX-512 BF16 or AMX on this CPU (Linux /proc/cpuinfo): bfloat16 matmuls run natively."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


class ResumableTrainer(Generic[ConfigT]):
    """What the resumable trainers share: their settings, the loop, and the checkpoint.

    ``out``: the run folder (its checkpoint lives there). ``base_model``: a Hugging Face folder
    (None: all-MiniLM-L6-v2). ``random_init_config``: a random model of these config fields
    instead (tests). ``max_minutes``: stop (checkpoint written) when this run has trained that
    long; ``finished_`` says whether the planned epochs are done.
    """

    #: Names the run in log lines ("reader training: ...").
    name: ClassVar[str] = "training"

    def __init__(
        self,
        out: Path,
        config: ConfigT | None = None,
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
        self.config: ConfigT = config if config is not None else self._default_config()
        self.base_model = base_model
        self.random_init_config = random_init_config
        self.threads = threads
        self.precision = precision
        self.device = device
        self.max_minutes = max_minutes
        self.checkpoint_minutes = checkpoint_minutes
        self.progress = progress

    def _default_config(self) -> ConfigT:
        raise NotImplementedError

    def _build_model(self) -> Any:
        raise NotImplementedError

    def _base(self) -> Path:
        return self.base_model if self.base_model is not None else minilm_path()

    def _logger(self) -> logging.Logger:
        return logging.getLogger(type(self).__module__)

    def _device_and_precision(self) -> tuple[str, bool]:
        import torch

        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self.precision == "auto":
            bf16 = torch.cuda.is_bf16_supported() if device == "cuda" else cpu_supports_bf16()
        else:
            bf16 = self.precision == "bf16"
        return device, bf16

    def _seed(self) -> float:
        """Threads and the torch seed set; the time training began (to count setup time from)."""
        import torch

        torch.set_num_threads(self.threads)
        torch.manual_seed(self.config.seed)
        return time.perf_counter()

    def _train(
        self,
        lengths: Sequence[int],
        size: dict[str, int],
        data_digest: str,
        started: float,
        batch_loss: BatchLoss,
        counts: str,
    ) -> float:
        """Train on items of these token ``lengths``; sets ``model_``, ``finished_`` and the run's
        figures; returns items per second. ``size`` (e.g. ``{"pairs": n}``) and ``data_digest``
        join the config in the checkpoint's identity; ``counts`` describes the data in the log."""
        import torch
        from tqdm.auto import tqdm

        cfg = self.config
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
        identity = {"config": asdict(cfg), "data_digest": data_digest, **size}
        state = self._load_checkpoint(model, optimizer, scheduler, identity)
        step, trained_seconds, losses = state["step"], state["trained_seconds"], state["losses"]
        self._logger().info(
            "%s: %s, %d steps (%d per epoch), device %s, bf16 %s, starting at step %d",
            self.name, counts, total, per_epoch, device, bf16, step,
        )  # fmt: skip
        model.train()
        run_start = last_checkpoint = time.perf_counter()
        desc = f"train {self.name.removesuffix(' training')}"
        bar = tqdm(total=total, initial=step, desc=desc, disable=not self.progress, unit="batch")
        self.stopped_early_ = False
        batches: tuple[int, list[list[int]]] = (-1, [])
        while step < total:
            epoch, index = divmod(step, per_epoch)
            if batches[0] != epoch:  # drawn from (seed, epoch) alone: a resumed run gets the same ones
                batches = (epoch, epoch_batches(lengths, cfg.batch_size, cfg.seed, epoch))
            loss: Any = batch_loss(model, batches[1][index], device, bf16)
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
        self.setup_seconds_ = run_start - started
        self.final_loss_ = float(np.mean(losses[-200:])) if losses else float("nan")
        items = (step - state["step"]) * cfg.batch_size
        return float(items / max(1e-9, time.perf_counter() - run_start))

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
                # Dropout draws from it: restored, a resumed run takes the very steps an unbroken one would.
                "torch_rng": torch.get_rng_state(),
            },
            partial,
        )
        partial.replace(self._checkpoint_path())  # whole or not at all
        self._logger().info(
            "%s: checkpoint at step %d written to %s", self.name, step, self._checkpoint_path()
        )

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
        if "torch_rng" in saved:  # older checkpoints went without it
            torch.set_rng_state(saved["torch_rng"])
        self._logger().info("%s: resuming from %s at step %d", self.name, path, saved["step"])
        return {
            "step": saved["step"],
            "trained_seconds": saved["trained_seconds"],
            "losses": list(saved["losses"]),
        }

    def remove_checkpoint(self) -> None:
        """Delete the run's checkpoint once its model is saved (it is ~3x the model's size)."""
        self._checkpoint_path().unlink(missing_ok=True)
