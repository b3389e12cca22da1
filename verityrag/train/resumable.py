"""The resumable training loop that the extractive reader and the three-way NLI trainers share.

Built for a long run on a small machine:

- **Resumable.** A checkpoint (weights, optimizer, schedule, its plan, step, torch RNG) is written
  every ``checkpoint_minutes`` and when ``max_minutes`` runs out; running the same command again
  continues where it stopped, on the same batches, to the same weights. A checkpoint of other
  settings or other data is not resumed: the run starts over and says so in one log line.
- **A schedule shaped by a time budget.** With ``budget_minutes`` the number of steps is not
  ``epochs`` times an epoch but what fits: the run's first steps are taken at learning rate 0
  and timed (the optimizer's moments see them; the weights do not move), then warm-up and the
  linear decay to zero are laid over the steps that end inside the budget. A short run that
  decays beats an undecayed slice of a long one. The plan is fixed before the first checkpoint
  and saved with it: a resumed run keeps it.
- **Fast on what is there.** CUDA when a GPU is present; bfloat16 autocast where the CPU
  supports it (AVX-512 BF16 or AMX) or on a GPU; batches of similar length (sorted within
  shuffled groups of 50 batches), so little of a batch is padding.

A trainer subclasses :class:`ResumableTrainer`, builds its model in ``_build_model`` and calls
:meth:`ResumableTrainer._train` with its items' lengths and the loss of one batch.
Training only: imports torch at call time.
"""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeVar

import numpy as np

from verityrag.errors import InvalidInputError
from verityrag.train.cross_encoder import minilm_path

if TYPE_CHECKING:
    import torch

Precision = Literal["auto", "fp32", "bf16"]
CHECKPOINT_FILE = "checkpoint.pt"
#: Where a checkpoint of other settings or data is moved when a run starts over (one kept).
REPLACED_CHECKPOINT_FILE = "checkpoint.replaced.pt"
#: Steps a budgeted run times at learning rate 0 (after ``_MEASURE_WARM`` untimed ones: the first
#: calls allocate and compile) before it fixes its plan; batch lengths vary, so not too few.
_MEASURE_STEPS = 40
_MEASURE_WARM = 5
#: Share of a budget held back for the step rate's drift and the checkpoints' writes.
_BUDGET_MARGIN = 0.03
#: The source of a budgeted run's placeholder plan while it times its first steps.
_MEASURING = "measuring"
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


@dataclass(frozen=True)
class Plan:
    """How many optimizer steps a run takes: the first ``measured_steps`` at rate 0 (a budgeted
    run timing itself), then ``warmup_steps`` of linear warm-up and a linear decay that reaches 0
    after step ``total_steps``; ``source`` says what fixed them (epochs, steps, a budget)."""

    total_steps: int
    warmup_steps: int
    source: str
    measured_steps: int = 0

    def learning_rate_factor(self, step: int) -> float:
        """The factor on the peak rate for the update made at ``step`` (0-based); 0 after the last."""
        if step < self.measured_steps:
            return 0.0
        done, steps = step - self.measured_steps, self.total_steps - self.measured_steps
        decay = max(0.0, (steps - done) / max(1, steps - self.warmup_steps))
        return min((done + 1) / self.warmup_steps, decay)


def plan_for_steps(total_steps: int, warmup_fraction: float, source: str, measured_steps: int = 0) -> Plan:
    """A plan of ``total_steps``; the first ``warmup_fraction`` of the learning steps warm up."""
    learning = total_steps - measured_steps
    if learning < 1:
        raise InvalidInputError("total_steps", f"must leave >= 1 learning step, got {total_steps}")
    return Plan(total_steps, max(1, int(learning * warmup_fraction)), source, measured_steps)


def plan_for_budget(
    steps_taken: int,
    seconds_left: float,
    seconds_per_step: float,
    warmup_fraction: float,
    budget_minutes: float,
) -> Plan:
    """``steps_taken`` timed at rate 0, then the steps that fit in ``seconds_left`` (less a small
    margin) at ``seconds_per_step``."""
    if seconds_per_step <= 0:
        raise InvalidInputError("seconds_per_step", f"must be > 0, got {seconds_per_step}")
    steps = math.floor(seconds_left * (1 - _BUDGET_MARGIN) / seconds_per_step)
    if steps < 1:
        raise InvalidInputError(
            "budget_minutes",
            f"{budget_minutes:g} min leaves no time to train after setup ({seconds_left:.0f} s left)",
        )
    source = f"budget of {budget_minutes:g} min at {seconds_per_step:.3f} s/step"
    return plan_for_steps(steps_taken + steps, warmup_fraction, source, measured_steps=steps_taken)


