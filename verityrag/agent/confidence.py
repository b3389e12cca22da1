"""``confidence``: the probability that a reply is right, fitted on labelled questions.

A reply is right when it is an answer that holds a gold answer, or a refusal of a question that
has none. What the agent knows when it decides is the sufficiency gate's probability and the
reader's answer logit; neither is that probability (the gate's says "the evidence holds an
answer", and a refusal at 0.95 said nothing about the refusal). :class:`ConfidenceModel` maps
them to it with one logistic regression per decision, answer, refusal or reported conflict
(Platt scaling with two inputs), fitted on the replies to labelled questions. A conflict is a
decision of its own: the reader reads two values surely, which for any other refusal says the
refusal is wrong. A decision with fewer than
:data:`MIN_ROWS` replies, or with only right (or only wrong) ones, gets its smoothed share right.

:func:`reply_right` says what "right" is; :meth:`ConfidenceModel.fit` takes one
:class:`ReplyRow` per labelled question.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from verityrag.generation.reading import logit, probability
from verityrag.models.folder import RESOURCES_DIR
from verityrag.text.answers import contains_gold
from verityrag.types import AbstainReason, QueryResult

#: The model a fresh pipeline with the shipped gate and reader starts with (python -m verityrag.train
#: confidence), fitted on their replies to the bundled calibration questions.
SHIPPED_PATH = RESOURCES_DIR / "confidence.json"

#: Fewest replies of one decision for a regression (else its smoothed share right).
MIN_ROWS = 20
#: Inputs are clipped here (log-odds): a probability of exactly 0 or 1 stays finite.
_CLIP = 20.0


@dataclass(frozen=True, slots=True)
class ReplyRow:
    """One reply to a labelled question: whether it answered, the gate's probability, the reader's
    answer logit (None without a reader), whether it was right, and whether it was a refusal
    reporting a conflict."""

    answered: bool
    gate_probability: float
    reader_logit: float | None
    right: bool
    conflict: bool = False


def reply_right(answered: bool, holds_gold: bool, answerable: bool) -> bool:
    """An answer is right when it holds a gold answer; a refusal when there was none to give."""
    return holds_gold if answered else not answerable


def _features(gate_probability: float, reader_logit: float | None) -> list[float]:
    gate = max(-_CLIP, min(_CLIP, logit(gate_probability)))
    reader = (
        0.0 if reader_logit is None or math.isnan(reader_logit) else max(-_CLIP, min(_CLIP, reader_logit))
    )
    return [gate / _CLIP, reader / _CLIP]


@dataclass(frozen=True)
class _Decision:
    """P(right) for one decision: ``sigmoid(bias + weights . features)`` (weights 0: a constant)."""

    bias: float
    weights: tuple[float, float]
    rows: int

    def probability(self, gate_probability: float, reader_logit: float | None) -> float:
        x = self.bias + sum(
            w * f for w, f in zip(self.weights, _features(gate_probability, reader_logit), strict=True)
        )
        return probability(x)

    @classmethod
    def fit(cls, rows: Sequence[ReplyRow]) -> _Decision:
        right = sum(r.right for r in rows)
        if len(rows) < MIN_ROWS or right in (0, len(rows)):
            share = (right + 1) / (len(rows) + 2)  # Laplace: never a certain 0 or 1 from few replies
            return cls(logit(share), (0.0, 0.0), len(rows))
        from sklearn.linear_model import LogisticRegression

        x = np.array([_features(r.gate_probability, r.reader_logit) for r in rows])
        y = np.array([r.right for r in rows], dtype=int)
        model = LogisticRegression(C=1.0).fit(x, y)
        return cls(
            float(model.intercept_[0]), (float(model.coef_[0][0]), float(model.coef_[0][1])), len(rows)
        )


@dataclass(frozen=True)
class ConfidenceModel:
    """P(the reply is right) per decision; :meth:`fit` on labelled replies, JSON with ``to_dict``."""

    answer: _Decision
    refusal: _Decision
    conflict: _Decision

    @classmethod
    def fit(cls, rows: Sequence[ReplyRow]) -> ConfidenceModel:
        refusals = [r for r in rows if not r.answered]
        return cls(
            _Decision.fit([r for r in rows if r.answered]),
            _Decision.fit([r for r in refusals if not r.conflict]),
            _Decision.fit([r for r in refusals if r.conflict]),
        )

    def probability(
        self, answered: bool, gate_probability: float, reader_logit: float | None, conflict: bool = False
    ) -> float:
        """The probability that an answer (``answered``), a refusal or a reported conflict
        (``conflict``) with these scores is right."""
        decision = self.answer if answered else self.conflict if conflict else self.refusal
        return decision.probability(gate_probability, reader_logit)

    def to_dict(self) -> dict[str, Any]:
        return {
            name: {"bias": d.bias, "weights": list(d.weights), "rows": d.rows}
            for name, d in (("answer", self.answer), ("refusal", self.refusal), ("conflict", self.conflict))
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ConfidenceModel:
        def decision(d: dict[str, Any]) -> _Decision:
            w = d["weights"]
            return _Decision(float(d["bias"]), (float(w[0]), float(w[1])), int(d["rows"]))

        # A model fitted before conflicts were a decision of their own scores them as refusals.
        refusal = decision(data["refusal"])
        conflict = decision(data["conflict"]) if "conflict" in data else refusal
        return cls(decision(data["answer"]), refusal, conflict)


def reply_scores(result: QueryResult) -> tuple[float, float | None]:
    """The gate's probability and the reader's answer logit of the attempt a reply was decided on
    (the one the gate trusted most), read from its trace; (0, None) when nothing was attempted."""
    attempts = [s.details for s in result.trace if s.stage.startswith("attempt_")]
    if not attempts:
        return 0.0, None
    best = max(attempts, key=lambda d: float(d.get("probability", 0.0)))
    reader = best.get("reader")
    logit = float(reader["answer_logit"]) if isinstance(reader, dict) and "answer_logit" in reader else None
    return float(best.get("probability", 0.0)), logit


def reply_row(result: QueryResult, answers: Sequence[str]) -> ReplyRow:
    """A reply to a question with these gold ``answers`` (none: it has no answer) as a fitting row."""
    answered = not result.abstained
    gate, logit = reply_scores(result)
    holds = answered and bool(answers) and contains_gold(result.answer or "", answers)
    conflict = result.abstain_reason is AbstainReason.CONFLICT
    return ReplyRow(answered, gate, logit, reply_right(answered, holds, bool(answers)), conflict)


@functools.cache
def shipped_confidence() -> ConfidenceModel | None:
    """The shipped model (:data:`SHIPPED_PATH`), read once; None where the file is missing."""
    if not SHIPPED_PATH.is_file():
        return None
    return ConfidenceModel.from_dict(json.loads(SHIPPED_PATH.read_text(encoding="utf-8")))
