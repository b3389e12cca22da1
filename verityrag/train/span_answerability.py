"""Answerability as extractive QA with a "no answer" option, served as one logit.

The binary answerability classifier (:class:`~verityrag.train.cross_encoder.CrossEncoderTrainer`)
learns from one bit per pair. SQuAD 2.0 systems learn more from the same data: a start/end
head over the evidence tokens, trained to point at the gold answer, with ``[CLS]`` standing
for "no answer" (Devlin et al., 2019). The model then has to *find* the answer to call a
question answerable, which is what SQuAD 2.0's adversarial unanswerables (questions one
word away from an answerable one) test.

:class:`SpanAnswerabilityModel` wraps a ``*ForQuestionAnswering`` model and returns one logit
per window, the SQuAD 2.0 null-score difference: the best span score (start + end logits
over evidence tokens, at most ``MAX_ANSWER_TOKENS`` long) minus the no-answer score
(start + end at ``[CLS]``). Exported with :func:`~verityrag.train.exporter.export_onnx`, it
is served unchanged by :class:`~verityrag.models.scorer.OnnxCrossEncoder` and
:class:`~verityrag.checks.answerability.LearnedAnswerability` (sigmoid of the logit,
max over windows). :class:`SpanAnswerabilityTrainer` trains it on the span cross-entropy
(answerable pairs point at their answer tokens, every other pair at ``[CLS]``) plus a BCE
on the logit itself, so the served score is trained directly too.

Training only: this module imports torch at import time (serving needs only onnxruntime).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from verityrag.models.encoding import EncodedWindow, model_inputs
from verityrag.models.folder import TORCH_DIR
from verityrag.models.span_reader import MAX_ANSWER_TOKENS, READER_OUTPUTS
from verityrag.train.cross_encoder import CrossEncoderTrainer, random_config, tensor_batch
from verityrag.train.exporter import export_onnx

_MASKED = -1e4  # a logit no real span reaches; finite so that ONNX and fp16 stay well defined


def evidence_mask(attention_mask: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
    """True at the second segment's tokens (the evidence), without its closing [SEP]."""
    positions = torch.ones_like(attention_mask).cumsum(1) - 1
    last = attention_mask.sum(1, keepdim=True) - 1  # the closing [SEP] of each row
    return (token_type_ids == 1) & (attention_mask == 1) & (positions < last)


def null_difference(
    start: torch.Tensor, end: torch.Tensor, evidence: torch.Tensor, max_answer_tokens: int = MAX_ANSWER_TOKENS
) -> torch.Tensor:
    """Best evidence span score minus the no-answer ([CLS]) score, one value per row."""
    positions = torch.ones_like(evidence, dtype=torch.long).cumsum(1) - 1  # (batch, n)
    width = positions[:, None, :] - positions[:, :, None]  # end - start
    valid = (width >= 0) & (width < max_answer_tokens) & evidence[:, :, None] & evidence[:, None, :]
    spans = (start[:, :, None] + end[:, None, :]).masked_fill(~valid, _MASKED)
    return spans.flatten(1).amax(dim=1) - (start[:, 0] + end[:, 0])