def replan_for_budget(
    plan: Plan, step: int, trained_seconds: float, budget_minutes: float, setup_seconds: float
) -> Plan:
    """A running plan refitted when the run proves slower (or faster) than its first steps said:
    from ``step`` on, as many steps as fit in ``budget_minutes`` (less setup and a margin) at the
    run's own rate so far (``trained_seconds / step``); warm-up is kept, and the decay to zero is
    laid over the new remainder. The rate drops at once to the new line: better than ending late."""
    if step < plan.measured_steps + plan.warmup_steps:
        raise InvalidInputError(
            "replan", f"step {step} is still in the timed steps or warm-up; resume without it"
        )
    rate = trained_seconds / max(1, step)
    left = budget_minutes * 60 - setup_seconds
    more = math.floor(left * (1 - _BUDGET_MARGIN) / rate)
    if more < 1:
        raise InvalidInputError("budget_minutes", f"{budget_minutes:g} min leaves no time to train")
    source = (
        f"re-planned at step {step} to {budget_minutes:g} more min at {rate:.3f} s/step "
        f"(was {plan.total_steps} steps: {plan.source})"
    )
    return Plan(step + more, plan.warmup_steps, source, plan.measured_steps)


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
        budget_minutes: float | None = None,
        plan: Plan | None = None,
        compile: bool = False,
        replan: bool = False,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if budget_minutes is not None and budget_minutes <= 0:
            raise InvalidInputError("budget_minutes", f"must be > 0, got {budget_minutes}")
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
        self.budget_minutes = budget_minutes
        self.plan = plan
        self.compile = compile
        self.replan = replan
        # What the budget, the checkpoints and max_minutes are measured on (a test's fake clock).
        self.clock = clock

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
        return self.clock()

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
        device, bf16 = self._device_and_precision()
        self.device_, self.bf16_ = device, bf16
        model = self._build_model().to(device)
        optimizer = self._optimizer(model)
        identity = {"config": asdict(cfg), "data_digest": data_digest, **size}
        if self.base_model is not None:  # continued training: other starting weights, other run
            identity["base_model"] = str(Path(self.base_model).resolve())
        saved = self._load_checkpoint(model, identity)
        step, trained_seconds, losses = saved["step"], saved["trained_seconds"], saved["losses"]
        forward = self._compiled(model)

        batches: tuple[int, list[list[int]]] = (-1, [])
        plan: Plan | None = saved["plan"]
        if plan is None:
            plan = self._plan(per_epoch)
        elif self.replan and self.budget_minutes is not None:
            plan = replan_for_budget(
                plan,
                saved["step"],
                saved["trained_seconds"],
                self.budget_minutes,
                self.clock() - started,
            )
            self._logger().info("%s: %s", self.name, plan.source)
        elif self.budget_minutes is not None or self.plan is not None:
            self._logger().info("%s: keeping the checkpoint's plan (%s)", self.name, plan.source)
        # Read by the scheduler at every step: a budgeted run swaps in its fixed plan after measuring.
        current = [plan]
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: current[0].learning_rate_factor(s))
        if saved["scheduler"] is not None:  # after the scheduler is made: it resets the rates it finds
            optimizer.load_state_dict(saved["optimizer"])
            scheduler.load_state_dict(saved["scheduler"])
        measuring = plan.source == _MEASURING
        self._logger().info(
            "%s: %s, %s (%d per epoch), device %s, bf16 %s, starting at step %d",
            self.name, counts,
            "timing the first steps to plan the budget" if measuring
            else f"{plan.total_steps} steps ({plan.warmup_steps} warm-up; {plan.source})",
            per_epoch, device, bf16, step,
        )  # fmt: skip
        model.train()
        run_start = last_checkpoint = timed_from = self.clock()
        desc = f"train {self.name.removesuffix(' training')}"
        bar = tqdm(total=plan.total_steps, initial=step, desc=desc, disable=not self.progress, unit="batch")
        self.stopped_early_ = False
        while step < current[0].total_steps:
            epoch, index = divmod(step, per_epoch)
            if batches[0] != epoch:  # drawn from (seed, epoch) alone: a resumed run gets the same ones
                batches = (epoch, epoch_batches(lengths, cfg.batch_size, cfg.seed, epoch))
            loss: Any = batch_loss(forward, batches[1][index], device, bf16)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(float(loss.item()))
            step += 1
            now = self.clock()
            if measuring and step == self._measure_warm(per_epoch):
                timed_from = now
            elif measuring and step == current[0].measured_steps:
                # Before the scheduler's step: the next update already takes the fixed plan's rate.
                current[0] = self._budget_plan(
                    step, started, (now - timed_from) / (step - self._measure_warm(per_epoch))
                )
                measuring = False
                bar.total = current[0].total_steps
                self._logger().info(
                    "%s: %d steps (%d warm-up; %s)",
                    self.name, current[0].total_steps, current[0].warmup_steps, current[0].source,
                )  # fmt: skip
            scheduler.step()
            bar.update(1)
            if step % 20 == 0:
                bar.set_postfix(loss=f"{np.mean(losses[-200:]):.3f}", epoch=epoch)
            if measuring:
                continue  # no checkpoint before the plan is fixed: a resumed run always has one
            out_of_time = self.max_minutes is not None and now - run_start > self.max_minutes * 60
            if step < current[0].total_steps and (
                out_of_time or now - last_checkpoint > self.checkpoint_minutes * 60
            ):
                self._save_checkpoint(
                    model, optimizer, scheduler, identity, current[0], step,
                    trained_seconds + now - run_start, losses,
                )  # fmt: skip
                last_checkpoint = now
                if out_of_time:
                    self.stopped_early_ = True
                    break
        plan = self.plan_ = current[0]
        total = plan.total_steps
        bar.close()
        model.eval()
        self.model_ = model.to("cpu")
        self.step_, self.total_steps_ = step, total
        self.finished_ = step >= total
        self.learning_rate_ = float(scheduler.get_last_lr()[0])
        self.train_seconds_ = trained_seconds + self.clock() - run_start
        self.setup_seconds_ = run_start - started
        self.final_loss_ = float(np.mean(losses[-200:])) if losses else float("nan")
        items = (step - saved["step"]) * cfg.batch_size
        return float(items / max(1e-9, self.clock() - run_start))

    def _optimizer(self, model: Any) -> Any:
        import torch

        cfg = self.config
        decay = [p for n, p in model.named_parameters() if not n.endswith("bias") and "LayerNorm" not in n]
        no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
        return torch.optim.AdamW(
            [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=cfg.learning_rate,
        )

    def _compiled(self, model: Any) -> Any:
        """``model`` itself, or compiled (shapes marked dynamic: batches differ in length)."""
        if not self.compile:
            return model
        import torch

        return torch.compile(model, dynamic=True)

    def _plan(self, per_epoch: int) -> Plan:
        """A new run's plan: the given one, the configured epochs, or (a budget) a placeholder that
        takes the timed steps at rate 0 until :meth:`_budget_plan` replaces it."""
        cfg = self.config
        if self.plan is not None:
            return self.plan
        if self.budget_minutes is None:
            return plan_for_steps(cfg.epochs * per_epoch, cfg.warmup_fraction, f"{cfg.epochs} epochs")
        timed = self._measure_warm(per_epoch) + _MEASURE_STEPS
        return Plan(timed + 1, 1, _MEASURING, measured_steps=timed)

    @staticmethod
    def _measure_warm(per_epoch: int) -> int:
        """Untimed steps before the timed ones (fewer when an epoch is short: tiny runs in tests)."""
        return min(_MEASURE_WARM, per_epoch)

    def _budget_plan(self, steps_taken: int, started: float, seconds_per_step: float) -> Plan:
        assert self.budget_minutes is not None
        left = self.budget_minutes * 60 - (self.clock() - started)
        return plan_for_budget(
            steps_taken, left, seconds_per_step, self.config.warmup_fraction, self.budget_minutes
        )

    def _checkpoint_path(self) -> Path:
        return self.out / CHECKPOINT_FILE

    def _save_checkpoint(
        self,
        model: Any,
        optimizer: Any,
        scheduler: Any,
        identity: dict[str, Any],
        plan: Plan,
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
                "plan": asdict(plan),
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

    def _load_checkpoint(self, model: Any, identity: dict[str, Any]) -> dict[str, Any]:
        """The checkpoint's state, restored into ``model`` and the RNG (its optimizer and scheduler
        states and plan returned); a fresh start when there is none or it is of other settings or data."""
        import torch

        fresh: dict[str, Any] = {
            "step": 0, "trained_seconds": 0.0, "losses": [], "plan": None, "optimizer": None, "scheduler": None,
        }  # fmt: skip
        path = self._checkpoint_path()
        if not path.is_file():
            self._logger().info("%s: no checkpoint in %s, starting at step 0", self.name, self.out)
            return fresh
        saved = torch.load(path, map_location="cpu", weights_only=False)
        if saved["identity"] != identity or "plan" not in saved:
            moved = path.replace(path.with_name(REPLACED_CHECKPOINT_FILE))
            self._logger().warning(
                "%s: the checkpoint in %s is of other settings or data; starting at step 0 (it is kept as %s)",
                self.name, self.out, moved.name,
            )  # fmt: skip
            return fresh
        model.load_state_dict(saved["model"])
        torch.set_rng_state(saved["torch_rng"])
        self._logger().info("%s: resuming from %s at step %d", self.name, path, saved["step"])
        return {
            "step": saved["step"],
            "trained_seconds": saved["trained_seconds"],
            "losses": list(saved["losses"]),
            "plan": Plan(**saved["plan"]),
            "optimizer": saved["optimizer"],
            "scheduler": saved["scheduler"],
        }

    def remove_checkpoint(self) -> None:
        """Delete the run's checkpoint once its model is saved (it is ~3x the model's size)."""
        self._checkpoint_path().unlink(missing_ok=True)
