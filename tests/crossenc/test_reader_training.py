"""ReaderTrainer: span targets, resumable training, and the ONNX export agreeing with torch (tiny model)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
import torch
from _tiny_bert import COLOURS, FILLER, TINY_BERT, write_tiny_metadata

from verityrag.crossenc.encoding import PairEncoder, load_tokenizer
from verityrag.crossenc.model_folder import TOKENIZER_FILE
from verityrag.crossenc.qa_trainer import (
    ReaderTrainer,
    ReaderTrainingConfig,
    answer_token_span,
    encode_examples,
)
from verityrag.crossenc.reader import SpanReader
from verityrag.crossenc.resumable import CHECKPOINT_FILE, epoch_batches
from verityrag.crossenc.trainer import minilm_path
from verityrag.train.reader import export

pytestmark = pytest.mark.integration


def colour_examples(n: int, seed: int) -> list[dict[str, Any]]:
    """The car's colour when the evidence gives it (its character offset), else no answer."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        present = rng.random() < 0.6
        colour = rng.choice(COLOURS)
        words = rng.sample(FILLER, 6)
        words.insert(rng.randrange(len(words) + 1), f"{colour} car" if present else "car")
        context = " ".join(words)
        start = context.index(f"{colour} car") if present else None
        out.append(
            {
                "question": "what colour is the car",
                "context": context,
                "answer_text": colour if present else None,
                "answer_start": start,
            }
        )
    return out


CONFIG = ReaderTrainingConfig(max_length=64, stride=16, epochs=3, batch_size=16, learning_rate=3e-3)


def _trainer(out: Path, **kwargs: Any) -> ReaderTrainer:
    return ReaderTrainer(
        out, CONFIG, random_init_config=TINY_BERT, precision="fp32", progress=False, **kwargs
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[ReaderTrainer, Path, dict[str, Any]]:
    """Trained, then saved and exported by the recipe's own step (which measures ONNX against torch)."""
    trainer = _trainer(tmp_path_factory.mktemp("run")).fit(colour_examples(240, seed=1))
    folder = tmp_path_factory.mktemp("reader")
    figures = export(trainer, folder)
    write_tiny_metadata(folder, "tiny-reader", 240)
    return trainer, folder, figures


def test_answer_token_span_finds_the_answer_tokens_or_says_it_is_cut() -> None:
    tokenizer = load_tokenizer(minilm_path() / TOKENIZER_FILE)
    text = "The old mill stands near the red car by the bridge."
    enc = tokenizer.encode(text, add_special_tokens=False)
    start = text.index("red car")
    span = answer_token_span(enc.offsets, 0, len(enc.ids), start, start + len("red car"))
    assert span is not None
    assert tokenizer.decode(enc.ids[span[0] : span[1] + 1]) == "red car"
    # A window that ends inside the answer cannot point at it.
    assert answer_token_span(enc.offsets, 0, span[0] + 1, start, start + len("red car")) is None


def test_every_answer_is_found_in_some_window_and_long_contexts_are_windowed() -> None:
    encoder = PairEncoder(load_tokenizer(minilm_path() / TOKENIZER_FILE), 64, "second", 16)
    long = colour_examples(1, seed=3)[0]
    long["context"] = " ".join(["the town square"] * 30) + " " + long["context"]
    if long["answer_start"] is not None:
        long["answer_start"] += len(" ".join(["the town square"] * 30)) + 1
    features, counts = encode_examples(encoder, [*colour_examples(50, seed=2), long], 64)
    assert counts["answers_not_found"] == 0
    assert counts["windows"] > 51  # the long one takes several windows
    for f in features:
        assert f.start == f.end == 0 or f.context_offset <= f.start <= f.end < len(f.input_ids) - 1


def test_epoch_batches_are_a_permutation_drawn_from_the_seed_alone() -> None:
    lengths = [random.Random(i).randrange(10, 60) for i in range(100)]
    a, b = epoch_batches(lengths, 8, 13, 0), epoch_batches(lengths, 8, 13, 0)
    assert a == b
    assert sorted(i for batch in a for i in batch) == list(range(100))
    assert a != epoch_batches(lengths, 8, 13, 1)


def test_the_trained_reader_finds_the_colour_and_says_none_when_there_is_none(
    trained: tuple[ReaderTrainer, Path, dict[str, Any]],
) -> None:
    _, folder, _ = trained
    reader = SpanReader(folder)
    results = reader.read_batch(
        [("what colour is the car", "the old mill and a blue car near the bridge"),
         ("what colour is the car", "the old mill and a car near the bridge")]
    )  # fmt: skip
    assert results[0].best is not None
    assert results[0].best.text == "blue"
    assert results[0].answer_logit > 0 > results[1].answer_logit


def test_the_onnx_export_agrees_with_torch(trained: tuple[ReaderTrainer, Path, dict[str, Any]]) -> None:
    _, folder, figures = trained
    gaps = figures["max_abs_start_logit_diff_vs_torch"]
    assert gaps["model.onnx"] < 1e-4
    assert gaps["model.int8.onnx"] < 0.5  # dynamic int8 weights move the logits a little
    assert (folder / "torch" / "config.json").is_file()  # the weights, to retrain or re-export


def test_a_stopped_run_resumes_to_the_same_weights_as_an_unbroken_one(tmp_path: Path) -> None:
    examples = colour_examples(64, seed=4)
    config = ReaderTrainingConfig(max_length=64, stride=16, epochs=2, batch_size=16, learning_rate=3e-3)
    unbroken = ReaderTrainer(
        tmp_path / "a", config, random_init_config=TINY_BERT, precision="fp32", progress=False
    )
    unbroken.fit(examples)
    stopped = ReaderTrainer(
        tmp_path / "b", config, random_init_config=TINY_BERT, precision="fp32", progress=False, max_minutes=0
    ).fit(examples)
    assert not stopped.finished_
    assert (tmp_path / "b" / CHECKPOINT_FILE).is_file()
    resumed = ReaderTrainer(
        tmp_path / "b", config, random_init_config=TINY_BERT, precision="fp32", progress=False
    )
    resumed.fit(examples)
    assert resumed.finished_
    for (name, a), (_, b) in zip(
        unbroken.model_.state_dict().items(), resumed.model_.state_dict().items(), strict=True
    ):
        assert torch.allclose(a, b, atol=1e-6), name


def test_a_checkpoint_of_other_settings_is_refused(tmp_path: Path) -> None:
    examples = colour_examples(32, seed=5)
    _trainer(tmp_path, max_minutes=0).fit(examples)
    other = ReaderTrainingConfig(max_length=64, stride=16, epochs=2, batch_size=8, learning_rate=3e-3)
    with pytest.raises(ValueError, match="checkpoint of another run"):
        ReaderTrainer(tmp_path, other, random_init_config=TINY_BERT, precision="fp32", progress=False).fit(
            examples
        )
