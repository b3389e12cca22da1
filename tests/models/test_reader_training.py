"""ReaderTrainer: span targets, resumable training, and the ONNX export agreeing with torch (tiny model)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import pytest
import torch
from _tiny_bert import COLOURS, FILLER, TINY_BERT, write_tiny_metadata

from verityrag.models.encoding import PairEncoder, load_tokenizer
from verityrag.models.folder import TOKENIZER_FILE, ModelMetadata
from verityrag.models.span_reader import SpanReader
from verityrag.train.cross_encoder import minilm_path
from verityrag.train.reader_recipe import export, ship_if_better
from verityrag.train.reader_trainer import (
    ReaderTrainer,
    ReaderTrainingConfig,
    answer_token_span,
    encode_examples,
)
from verityrag.train.resumable import (
    CHECKPOINT_FILE,
    REPLACED_CHECKPOINT_FILE,
    epoch_batches,
    plan_for_budget,
    plan_for_steps,
    replan_for_budget,
)

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


def test_a_checkpoint_of_other_settings_is_not_resumed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    examples = colour_examples(32, seed=5)
    _trainer(tmp_path, max_minutes=0).fit(examples)
    other = ReaderTrainingConfig(max_length=64, stride=16, epochs=2, batch_size=8, learning_rate=3e-3)
    with caplog.at_level("INFO"):
        run = ReaderTrainer(
            tmp_path, other, random_init_config=TINY_BERT, precision="fp32", progress=False
        ).fit(examples)
    assert run.finished_
    assert run.total_steps_ == 2 * len(epoch_batches([1] * 32, 8, 13, 0))
    assert [r for r in caplog.messages if "of other settings or data; starting at step 0" in r]
    assert (tmp_path / REPLACED_CHECKPOINT_FILE).is_file()  # kept aside, not lost


def test_the_plan_decays_to_zero_after_its_last_step() -> None:
    plan = plan_for_steps(50, 0.1, "steps")
    factors = [plan.learning_rate_factor(s) for s in range(51)]
    assert plan.warmup_steps == 5
    assert factors[4] == pytest.approx(1.0)
    assert all(a >= b for a, b in itertools.pairwise(factors[4:]))  # no rise after warm-up
    assert factors[49] > 0
    assert factors[50] == 0.0


def test_a_budget_plans_the_steps_that_fit() -> None:
    plan = plan_for_budget(20, 600.0, 2.0, 0.06, 10.0)
    assert 290 <= plan.total_steps - 20 <= 300  # 300 fit after the 20 timed ones, less a small margin
    assert plan.measured_steps == 20
    assert plan.warmup_steps == int((plan.total_steps - 20) * 0.06)
    assert plan.source.startswith("budget of 10 min")
    assert plan.learning_rate_factor(19) == 0.0  # the timed steps do not move the weights
    assert plan.learning_rate_factor(20) > 0.0
    assert plan.learning_rate_factor(plan.total_steps) == 0.0
    with pytest.raises(ValueError, match="leaves no time"):
        plan_for_budget(20, 1.0, 2.0, 0.06, 10.0)


class _FakeClock:
    """Time that moves only when it is read: each reading is ``tick`` seconds after the last, so a
    run's timings do not depend on how busy the machine is."""

    def __init__(self, tick: float) -> None:
        self.now, self.tick = 0.0, tick

    def __call__(self) -> float:
        self.now += self.tick
        return self.now


def test_a_budgeted_run_ends_inside_its_budget_at_learning_rate_zero(tmp_path: Path) -> None:
    budget = 0.1  # minutes, on a clock that moves 0.05 s per reading
    run = _trainer(tmp_path, budget_minutes=budget, clock=_FakeClock(0.05)).fit(colour_examples(64, seed=6))
    assert run.finished_
    assert run.plan_.source.startswith("budget of 0.1 min")
    assert run.total_steps_ == run.plan_.total_steps > 1
    assert run.learning_rate_ == 0.0
    assert run.plan_.measured_steps > 0
    assert run.setup_seconds_ + run.train_seconds_ <= budget * 60


