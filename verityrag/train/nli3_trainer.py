"""Trains a three-way NLI cross-encoder (entailment / neutral / contradiction), resumably.

A ``*ForSequenceClassification`` head of three classes on an encoder (all-MiniLM-L6-v2 by
default), cross-entropy over (premise, hypothesis) pairs encoded by the base's own tokenizer
(the premise is truncated first, as :class:`~verityrag.verify.nli_verifier.HFSequenceClassificationScorer`
serves it). The saved folder is a plain Hugging Face model whose ``id2label`` names the
classes, so the scorer reads "entailment" as the support score and windows long evidence.

Built like :class:`~verityrag.train.reader_trainer.ReaderTrainer` for long runs on a small machine,
by :class:`~verityrag.train.resumable.ResumableTrainer`: resumable from a checkpoint (the same
command continues where it stopped, on the same batches, to the same weights), CUDA or bfloat16
autocast where there is one, batches of similar length.

Training only: imports torch at call time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verityrag.errors import InvalidInputError, NotFittedError
from verityrag.train.cross_encoder import random_config
from verityrag.train.resumable import ResumableTrainer, TrainingConfig

ID2LABEL = {0: "entailment", 1: "neutral", 2: "contradiction"}


@dataclass(frozen=True)
class NLITrainingConfig(TrainingConfig):
    """Everything that decides the trained weights (a checkpoint of another config is not resumed)."""


class NLITrainer(ResumableTrainer[NLITrainingConfig]):
    """Trains the three-way head; :meth:`fit` returns self, ``model_`` is the result.

    The settings are :class:`~verityrag.train.resumable.ResumableTrainer`'s (``out``: the run
    folder; ``base_model``: a Hugging Face folder with a tokenizer; ``max_minutes``: stop,
    checkpoint written; ``finished_`` says whether the planned epochs are done).
    """

    name = "NLI training"

    def _default_config(self) -> NLITrainingConfig:
        return NLITrainingConfig()

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

        if not rows:
            raise InvalidInputError("rows", "is empty")
        bad = [r["label"] for r in rows if r["label"] not in ID2LABEL]
        if bad:
            raise InvalidInputError("rows", f"labels must be 0, 1 or 2 ({ID2LABEL}); got {bad[:3]}")
        started = self._seed()
        features = self.encode(rows)
        labels = [int(r["label"]) for r in rows]

        def batch_loss(model: Any, batch: list[int], device: str, bf16: bool) -> Any:
            inputs = self._tensors([features[i] for i in batch], device)
            target = torch.tensor([labels[i] for i in batch], device=device)
            with torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16, enabled=bf16):
                logits = model(**inputs).logits
            return torch.nn.functional.cross_entropy(logits.float(), target)

        self.pairs_per_second_ = self._train(
            [len(f["input_ids"]) for f in features],
            {"pairs": len(rows)},
            data_digest,
            started,
            batch_loss,
            f"{len(rows)} pairs",
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
