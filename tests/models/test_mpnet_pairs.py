"""The cross-encoder code with an MPNet-family model (RoBERTa-style pairs, no token types).

all-mpnet-base-v2 is the stronger base the answerability gate is waiting for (ROADMAP). It
pairs ``<s> a </s></s> b </s>`` and its forward takes no token types. A tiny random MPNet
with a word-level ``<s>``/``</s>`` tokenizer built here must train, export and serve through
the same code as MiniLM: the classifier, the span (extractive-QA) model and its reader.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import tokenizers
from _tiny_bert import COLOURS, FILLER, TINY_TRAINING, colour_pairs, write_tiny_metadata
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from tokenizers.processors import RobertaProcessing

from verityrag.errors import InvalidInputError
from verityrag.models import OnnxCrossEncoder, PairEncoder
from verityrag.models.folder import ONNX_FP32_FILE, TOKENIZER_FILE
from verityrag.models.span_reader import SpanReader
from verityrag.train.cross_encoder import CrossEncoderTrainer, keep_first_layers, random_config
from verityrag.train.exporter import export_onnx
from verityrag.train.span_answerability import SpanAnswerabilityModel, SpanAnswerabilityTrainer, export_reader

pytestmark = pytest.mark.integration

SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # MPNet's ids 0-3
WORDS = sorted({*COLOURS, *FILLER, "car", "what", "colour", "is", "there", "a"})


def _tokenizer(template: bool = True) -> tokenizers.Tokenizer:
    # MPNet's real vocabulary also holds [CLS] / [SEP] / [PAD] as plain tokens: so does this one,
    # and the encoder must still read the pair template, not look tokens up by name.
    vocab = {token: i for i, token in enumerate([*SPECIALS, *WORDS, "[CLS]", "[SEP]", "[PAD]"])}
    tok = tokenizers.Tokenizer(WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = Whitespace()
    if template:
        tok.post_processor = RobertaProcessing(("</s>", 2), ("<s>", 0))
    return tok


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny_mpnet_base")
    _tokenizer().save(str(folder / TOKENIZER_FILE))
    return folder


TINY_MPNET = {
    "model_type": "mpnet",
    "vocab_size": len(SPECIALS) + len(WORDS) + 3,
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 130,  # positions start after MPNet's padding id (1)
}


def _training(base: Path) -> dict[str, object]:
    return {**TINY_TRAINING, "random_init_config": TINY_MPNET, "base_model": base}


def test_roberta_style_pairs_have_four_special_tokens_and_segment_types(base: Path) -> None:
    encoder = PairEncoder(_tokenizer(), max_length=64)
    (window,) = encoder.windows([("what colour", "a red car")])
    tokens = [encoder.tokenizer.id_to_token(i) for i in window.input_ids]
    assert tokens == ["<s>", "what", "colour", "</s>", "</s>", "a", "red", "car", "</s>"]
    assert window.token_type_ids == [0] * 5 + [1] * 4
    assert encoder.pad_id == 1
    assert encoder.short_side_budget() == 64 - 4 - 32


def test_a_tokenizer_without_a_pair_template_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="pair template"):
        PairEncoder(_tokenizer(template=False))


def test_tiny_mpnet_classifier_trains_exports_and_serves(base: Path, tmp_path: Path) -> None:
    pairs, labels, _ = colour_pairs(320, seed=1)
    trainer = CrossEncoderTrainer(**_training(base)).fit(pairs, labels)
    trainer.save(tmp_path)
    export_onnx(trainer.model_, tmp_path)
    write_tiny_metadata(tmp_path, "tiny-mpnet", 320)

    test_pairs, test_labels, _ = colour_pairs(100, seed=2)
    scores = OnnxCrossEncoder(tmp_path).score_pairs(test_pairs)
    accuracy = np.mean([(s >= 0.5) == (y == 1.0) for s, y in zip(scores, test_labels, strict=True)])
    assert accuracy >= 0.8
    torch_logits = np.array([x[0] for x in trainer.predict_logits(test_pairs[:40])])
    fp32 = OnnxCrossEncoder(tmp_path, onnx_file=ONNX_FP32_FILE).window_logits(test_pairs[:40])
    assert np.allclose([x[0] for x in fp32], torch_logits, atol=1e-4)


def test_tiny_mpnet_reader_reads_the_colour(base: Path, tmp_path: Path) -> None:
    pairs, labels, answers = colour_pairs(320, seed=1)
    trainer = SpanAnswerabilityTrainer(**_training(base)).fit_with_answers(pairs, labels, answers)
    assert trainer.spans_missing_ == 0  # the gold colour was found in every answerable window
    export_reader(trainer.model_.qa, tmp_path)
    (tmp_path / TOKENIZER_FILE).write_bytes((base / TOKENIZER_FILE).read_bytes())
    write_tiny_metadata(tmp_path, "tiny-mpnet-reader", 320)

    reader = SpanReader(tmp_path)
    found = 0
    for colour in COLOURS:
        best = reader.top_spans("what colour is the car", f"the old mill a {colour} car near the bridge", k=3)
        found += bool(best) and best[0].text == colour
    assert found >= len(COLOURS) - 1


def test_keep_first_layers_keeps_the_lower_layers_weights() -> None:
    from transformers import AutoModelForQuestionAnswering, AutoModelForSequenceClassification

    model = AutoModelForSequenceClassification.from_config(random_config(TINY_MPNET, num_hidden_layers=3))
    first, second = (layer.state_dict() for layer in model.base_model.encoder.layer[:2])
    keep_first_layers(model, 2)
    assert len(model.base_model.encoder.layer) == 2
    assert model.config.num_hidden_layers == 2
    for kept, original in zip(model.base_model.encoder.layer, (first, second), strict=True):
        assert all(kept.state_dict()[k].equal(v) for k, v in original.items())
    for n in (0, 3):
        with pytest.raises(InvalidInputError, match="keep_layers"):
            keep_first_layers(model, n)
    span = SpanAnswerabilityModel(
        AutoModelForQuestionAnswering.from_config(random_config(TINY_MPNET, num_labels=2))
    )
    keep_first_layers(span, 1)  # the span model's transformers model is its ``qa``
    assert len(span.qa.base_model.encoder.layer) == 1


def test_a_model_cut_to_fewer_layers_trains_exports_and_reloads(base: Path, tmp_path: Path) -> None:
    pairs, labels, _ = colour_pairs(320, seed=1)
    full = CrossEncoderTrainer(**_training(base)).fit(pairs, labels).save(tmp_path / "full")
    settings = {**_training(base), "random_init_config": None, "epochs": 2}
    cut = CrossEncoderTrainer(**settings, warm_start=full, keep_layers=1).fit(pairs, labels)
    folder = cut.save(tmp_path / "cut")
    export_onnx(cut.model_, folder)
    write_tiny_metadata(folder, "tiny-mpnet-1-layer", 320)

    config = json.loads((folder / "torch" / "config.json").read_text())
    assert config["num_hidden_layers"] == 1
    test_pairs, _, _ = colour_pairs(40, seed=2)
    torch_logits = [x[0] for x in cut.predict_logits(test_pairs)]
    fp32 = OnnxCrossEncoder(folder, onnx_file=ONNX_FP32_FILE).window_logits(test_pairs)
    assert np.allclose([x[0] for x in fp32], torch_logits, atol=1e-4)