def test_a_budgeted_run_stopped_and_resumed_takes_the_steps_of_an_unbroken_one(tmp_path: Path) -> None:
    examples = colour_examples(64, seed=7)
    stopped = _trainer(tmp_path / "b", budget_minutes=0.1, max_minutes=0, clock=_FakeClock(0.05)).fit(
        examples
    )
    assert not stopped.finished_
    planned = stopped.plan_.total_steps
    # Resumed with another budget: the checkpoint's plan is kept.
    resumed = _trainer(tmp_path / "b", budget_minutes=5.0).fit(examples)
    assert resumed.finished_
    assert resumed.total_steps_ == planned
    assert resumed.learning_rate_ == 0.0
    unbroken = _trainer(tmp_path / "a", plan=stopped.plan_).fit(examples)
    assert unbroken.plan_.warmup_steps == resumed.plan_.warmup_steps
    for (name, a), (_, b) in zip(
        unbroken.model_.state_dict().items(), resumed.model_.state_dict().items(), strict=True
    ):
        assert torch.allclose(a, b, atol=1e-6), name


def _with_validation_f1(folder: Path, f1: float) -> Path:
    meta = ModelMetadata.read(folder)
    meta.metrics = {"validation": {"squad2": {"f1": f1}}}
    meta.write(folder)
    return folder


def test_a_reader_ships_only_when_better_on_validation(
    trained: tuple[ReaderTrainer, Path, dict[str, Any]], tmp_path: Path
) -> None:
    _, folder, _ = trained
    shipped = tmp_path / "shipped"
    assert ship_if_better(_with_validation_f1(folder, 60.0), shipped)  # nothing shipped yet
    assert ModelMetadata.read(shipped).metrics["validation"]["squad2"]["f1"] == 60.0
    assert not ship_if_better(_with_validation_f1(folder, 55.0), shipped)
    assert ModelMetadata.read(shipped).metrics["validation"]["squad2"]["f1"] == 60.0  # left as it was
    assert ship_if_better(_with_validation_f1(folder, 55.0), shipped, force=True)
    assert ship_if_better(_with_validation_f1(folder, 61.0), shipped)
    assert ModelMetadata.read(shipped).metrics["validation"]["squad2"]["f1"] == 61.0


def test_a_late_run_is_replanned_to_end_inside_a_new_budget() -> None:
    plan = plan_for_budget(45, 6000.0, 1.7, 0.06, 100.0)
    late = replan_for_budget(plan, 1765, 1765 * 2.0, 60.0, 50.0)  # 2.0 s a step so far, not 1.7
    assert late.warmup_steps == plan.warmup_steps
    assert late.measured_steps == plan.measured_steps
    assert late.total_steps == 1765 + int((3600 - 50) * 0.97 / 2.0)
    assert late.learning_rate_factor(late.total_steps) == 0.0
    assert late.source.startswith("re-planned at step 1765")
    with pytest.raises(ValueError, match="warm-up"):
        replan_for_budget(plan, 50, 100.0, 60.0, 0.0)


def test_a_resumed_run_replans_only_when_asked(tmp_path: Path) -> None:
    examples = colour_examples(64, seed=8)
    plan = plan_for_steps(400, 0.01, "steps")  # 4 warm-up steps
    for _ in range(6):  # each stops after one step: past warm-up, deterministically
        kept = _trainer(tmp_path, plan=plan, max_minutes=0).fit(examples)
    assert not kept.finished_
    assert kept.step_ == 6
    assert kept.plan_.total_steps == 400  # kept: no replan asked
    replanned = _trainer(tmp_path, budget_minutes=0.1, replan=True, clock=_FakeClock(0.05)).fit(examples)
    assert replanned.finished_
    assert replanned.plan_.source.startswith("re-planned")
    assert replanned.total_steps_ != 400
    assert replanned.learning_rate_ == 0.0
