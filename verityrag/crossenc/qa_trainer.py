"""Trains an extractive reader (start / end logits per token, ``[CLS]`` for "no answer").

The SQuAD 2.0 recipe of Devlin et al. (2019): each (question, context) pair is cut into
windows of at most ``max_length`` tokens (the context side, ``stride`` tokens of overlap, as
:class:`~verityrag.crossenc.reader.SpanReader` serves it); a window holding the whole gold
answer is trained to point at its first and last token, every other window (an unanswerable
question, or a window of a long context without the answer) at ``[CLS]``. The loss is the
cross-entropy of the start and of the end position over the context tokens and ``[CLS]``.

Built for a long run on a small machine:

- **Resumable.** A checkpoint (weights, optimizer, schedule, position in the epoch) is
  written every ``checkpoint_minutes`` and when ``max_minutes`` runs out; running the same
  command again continues where it stopped, on the same batches, to the same result.
- **Fast on what is there.** CUDA when a GPU is present; bfloat16 autocast where the CPU
  supports it (AVX-512 BF16 or AMX: ~1.7x here) or on a GPU; batches of similar length
  (sorted within shuffled groups of 50 batches), so little of a batch is padding.

Training only: imports torch at call time; serving needs onnxruntime alone.
"""

from __future__ import annotations

import logging
import random
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from verityrag.crossenc.encoding import PairEncoder, load_tokenizer, model_inputs, window_starts
from verityrag.crossenc.model_folder import TOKENIZER_FILE, TORCH_DIR
from verityrag.crossenc.trainer import minilm_path, random_config
from verityrag.errors import InvalidInputError

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

Precision = Literal["auto", "fp32", "bf16"]
CHECKPOINT_FILE = "checkpoint.pt"
_MASKED = -1e4
#: Batches sorted by length together (then cut into batches whose order is shuffled).
_SORT_GROUP = 50


@dataclass(frozen=True)
class ReaderTrainingConfig:
    """Everything that decides the trained weights (a checkpoint of another config is not resumed)."""

    max_length: int = 256
    stride: int = 64
    max_question_tokens: int = 64
    epochs: int = 2
    batch_size: int = 32
    learning_rate: float = 5e-5
    warmup_fraction: float = 0.06
    weight_decay: float = 0.01
    seed: int = 13

    def __post_init__(self) -> None:
        for name in ("max_length", "epochs", "batch_size", "max_question_tokens"):
            if getattr(self, name) < 1:
                raise InvalidInputError(name, f"must be >= 1, got {getattr(self, name)}")
        if not 0 < self.learning_rate < 1:
            raise InvalidInputError("learning_rate", f"must be in (0, 1), got {self.learning_rate}")
        if not 0 <= self.warmup_fraction < 1:
            raise InvalidInputError("warmup_fraction", f"must be in [0, 1), got {self.warmup_fraction}")


@dataclass(frozen=True, slots=True)
class Feature:
    """One training window: token ids, where the context starts, and the target positions."""

    input_ids: np.ndarray  # int32
    context_offset: int
    start: int
    end: int


def answer_token_span(
    offsets: Sequence[tuple[int, int]], first_token: int, n_tokens: int, answer_start: int, answer_end: int
) -> tuple[int, int] | None:
    """Token positions (within the window ``first_token .. first_token + n_tokens``) of the first and
    last token of the character span ``answer_start:answer_end``; None if it is not wholly inside."""
    first = last = None
    for t in range(first_token, first_token + n_tokens):
        s, e = offsets[t]
        if e <= s:
            continue
        if first is None and e > answer_start:
            if s >= answer_end:
                return None
            first = t
        if s < answer_end:
            last = t
        else:
            break
    if first is None or last is None or last < first:
        return None
    if first == first_token and offsets[first][0] > answer_start:
        return None  # the answer begins before this window
    if last == first_token + n_tokens - 1 and offsets[last][1] < answer_end:
        return None  # the answer runs past this window
    return first - first_token, last - first_token


