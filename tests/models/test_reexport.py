"""python -m verityrag.train export-onnx rebuilds a folder's ONNX files from its torch/ weights, any family."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _tiny_bert import TINY_TRAINING, colour_pairs, write_tiny_metadata
from test_mpnet_pairs import TINY_MPNET, _tokenizer

from verityrag.models import OnnxCrossEncoder
from verityrag.models.folder import ONNX_FP32_FILE, TOKENIZER_FILE
from verityrag.train import export_onnx
from verityrag.train.cross_encoder import CrossEncoderTrainer
from verityrag.train.span_answerability import SpanAnswerabilityTrainer

pytestmark = pytest.mark.integration


def _trained(cls: type[CrossEncoderTrainer], tmp_path: Path) -> tuple[CrossEncoderTrainer, Path]:
    base, folder = tmp_path / "base", tmp_path / "model"
    base.mkdir()
    _tokenizer().save(str(base / TOKENIZER_FILE))
    pairs, labels, answers = colour_pairs(64, seed=1)
    options = {**TINY_TRAINING, "epochs": 1, "random_init_config": TINY_MPNET, "base_model": base}
    trainer = cls(**options)
    if isinstance(trainer, SpanAnswerabilityTrainer):
        trainer.fit_with_answers(pairs, labels, answers)
    else:
        trainer.fit(pairs, labels)
    trainer.save(folder)
    write_tiny_metadata(folder, "tiny-mpnet", 64)
    return trainer, folder


def test_guard_export_onnx_mpnet_folder_matches_torch(tmp_path: Path) -> None:
    trainer, folder = _trained(CrossEncoderTrainer, tmp_path)
    assert export_onnx.main([str(folder)]) == 0
    pairs = colour_pairs(16, seed=2)[0]
    torch_logits = [x[0] for x in trainer.predict_logits(pairs)]
    onnx = [x[0] for x in OnnxCrossEncoder(folder, onnx_file=ONNX_FP32_FILE).window_logits(pairs)]
    assert np.allclose(onnx, torch_logits, atol=1e-4)


def test_guard_export_onnx_span_folder_is_refused_naming_its_builder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, folder = _trained(SpanAnswerabilityTrainer, tmp_path)
    assert export_onnx.main([str(folder)]) == 2
    assert "ForQuestionAnswering" in capsys.readouterr().err
    assert not (folder / ONNX_FP32_FILE).exists()
