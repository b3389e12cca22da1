"""The reader's SQuAD 2.0 scores and its fitted answer threshold (verityrag/eval/reader_quality.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from verityrag.eval.reader_quality import (
    ReaderQuestion,
    best_threshold,
    squad2_f1_by_threshold,
    squad2_scores,
)
from verityrag.models.span_reader import ReaderResult, ReaderSpan

pytestmark = pytest.mark.unit


def _result(text: str, probability: float) -> ReaderResult:
    """A reading whose best span is ``text`` at this answer probability (null score 0)."""
    logit = math.log(probability / (1 - probability))
    return ReaderResult([ReaderSpan(text, 0, len(text), logit, 1.0)], 0.0)


def _question(*golds: str) -> ReaderQuestion:
    return ReaderQuestion("q?", "context", tuple(golds), "T")


def test_the_table_gives_squad2_scores_at_every_threshold() -> None:
    questions = [_question("Paris"), _question("blue sky"), _question(), _question()]
    results = [_result("Paris", 0.9), _result("sky", 0.6), _result("x", 0.7), _result("y", 0.2)]
    grid = [0.0, 0.5, 0.65, 0.8, 0.95, 1.0]
    table = squad2_f1_by_threshold(questions, results, grid)
    for column, t in enumerate(grid):
        assert 100 * table[:, column].mean() == pytest.approx(squad2_scores(questions, results, t)["f1"])


def _overlapping(rng: np.random.Generator, n: int) -> tuple[list[ReaderQuestion], list[ReaderResult]]:
    """Half answerable (probability ~ Beta(5, 2), right 3 times in 4), half not (~ Beta(2, 3))."""
    questions, results = [], []
    for i in range(n):
        if i % 2:
            questions.append(_question("a"))
            results.append(_result("a" if rng.random() < 0.75 else "z", float(rng.beta(5, 2))))
        else:
            questions.append(_question())
            results.append(_result("b", float(rng.beta(2, 3))))
    return questions, results


def test_resamples_zero_is_the_plain_best() -> None:
    questions, results = _overlapping(np.random.default_rng(1), 120)
    plain = best_threshold(questions, results, resamples=0)
    best_f1 = max(
        squad2_scores(questions, results, t)["f1"]
        for t in [0.0, 1.0, *(r.answer_probability for r in results)]
    )
    assert squad2_scores(questions, results, plain)["f1"] == pytest.approx(best_f1)


def test_the_bagged_threshold_is_steadier_across_samples_and_seeded() -> None:
    rng = np.random.default_rng(7)
    plain, bagged = [], []
    for _ in range(12):
        questions, results = _overlapping(rng, 150)
        plain.append(best_threshold(questions, results, resamples=0))
        bagged.append(best_threshold(questions, results))
        assert best_threshold(questions, results) == bagged[-1]  # seeded: the same on every run
    assert float(np.std(bagged)) < float(np.std(plain))
