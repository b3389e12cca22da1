"""The span (extractive QA) answerability model: null-score difference, targets, train -> ONNX -> serve,
and its reader export (start / end logits) served by ``SpanReader`` and ``ReaderCheck``.

A tiny randomly initialised BERT with the real MiniLM tokenizer learns "is there a
coloured car, and which colour" in seconds; the ONNX exports must reproduce torch, and
the reader must read the colour off the evidence.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from _tiny_bert import COLOURS, FILLER, TINY_BERT, colour_pairs

from verityrag.checks.reader_check import ReaderCheck
from verityrag.errors import InvalidInputError
from verityrag.models import OnnxCrossEncoder
from verityrag.models.encoding import EncodedWindow
from verityrag.models.folder import ONNX_FP32_FILE
from verityrag.models.scorer import open_session
from verityrag.models.span_reader import READER_OUTPUTS, SpanReader
from verityrag.train.cross_encoder import CrossEncoderTrainer
from verityrag.train.span_answerability import (
    SpanAnswerabilityModel,
    SpanAnswerabilityTrainer,
    evidence_mask,
    find_answer,
    null_difference,
)

pytestmark = pytest.mark.integration


def test_evidence_mask_is_the_second_segment_without_its_closing_sep() -> None:
    # [CLS] q q [SEP] e e e [SEP] pad
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 1, 1, 0]])
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1, 0]])
    assert evidence_mask(mask, types).tolist() == [[False] * 4 + [True] * 3 + [False] * 2]


def test_null_difference_takes_the_best_valid_evidence_span_minus_cls() -> None:
    evidence = torch.tensor([[False, False, True, True, True, False]])
    start = torch.tensor([[1.0, 9.0, 2.0, 0.0, 3.0, 9.0]])  # 9s: question token and [SEP], never spans
    end = torch.tensor([[0.5, 9.0, 0.0, 4.0, 1.0, 9.0]])
    # Valid spans (start <= end, both evidence): best is start 2 + end 3 = 2 + 4 = 6; null = 1.5.
    assert null_difference(start, end, evidence).tolist() == pytest.approx([4.5])
    # Spans may not end before they start: start 4 (3.0) only pairs with end 4 (1.0).
    assert null_difference(start, end, evidence, max_answer_tokens=1).tolist() == pytest.approx([4.0 - 1.5])


def test_find_answer_looks_only_in_the_evidence_segment() -> None:
    window = EncodedWindow(0, [101, 7, 8, 102, 5, 7, 8, 102], [0, 0, 0, 0, 1, 1, 1, 1])
    assert find_answer(window, [[7, 8]]) == (5, 6)  # not the copy in the question
    assert find_answer(window, [[9], [5]]) == (4, 4)
    assert find_answer(window, [[9]]) is None


def test_span_targets_are_found_for_every_answerable_pair(
    span_model: tuple[SpanAnswerabilityTrainer, Path],
) -> None:
    trainer, _ = span_model
    _, labels, _ = colour_pairs(320, seed=1)
    assert trainer.spans_missing_ == 0
    assert trainer.spans_found_ == trainer.epochs * sum(labels)  # every answerable pair, every epoch


def test_tiny_span_model_learns_answerability_and_onnx_matches_torch(
    span_model: tuple[SpanAnswerabilityTrainer, Path],
) -> None:
    trainer, folder = span_model
    pairs, labels, _ = colour_pairs(100, seed=2)
    scores = OnnxCrossEncoder(folder).score_pairs(pairs)
    accuracy = np.mean([(s >= 0.5) == (y == 1.0) for s, y in zip(scores, labels, strict=True)])
    assert accuracy >= 0.8
    torch_logits = np.array([x[0] for x in trainer.predict_logits(pairs[:40])])
    fp32 = np.array(
        [x[0] for x in OnnxCrossEncoder(folder, onnx_file=ONNX_FP32_FILE).window_logits(pairs[:40])]
    )
    assert np.allclose(fp32, torch_logits, atol=1e-4)


def test_the_span_head_points_at_the_answer(span_model: tuple[SpanAnswerabilityTrainer, Path]) -> None:
    trainer, _ = span_model
    pairs, labels, answers = colour_pairs(60, seed=3)
    model = trainer.model_
    assert isinstance(model, SpanAnswerabilityModel)
    encoder = trainer.encoder_
    hits = 0
    answerable = [(p, a) for p, y, a in zip(pairs, labels, answers, strict=True) if y]
    for pair, answer in answerable:
        (window,) = encoder.windows([pair])
        ids = torch.tensor([window.input_ids])
        start, _, evidence = model.span_logits(
            ids, torch.ones_like(ids), torch.tensor([window.token_type_ids])
        )
        first = int(start.masked_fill(~evidence, -1e4).argmax())
        colour = encoder.tokenizer.encode(answer[0], add_special_tokens=False).ids
        hits += window.input_ids[first : first + len(colour)] == colour
    assert hits / len(answerable) >= 0.8


def test_span_model_warm_starts_from_a_classifier_folder(tmp_path: Path) -> None:
    pairs, labels, answers = colour_pairs(32, seed=4)
    classifier = CrossEncoderTrainer(
        max_length=64, epochs=1, random_init_config=TINY_BERT, freeze_word_embeddings=False, progress=False
    ).fit(pairs, labels)
    classifier.save(tmp_path)
    span = SpanAnswerabilityTrainer(
        max_length=64, epochs=1, learning_rate=1e-12, warm_start=tmp_path, progress=False
    )
    span.fit_with_answers(pairs, labels, answers)
    # The encoder came from the classifier (the span head is new): same embeddings.
    assert torch.equal(
        span.model_.get_input_embeddings().weight, classifier.model_.get_input_embeddings().weight
    )


def test_reader_export_matches_torch_start_and_end_logits(
    span_model: tuple[SpanAnswerabilityTrainer, Path], reader_folder: Path
) -> None:
    trainer, _ = span_model
    assert isinstance(trainer.model_, SpanAnswerabilityModel)
    pairs, _, _ = colour_pairs(16, seed=5)
    windows = trainer.encoder_.windows(pairs)
    width = max(len(w.input_ids) for w in windows)
    ids = np.array([w.input_ids + [0] * (width - len(w.input_ids)) for w in windows])
    mask = np.array([[1] * len(w.input_ids) + [0] * (width - len(w.input_ids)) for w in windows])
    types = np.array([w.token_type_ids + [0] * (width - len(w.token_type_ids)) for w in windows])
    with torch.inference_mode():
        start, end, _ = trainer.model_.span_logits(torch.tensor(ids), torch.tensor(mask), torch.tensor(types))
    onnx = open_session(reader_folder / ONNX_FP32_FILE, 1).run(
        list(READER_OUTPUTS), {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    )
    real = mask == 1
    assert np.allclose(onnx[0][real], start.numpy()[real], atol=1e-4)
    assert np.allclose(onnx[1][real], end.numpy()[real], atol=1e-4)


def test_reader_reads_the_colour_off_the_evidence_best_first(reader_folder: Path) -> None:
    reader = SpanReader(reader_folder)
    pairs, labels, answers = colour_pairs(40, seed=6)
    hits = 0
    answerable = [(p, a) for p, y, a in zip(pairs, labels, answers, strict=True) if y]
    for (question, evidence), answer in answerable:
        spans = reader.top_spans(question, evidence, k=5)
        assert len(spans) == 5
        assert [s.score for s in spans] == sorted((s.score for s in spans), reverse=True)
        assert sum(s.probability for s in spans) == pytest.approx(1.0)
        hits += spans[0].text == answer[0]
    assert hits / len(answerable) >= 0.8
    assert reader.top_spans("what colour is the car", "") == []


def test_reader_windows_long_evidence_and_keeps_offsets_into_the_whole_text(reader_folder: Path) -> None:
    reader = SpanReader(reader_folder)
    found = 0
    for colour in COLOURS:
        evidence = " ".join(FILLER * 4) + f" a {colour} car " + " ".join(FILLER)  # ~90 tokens, window 64
        (best,) = reader.top_spans("what colour is the car", evidence, k=1)
        found += best.text == colour and best.start > len(" ".join(FILLER * 4))
    assert found >= len(COLOURS) - 1


def test_reader_check_scores_the_right_colour_above_a_wrong_one(reader_folder: Path) -> None:
    check = ReaderCheck(reader_folder, threshold=0.5)
    pairs, labels, answers = colour_pairs(30, seed=7)
    right, wrong = [], []
    for (question, evidence), y, answer in zip(pairs, labels, answers, strict=True):
        if not y:
            continue
        other = next(c for c in COLOURS if c != answer[0])
        right.append(check.score(question, evidence, f"The car is {answer[0]}."))
        wrong.append(check.score(question, evidence, f"The car is {other}."))
    assert np.mean(right) > 0.5 > np.mean(wrong)
    assert all(0.0 <= s <= 1.0 for s in right + wrong)


def test_span_reader_refuses_a_one_logit_export(span_model: tuple[SpanAnswerabilityTrainer, Path]) -> None:
    _, span_folder = span_model  # the answerability export: one logit per window
    with pytest.raises(InvalidInputError, match="not a reader export"):
        SpanReader(span_folder).warm_up()


def test_reader_with_no_finite_span_score_finds_no_span(reader_folder: Path) -> None:
    # All-NaN logits left no span, and the softmax over none raised numpy's "zero-size array".
    reader = SpanReader(reader_folder).warm_up()
    assert reader._session is not None
    inputs = list(reader._session.get_inputs())

    class NaNSession:
        def get_inputs(self) -> list[object]:
            return inputs

        def run(self, names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
            return [np.full(feeds["input_ids"].shape, np.nan, dtype=np.float32) for _ in names]

    reader._session = NaNSession()
    assert reader.top_spans("what colour is the car", "the old mill and a red car") == []
