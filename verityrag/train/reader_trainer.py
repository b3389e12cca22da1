"""Trains an extractive reader (start / end logits per token, ``[CLS]`` for "no answer").

The SQuAD 2.0 recipe of Devlin et al. (2019): each (question, context) pair is cut into
windows of at most ``max_length`` tokens (the context side, ``stride`` tokens of overlap, as
:class:`~verityrag.models.span_reader.SpanReader` serves it); a window holding the whole gold
answer is trained to point at its first and last token, every other window (an unanswerable
question, or a window of a long context without the answer) at ``[CLS]``. The loss is the
cross-entropy of the start and of the end position over the context tokens and ``[CLS]``.

Built for a long run on a small machine by :class:`~verityrag.train.resumable.ResumableTrainer`:
resumable from a checkpoint, CUDA or bfloat16 autocast where there is one (AVX-512 BF16 or AMX:
~1.7x here), batches of similar length.

Training only: imports torch at call time; serving needs onnxruntime alone.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from verityrag.errors import InvalidInputError
from verityrag.models.encoding import PairEncoder, load_tokenizer, model_inputs, window_starts
from verityrag.models.folder import TOKENIZER_FILE, TORCH_DIR
from verityrag.train.cross_encoder import random_config
from verityrag.train.resumable import ResumableTrainer, TrainingConfig

if TYPE_CHECKING:
    from pathlib import Path

    import torch

_MASKED = -1e4


@dataclass(frozen=True)
class ReaderTrainingConfig(TrainingConfig):
    """Everything that decides the trained weights (a checkpoint of another config is not resumed)."""

    learning_rate: float = 5e-5
    stride: int = 64
    max_question_tokens: int = 64

    _at_least_one = (*TrainingConfig._at_least_one, "max_question_tokens")


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


class ReaderTrainer(ResumableTrainer[ReaderTrainingConfig]):
    """Trains a ``*ForQuestionAnswering`` model; :meth:`fit` returns self, ``model_`` is the result.

    The settings are :class:`~verityrag.train.resumable.ResumableTrainer`'s (``out``: the run
    folder; ``max_minutes``: stop, checkpoint written; ``finished_`` says whether the planned
    epochs are done).
    """

    name = "reader training"

    def _default_config(self) -> ReaderTrainingConfig:
        return ReaderTrainingConfig()

    def encoder(self) -> PairEncoder:
        tokenizer = load_tokenizer(self._base() / TOKENIZER_FILE)
        return PairEncoder(tokenizer, self.config.max_length, "second", self.config.stride)

    def _build_model(self) -> Any:
        from transformers import AutoModelForQuestionAnswering

        if self.random_init_config is not None:
            config = random_config(self.random_init_config, num_labels=2)
            return AutoModelForQuestionAnswering.from_config(config)  # type: ignore[no-untyped-call]
        # An exported reader keeps its weights in torch/ beside tokenizer.json: training continues
        # from them; a Hugging Face folder holds both at its top.
        weights = self._base() / TORCH_DIR if (self._base() / TORCH_DIR).is_dir() else self._base()
        return AutoModelForQuestionAnswering.from_pretrained(str(weights), num_labels=2)

    def fit(self, examples: Sequence[dict[str, Any]], data_digest: str = "") -> ReaderTrainer:
        if not examples:
            raise InvalidInputError("examples", "is empty")
        started = self._seed()
        self.encoder_ = encoder = self.encoder()
        features, self.encoding_counts_ = encode_examples(encoder, examples, self.config.max_question_tokens)

        def batch_loss(model: Any, batch: list[int], device: str, bf16: bool) -> torch.Tensor:
            return self._step(model, [features[i] for i in batch], encoder.pad_id, device, bf16)

        self.windows_per_second_ = self._train(
            [len(f.input_ids) for f in features],
            {"windows": len(features)},
            data_digest,
            started,
            batch_loss,
            f"{len(examples)} examples, {len(features)} windows",
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

    def save(self, folder: Path) -> Path:
        """The trained weights (``torch/``) and the tokenizer, in a model folder."""
        folder.mkdir(parents=True, exist_ok=True)
        self.model_.save_pretrained(str(folder / TORCH_DIR))
        tokenizer = self._base() / TOKENIZER_FILE
        if tokenizer.resolve() != (folder / TOKENIZER_FILE).resolve():  # continued in place: it is there
            shutil.copyfile(tokenizer, folder / TOKENIZER_FILE)
        return folder
