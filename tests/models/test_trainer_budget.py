"""The trainer's time budget and resume: a stopped run continued where it stopped, in any epoch.

Tiny randomly initialised BERT (seconds, no download); the warm start is never loaded
(``random_init_config``), so only the schedule and the order of the pairs are under test.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from _tiny_bert import TINY_BERT

from verityrag.errors import InvalidInputError
from verityrag.models.encoding import EncodedWindow
from verityrag.train.cross_encoder import CrossEncoderTrainer

pytestmark = pytest.mark.integration

OPTIONS: dict[str, Any] = {
    "max_length": 64,
    "batch_size": 16,
    "epochs": 2,
    "learning_rate": 1e-3,
    "random_init_config": TINY_BERT,
    "progress": False,
}


def _pairs(n: int) -> tuple[list[tuple[str, str]], list[float]]:
    rng = random.Random(3)
    words = "the river flows past the old mill and the red car near the bridge".split()
    pairs = [(f"question {i}", " ".join(rng.sample(words, 8))) for i in range(n)]
    return pairs, [float(i % 2) for i in range(n)]


class _Recording(CrossEncoderTrainer):
    """Records which pairs each step trained on."""

    def _batch_loss(self, model: Any, windows: Sequence[EncodedWindow], labels: Sequence[float]) -> Any:
        self.batches.append([w.pair_index for w in windows])
        return super()._batch_loss(model, windows, labels)

    def fit(self, pairs: Sequence[tuple[str, str]], labels: Sequence[float]) -> _Recording:
        self.batches: list[list[int]] = []
        super().fit(pairs, labels)
        return self


def test_resume_in_a_later_epoch_continues_that_epoch_where_it_stopped(tmp_path: Path) -> None:
    pairs, labels = _pairs(96)  # 6 steps per epoch, 12 in all
    whole = _Recording(**OPTIONS).fit(pairs, labels)
    # A run stopped two batches into its second epoch had seen 96 + 32 pairs (8 steps).
    resumed = _Recording(**OPTIONS, warm_start=tmp_path, resume_at_pair=128).fit(pairs, labels)
    assert resumed.pairs_seen_ == 64
    assert resumed.batches == whole.batches[8:]
    assert resumed.learning_rates_ == pytest.approx(whole.learning_rates_[8:])


def test_resume_after_a_short_last_batch_is_taken_not_refused(tmp_path: Path) -> None:
    pairs, labels = _pairs(100)  # 7 steps per epoch, the last of 4 pairs
    whole = _Recording(**OPTIONS).fit(pairs, labels)
    resumed = _Recording(**OPTIONS, warm_start=tmp_path, resume_at_pair=100 + 48).fit(pairs, labels)
    assert resumed.batches == whole.batches[10:]


@pytest.mark.parametrize("resume_at_pair", [192, 96 + 20, -16], ids=["all-seen", "mid-batch", "negative"])
def test_resume_at_a_pair_no_stopped_run_reaches_is_refused(tmp_path: Path, resume_at_pair: int) -> None:
    pairs, labels = _pairs(96)
    trainer = CrossEncoderTrainer(**OPTIONS, warm_start=tmp_path, resume_at_pair=resume_at_pair)
    with pytest.raises(InvalidInputError, match="resume_at_pair"):
        trainer.fit(pairs, labels)


def test_budget_spent_before_the_first_batch_raises_not_a_zero_step_model() -> None:
    pairs, labels = _pairs(32)
    with pytest.raises(InvalidInputError, match="before the first batch"):
        CrossEncoderTrainer(**OPTIONS, max_seconds=1e-9).fit(pairs, labels)
