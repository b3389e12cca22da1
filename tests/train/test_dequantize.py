"""The shipped int8 reader read back into torch weights, to train it further."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verityrag.models.folder import ONNX_INT8_FILE, SHIPPED_READER_DIR, TOKENIZER_FILE, TORCH_DIR
from verityrag.train.dequantize import dequantized_state


@pytest.mark.unit
def test_every_dense_layer_is_named_and_laid_out_as_torch_keeps_it() -> None:
    state = dequantized_state(SHIPPED_READER_DIR / ONNX_INT8_FILE)
    assert state["bert.encoder.layer.0.attention.self.query.weight"].shape == (384, 384)
    assert state["bert.encoder.layer.5.intermediate.dense.weight"].shape == (1536, 384)
    assert state["bert.encoder.layer.5.output.dense.weight"].shape == (384, 1536)
    assert state["qa_outputs.weight"].shape == (2, 384)
    assert state["bert.embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert not any(name.endswith(("_scale", "_zero_point", "_quantized")) for name in state)


@pytest.mark.integration
def test_the_folder_reads_as_the_int8_reader_does(tmp_path: Path) -> None:
    from verityrag.train.cross_encoder import minilm_path
    from verityrag.train.dequantize import write_folder

    report = write_folder(SHIPPED_READER_DIR, tmp_path / "reader", minilm_path())
    assert (tmp_path / "reader" / TORCH_DIR / "config.json").is_file()
    assert (tmp_path / "reader" / TOKENIZER_FILE).is_file()
    # the int8 model's own rounding of activations, not a misplaced matrix (which gives gaps of ~10)
    assert report["max_abs_start_logit_gap_to_int8"] < 1.0
    assert json.loads((tmp_path / "reader" / "dequantized.json").read_text()) == report