def encode_examples(
    encoder: PairEncoder, examples: Sequence[dict[str, Any]], max_question_tokens: int
) -> tuple[list[Feature], dict[str, int]]:
    """Every window of every example with its target; counts of what happened on the way."""
    tokenizer = encoder.tokenizer
    questions = tokenizer.encode_batch([e["question"] for e in examples], add_special_tokens=False)
    contexts: dict[str, Any] = {}
    unique = list(dict.fromkeys(e["context"] for e in examples))
    for text, enc in zip(unique, tokenizer.encode_batch(unique, add_special_tokens=False), strict=True):
        contexts[text] = enc
    features: list[Feature] = []
    counts = {"windows": 0, "answer_windows": 0, "answers_not_found": 0, "questions_cut": 0}
    for ex, q in zip(examples, questions, strict=True):
        q_ids = q.ids[:max_question_tokens]
        counts["questions_cut"] += len(q.ids) > max_question_tokens
        ctx = contexts[ex["context"]]
        budget = encoder.window_budget(len(q_ids), "question")
        offset = encoder.second_offset(len(q_ids))
        answer = None
        if ex.get("answer_text") is not None:
            a = int(ex["answer_start"])
            answer = (a, a + len(ex["answer_text"]))
        found = False
        for first in window_starts(len(ctx.ids), budget, encoder.stride):
            piece = ctx.ids[first : first + budget]
            window = encoder.window(0, q_ids, piece)
            span = answer_token_span(ctx.offsets, first, len(piece), *answer) if answer else None
            start, end = (span[0] + offset, span[1] + offset) if span else (0, 0)
            found |= span is not None
            features.append(Feature(np.asarray(window.input_ids, dtype=np.int32), offset, start, end))
        counts["answer_windows"] += found
        counts["answers_not_found"] += answer is not None and not found
    counts["windows"] = len(features)
    return features, counts


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


