"""Tiny trained models shared by the cross-encoder tests: a span (extractive-QA) model and its reader export."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _tiny_bert import TINY_TRAINING, colour_pairs, write_tiny_metadata

from verityrag.models.folder import TOKENIZER_FILE
from verityrag.train.exporter import export_onnx
from verityrag.train.span_answerability import SpanAnswerabilityModel, SpanAnswerabilityTrainer, export_reader


@pytest.fixture(scope="session")
def span_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[SpanAnswerabilityTrainer, Path]:
    """A tiny span model trained on :func:`colour_pairs` (seconds), exported as a one-logit folder."""
    pairs, labels, answers = colour_pairs(320, seed=1)
    trainer = SpanAnswerabilityTrainer(**TINY_TRAINING).fit_with_answers(pairs, labels, answers)
    folder = tmp_path_factory.mktemp("tiny_span")
    trainer.save(folder)
    export_onnx(trainer.model_, folder)
    write_tiny_metadata(folder, "tiny-span", 320)
    return trainer, folder


@pytest.fixture(scope="session")
def reader_folder(
    span_model: tuple[SpanAnswerabilityTrainer, Path], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The same model exported as a reader (start / end logits per token)."""
    trainer, span_folder = span_model
    assert isinstance(trainer.model_, SpanAnswerabilityModel)
    folder = tmp_path_factory.mktemp("tiny_reader")
    export_reader(trainer.model_.qa, folder)
    shutil.copy(span_folder / TOKENIZER_FILE, folder / TOKENIZER_FILE)
    write_tiny_metadata(folder, "tiny-reader", 320)
    return folder
