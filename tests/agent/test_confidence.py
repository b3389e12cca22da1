"""``confidence`` as the probability that a reply is right: the model, its fit, and the eval's measure."""

from __future__ import annotations

import random

import pytest

from verityrag.agent.confidence import MIN_ROWS, ConfidenceModel, ReplyRow, reply_right, reply_scores
from verityrag.eval.metrics import reliability
from verityrag.types import AbstainReason, GroundingReport, QueryResult, TraceStep

pytestmark = pytest.mark.unit


def test_right_means_a_gold_answer_given_or_nothing_to_give_refused() -> None:
    assert reply_right(answered=True, holds_gold=True, answerable=True)
    assert not reply_right(answered=True, holds_gold=False, answerable=False)
    assert reply_right(answered=False, holds_gold=False, answerable=False)
    assert not reply_right(answered=False, holds_gold=False, answerable=True)


def _rows(n: int, seed: int) -> list[ReplyRow]:
    """Answers right more often the surer the reader; refusals right more often the lower the gate."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        gate, logit = rng.random(), rng.uniform(-8, 8)
        answered = gate > 0.5
        p_right = 1 / (1 + 2.718 ** (-logit / 2)) if answered else 1 - gate
        rows.append(ReplyRow(answered, gate, logit, rng.random() < p_right))
    return rows


def test_the_fitted_confidence_is_met_on_replies_it_did_not_see() -> None:
    model = ConfidenceModel.fit(_rows(3000, seed=1))
    held_out = _rows(3000, seed=2)
    stated = [model.probability(r.answered, r.gate_probability, r.reader_logit) for r in held_out]
    assert reliability(stated, [r.right for r in held_out])["ece"] < 0.04
    raw = reliability([r.gate_probability for r in held_out], [r.right for r in held_out])["ece"]
    assert raw > 0.1  # the gate's probability is not that probability
    sure, unsure = model.probability(True, 0.9, 6.0), model.probability(True, 0.9, -6.0)
    assert sure > 0.8 > 0.3 > unsure


def test_a_decision_with_few_replies_gets_its_smoothed_share_and_round_trips() -> None:
    rows = [ReplyRow(True, 0.9, 3.0, True)] * (MIN_ROWS - 1) + _rows(400, seed=3)
    rows = [r for r in rows if r.answered][: MIN_ROWS - 1] + [r for r in rows if not r.answered]
    model = ConfidenceModel.fit(rows)
    assert model.answer.weights == (0.0, 0.0)
    assert model.probability(True, 0.1, -5.0) == model.probability(True, 0.99, 5.0) < 1.0
    again = ConfidenceModel.from_dict(model.to_dict())
    assert again.probability(False, 0.3, 1.0) == pytest.approx(model.probability(False, 0.3, 1.0))


def test_the_scores_of_a_reply_come_from_the_attempt_it_was_decided_on() -> None:
    trace = (
        TraceStep("attempt_0", 1.0, {"probability": 0.4, "reader": {"answer_logit": -2.0}}),
        TraceStep("attempt_1", 1.0, {"probability": 0.7, "reader": {"answer_logit": 3.5}}),
        TraceStep("abstain", 0.0, {"reason": "answerability"}),
    )
    result = QueryResult(
        question="q", answer=None, abstained=True, abstain_reason=AbstainReason.ANSWERABILITY,
        grounding=GroundingReport(0.0), confidence=0.7, trace=trace,
    )  # fmt: skip
    assert reply_scores(result) == (0.7, 3.5)


def test_reliability_bins_and_the_expected_calibration_error() -> None:
    figures = reliability([0.05, 0.05, 0.95, 0.95, 1.0], [False, False, True, False, True])
    bins = figures["bins"]
    assert len(bins) == 10
    assert (bins[0]["n"], bins[9]["n"]) == (2, 3)
    assert bins[9]["right"] == pytest.approx(2 / 3)
    assert figures["ece"] == pytest.approx((2 * 0.05 + 3 * abs((0.95 + 0.95 + 1.0) / 3 - 2 / 3)) / 5)
    with pytest.raises(ValueError, match="differ in length"):
        reliability([0.5], [])


def test_a_reported_conflict_is_a_decision_of_its_own() -> None:
    # The reader reads two values surely: for any other refusal that says it is wrong, for a
    # reported conflict it says nothing of the kind.
    rows = [ReplyRow(False, 0.9, 8.0, False) for _ in range(30)] + [
        ReplyRow(False, 0.2, -6.0, True) for _ in range(30)
    ]
    rows += [ReplyRow(False, 0.9, 8.0, True, conflict=True) for _ in range(9)] + [
        ReplyRow(False, 0.9, 8.0, False, True)
    ]
    model = ConfidenceModel.fit(rows)
    assert model.probability(False, 0.9, 8.0) < 0.2
    assert model.probability(False, 0.9, 8.0, conflict=True) == pytest.approx(10 / 12)  # 9 of 10, smoothed
    back = ConfidenceModel.from_dict(model.to_dict())
    assert back.probability(False, 0.9, 8.0, conflict=True) == pytest.approx(10 / 12)
    older = {k: v for k, v in model.to_dict().items() if k != "conflict"}
    assert ConfidenceModel.from_dict(older).conflict == model.refusal  # scored as refusals, as before