def qa_logits(
    qa: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """A transformers QA model's start and end logits per token (token types only if it takes them)."""
    out = qa(**model_inputs(qa, input_ids, attention_mask, token_type_ids))
    return out.start_logits, out.end_logits


class SpanAnswerabilityModel(torch.nn.Module):
    """A ``*ForQuestionAnswering`` model whose forward returns the null-score difference, shape (batch, 1)."""

    def __init__(self, qa: Any, max_answer_tokens: int = MAX_ANSWER_TOKENS) -> None:
        super().__init__()
        self.qa = qa
        self.max_answer_tokens = max_answer_tokens

    def span_logits(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Start and end logits per token, and the evidence mask."""
        start, end = qa_logits(self.qa, input_ids, attention_mask, token_type_ids)
        return start, end, evidence_mask(attention_mask, token_type_ids)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> torch.Tensor:
        start, end, evidence = self.span_logits(input_ids, attention_mask, token_type_ids)
        return null_difference(start, end, evidence, self.max_answer_tokens).unsqueeze(-1)

    def get_input_embeddings(self) -> torch.nn.Module:
        embeddings: torch.nn.Module = self.qa.get_input_embeddings()
        return embeddings

    def save_pretrained(self, path: str) -> None:
        """The inner QA model's files: a warm start reloads them, head included."""
        self.qa.save_pretrained(path)


class ReaderLogits(torch.nn.Module):
    """The QA model's start and end logits, (batch, sequence) each: what the served reader runs
    (:class:`~verityrag.models.span_reader.SpanReader`; export with ``outputs=READER_OUTPUTS``)."""

    def __init__(self, qa: Any) -> None:
        super().__init__()
        self.qa = qa

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return qa_logits(self.qa, input_ids, attention_mask, token_type_ids)


def export_reader(qa: Any, folder: Path) -> tuple[Path, Path | None]:
    """Write the reader export of a QA model (start / end logits per token) as model.onnx + model.int8.onnx."""
    return export_onnx(ReaderLogits(qa), folder, outputs=READER_OUTPUTS, per_token_outputs=True)


def find_answer(window: EncodedWindow, answers: Sequence[Sequence[int]]) -> tuple[int, int] | None:
    """(first, last) token positions of the first answer found inside the window's evidence segment."""
    ids, types = window.input_ids, window.token_type_ids
    for answer in answers:
        n = len(answer)
        for s in range(1, len(ids) - n):
            if types[s] == 1 and ids[s : s + n] == list(answer):
                return s, s + n - 1
    return None


class SpanAnswerabilityTrainer(CrossEncoderTrainer):
    """Trains a :class:`SpanAnswerabilityModel`; same options, model folder and export as the base trainer.

    Use :meth:`fit_with_answers`: each answerable pair's gold answer texts give its span
    target (tokenised alone, then looked up among the window's evidence tokens; WordPiece
    splits on spaces and punctuation, so a word-aligned answer tokenises the same alone
    as in context). An answerable pair whose answer is not found there keeps only the BCE
    term (counted in ``spans_missing_``). ``warm_start`` may be a classifier folder (the
    encoder is reused, the span head starts fresh) or a span folder (everything reused).
    """

    def __init__(self, *args: Any, span_weight: float = 1.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.span_weight = span_weight
        self._answer_ids: list[list[list[int]]] = []

    def _build_model(self) -> SpanAnswerabilityModel:
        from transformers import AutoModelForQuestionAnswering

        if self.random_init_config is not None:
            config = random_config(self.random_init_config, num_labels=2)
            qa = AutoModelForQuestionAnswering.from_config(config)  # type: ignore[no-untyped-call]
            return SpanAnswerabilityModel(qa)
        weights = self.warm_start / TORCH_DIR if self.warm_start is not None else self._base()
        # num_labels=2 (start, end) also when the warm start is a one-logit classifier folder.
        return SpanAnswerabilityModel(
            AutoModelForQuestionAnswering.from_pretrained(str(weights), num_labels=2)
        )

    def fit_with_answers(
        self, pairs: Sequence[tuple[str, str]], labels: Sequence[float], answers: Sequence[Sequence[str]]
    ) -> SpanAnswerabilityTrainer:
        """``answers[i]``: the gold answer texts of pair ``i`` (ignored unless it is labelled answerable)."""
        tokenizer = self.encoder().tokenizer
        self._answer_ids = [
            [e.ids for e in tokenizer.encode_batch(list(texts), add_special_tokens=False) if e.ids]
            if texts
            else []
            for texts in answers
        ]
        self.spans_found_ = 0
        self.spans_missing_ = 0
        self.fit(pairs, labels)
        return self

    def _target(self, window: EncodedWindow, label: float) -> tuple[int, int] | None:
        if label < 0.5:
            return 0, 0  # no answer: point at [CLS]
        answers = self._answer_ids[window.pair_index] if window.pair_index < len(self._answer_ids) else []
        return find_answer(window, answers)

    def _batch_loss(
        self, model: Any, windows: Sequence[EncodedWindow], labels: Sequence[float]
    ) -> torch.Tensor:
        start, end, evidence = model.span_logits(*tensor_batch(windows, self.encoder_.pad_id))
        difference = null_difference(start, end, evidence, model.max_answer_tokens)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(difference, torch.tensor(list(labels)))
        targets = [self._target(w, y) for w, y in zip(windows, labels, strict=True)]
        if hasattr(self, "spans_found_"):
            answerable = [t for t, y in zip(targets, labels, strict=True) if y >= 0.5]
            self.spans_found_ += sum(t is not None for t in answerable)
            self.spans_missing_ += sum(t is None for t in answerable)
        rows = [i for i, t in enumerate(targets) if t is not None]
        if rows and self.span_weight > 0:
            allowed = evidence.clone()
            allowed[:, 0] = True  # [CLS]: the no-answer position
            picked = torch.tensor(rows)
            first = torch.tensor([targets[i][0] for i in rows])  # type: ignore[index]
            last = torch.tensor([targets[i][1] for i in rows])  # type: ignore[index]
            span_loss = (
                torch.nn.functional.cross_entropy(start.masked_fill(~allowed, _MASKED)[picked], first)
                + torch.nn.functional.cross_entropy(end.masked_fill(~allowed, _MASKED)[picked], last)
            ) / 2
            loss = loss + self.span_weight * span_loss
        return loss
