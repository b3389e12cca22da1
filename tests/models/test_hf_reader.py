"""Readers by name: the shipped one, a reader folder, a Hugging Face QA model folder (torch).

The Hugging Face path is tested on a tiny QA model written to a folder in the test (the real
MiniLM tokenizer, random weights): loading, windowing and offsets are the production ones, and
its scores agree with the same weights exported and served with onnxruntime.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from _tiny_bert import TINY_BERT, write_tiny_metadata

from verityrag.errors import ModelLoadError
from verityrag.models import hf_reader
from verityrag.models.folder import ONNX_FP32_FILE, TOKENIZER_FILE, ModelMetadata
from verityrag.models.hf_reader import HFSpanReader, open_reader
from verityrag.models.span_reader import SpanReader
from verityrag.train.cross_encoder import minilm_path, random_config
from verityrag.train.span_answerability import export_reader

pytestmark = pytest.mark.integration

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
QUESTION = "what colour is the car"
EVIDENCE = "the old mill stands near the bridge, and a blue car waits by the town square"


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Hugging Face QA model folder: tiny random BERT weights and the MiniLM tokenizer."""
    import torch
    from transformers import AutoModelForQuestionAnswering

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("hf_qa")
    model = AutoModelForQuestionAnswering.from_config(random_config(TINY_BERT, num_labels=2))
    model.save_pretrained(str(folder))
    for name in TOKENIZER_FILES:
        if (minilm_path() / name).is_file():
            shutil.copyfile(minilm_path() / name, folder / name)
    return folder


def test_open_reader_picks_the_kind_of_reader_by_what_it_is_given(hf_folder: Path, tmp_path: Path) -> None:
    assert isinstance(open_reader(""), SpanReader)
    assert open_reader("").folder == hf_reader.BUNDLED_READER
    write_tiny_metadata(tmp_path, "tiny-reader", 1)
    assert isinstance(open_reader(tmp_path), SpanReader)
    assert isinstance(open_reader(hf_folder), HFSpanReader)
    assert isinstance(open_reader("deepset/minilm-uncased-squad2"), HFSpanReader)


def test_a_hugging_face_reader_returns_spans_that_are_slices_of_the_evidence(hf_folder: Path) -> None:
    reader = HFSpanReader(str(hf_folder), max_length=32, stride=8)
    (result,) = reader.read_batch([(QUESTION, EVIDENCE)], k=5)
    assert result.spans
    for span in result.spans:
        assert EVIDENCE[span.start : span.end] == span.text
    assert result.null_score != float("inf")  # the long evidence was read in several windows
    assert reader.count_tokens("a blue car") == 3


def test_the_same_weights_score_alike_with_torch_and_onnx(hf_folder: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForQuestionAnswering

    model = AutoModelForQuestionAnswering.from_pretrained(str(hf_folder)).eval()
    export_reader(model, tmp_path)
    shutil.copyfile(hf_folder / TOKENIZER_FILE, tmp_path / TOKENIZER_FILE)
    write_tiny_metadata(tmp_path, "tiny-reader", 1)  # window 64, stride 16
    meta = ModelMetadata.read(tmp_path)
    meta.onnx_file = ONNX_FP32_FILE  # the fp32 export: int8 weights move scores by ~1e-3
    meta.write(tmp_path)
    onnx = SpanReader(tmp_path, batch_size=4).read_batch([(QUESTION, EVIDENCE)], k=3)[0]
    torch_reader = HFSpanReader(str(hf_folder), max_length=64, stride=16)
    hf = torch_reader.read_batch([(QUESTION, EVIDENCE)], k=3)[0]
    # One window holds it all: the same best span and scores, from either runtime.
    assert onnx.best is not None
    assert hf.best is not None
    assert (hf.best.start, hf.best.end) == (onnx.best.start, onnx.best.end)
    assert hf.best.score == pytest.approx(onnx.best.score, abs=1e-3)
    assert hf.null_score == pytest.approx(onnx.null_score, abs=1e-3)


def test_a_model_that_cannot_load_is_an_error_naming_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelLoadError, match="no-such-model"):
        HFSpanReader(str(missing)).warm_up()