class ReaderTrainer:
    """Trains a ``*ForQuestionAnswering`` model; :meth:`fit` returns self, ``model_`` is the result.

    ``out``: the run folder (its checkpoint lives there). ``base_model``: a Hugging Face folder
    (None: all-MiniLM-L6-v2). ``random_init_config``: a random model of these config fields (tests).
    ``max_minutes``: stop (checkpoint written) when this run has trained that long;
    ``finished_`` says whether the planned epochs are done.
    """

    def __init__(
        self,
        out: Path,
        config: ReaderTrainingConfig | None = None,
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
        self.config = config or ReaderTrainingConfig()
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

    def encoder(self) -> PairEncoder:
        tokenizer = load_tokenizer(self._base() / TOKENIZER_FILE)
        return PairEncoder(tokenizer, self.config.max_length, "second", self.config.stride)

    def _build_model(self) -> Any:
        from transformers import AutoModelForQuestionAnswering

        if self.random_init_config is not None:
            config = random_config(self.random_init_config, num_labels=2)
            return AutoModelForQuestionAnswering.from_config(config)  # type: ignore[no-untyped-call]
        return AutoModelForQuestionAnswering.from_pretrained(str(self._base()), num_labels=2)

    def _device_and_precision(self) -> tuple[str, bool]:
        import torch

        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if self.precision == "auto":
            bf16 = torch.cuda.is_bf16_supported() if device == "cuda" else cpu_supports_bf16()
        else:
            bf16 = self.precision == "bf16"
        return device, bf16

    def fit(self, examples: Sequence[dict[str, Any]], data_digest: str = "") -> ReaderTrainer:
        import torch
        from tqdm.auto import tqdm

        if not examples:
            raise InvalidInputError("examples", "is empty")
        cfg = self.config
        torch.set_num_threads(self.threads)
        torch.manual_seed(cfg.seed)
        t0 = time.perf_counter()
        self.encoder_ = encoder = self.encoder()
        features, self.encoding_counts_ = encode_examples(encoder, examples, cfg.max_question_tokens)
        lengths = [len(f.input_ids) for f in features]
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
        identity = {"config": asdict(cfg), "data_digest": data_digest, "windows": len(features)}
        state = self._load_checkpoint(model, optimizer, scheduler, identity)
        step, trained_seconds, losses = state["step"], state["trained_seconds"], state["losses"]
        logger.info(
            "reader training: %d examples, %d windows, %d steps (%d per epoch), device %s, bf16 %s, "
            "starting at step %d",
            len(examples), len(features), total, per_epoch, device, bf16, step,
        )  # fmt: skip
        model.train()
        run_start = time.perf_counter()
        last_checkpoint = run_start
        bar = tqdm(total=total, initial=step, desc="train reader", disable=not self.progress, unit="batch")
        self.stopped_early_ = False
        batches: tuple[int, list[list[int]]] = (-1, [])
        while step < total:
            epoch, index = divmod(step, per_epoch)
            if batches[0] != epoch:  # drawn from (seed, epoch) alone: a resumed run gets the same ones
                batches = (epoch, epoch_batches(lengths, cfg.batch_size, cfg.seed, epoch))
            batch = batches[1][index]
            loss: Any = self._step(model, [features[i] for i in batch], encoder.pad_id, device, bf16)
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
        self.windows_per_second_ = (
            (step - state["step"]) * cfg.batch_size / max(1e-9, time.perf_counter() - run_start)
        )
        return self

    def _step(
        self, model: Any, batch: Sequence[Feature], pad_id: int, device: str, bf16: bool
    ) -> torch.Tensor:
        import torch

        width = max(len(f.input_ids) for f in batch)
        ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        types = torch.zeros((len(batch), width), dtype=torch.long)
        allowed = torch.zeros((len(batch), width), dtype=torch.bool)
        for row, f in enumerate(batch):
            n = len(f.input_ids)
            ids[row, :n] = torch.from_numpy(f.input_ids.astype(np.int64))
            mask[row, :n] = 1
            types[row, f.context_offset : n] = 1
            allowed[row, f.context_offset : n - 1] = True  # the context, not its closing [SEP]
            allowed[row, 0] = True  # [CLS]: no answer
        starts = torch.tensor([f.start for f in batch])
        ends = torch.tensor([f.end for f in batch])
        ids, mask, types, allowed = ids.to(device), mask.to(device), types.to(device), allowed.to(device)
        with torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=bf16):
            out = model(**model_inputs(model, ids, mask, types))
        start = out.start_logits.float().masked_fill(~allowed, _MASKED)
        end = out.end_logits.float().masked_fill(~allowed, _MASKED)
        ce = torch.nn.functional.cross_entropy
        loss: torch.Tensor = (ce(start, starts.to(device)) + ce(end, ends.to(device))) / 2
        return loss

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
        logger.info("reader training: checkpoint at step %d written to %s", step, self._checkpoint_path())

    def _load_checkpoint(
        self, model: Any, optimizer: Any, scheduler: Any, identity: dict[str, Any]
    ) -> dict[str, Any]:
        import torch

        path = self._checkpoint_path()
        fresh = {"step": 0, "trained_seconds": 0.0, "losses": []}
        if not path.is_file():
            return fresh
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
        if "torch_rng" in saved:
            torch.set_rng_state(saved["torch_rng"])
        logger.info("reader training: resuming from %s at step %d", path, saved["step"])
        return {
            "step": saved["step"],
            "trained_seconds": saved["trained_seconds"],
            "losses": list(saved["losses"]),
        }

    def save(self, folder: Path) -> Path:
        """The trained weights (``torch/``) and the tokenizer, in a model folder."""
        folder.mkdir(parents=True, exist_ok=True)
        self.model_.save_pretrained(str(folder / TORCH_DIR))
        shutil.copyfile(self._base() / TOKENIZER_FILE, folder / TOKENIZER_FILE)
        return folder

    def remove_checkpoint(self) -> None:
        """Delete the run's checkpoint once its model is saved (it is ~3x the model's size)."""
        self._checkpoint_path().unlink(missing_ok=True)
