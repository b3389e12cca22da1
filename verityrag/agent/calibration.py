"""Calibration on labelled questions: the sufficiency gate, the reformulation loop, the reranker.

``VerityRAGPipeline.calibrate`` runs these on ``(question, gold answers)`` pairs (an empty
answer list: the corpus cannot answer it), through the agent's public methods only:

- :func:`fit_sufficiency_gate`: each question's first attempt gives the gate's features and
  its label (``Settings.gate_label``: a gold answer in the evidence the generator reads, or in
  the answer it would give); the gate's threshold follows ``Settings.abstention_target``. When
  the agent may reformulate, the loop answers with the best of several attempts (more chances
  of a false accept), so its threshold is chosen again on that maximum, out of fold (each
  question looped with a gate fitted without it), and the loop is kept only if it beats a
  single attempt on the rule's objective.
- :func:`choose_reader_threshold`: the extractive reader's answer threshold, where answering
  stops paying: a wrong answer costs :data:`WRONG_ANSWER_COST` right ones.
- :func:`check_reranker`: the ICT reranker is kept only if it ranks a gold-holding chunk
  first significantly more often than fusion alone (one-sided sign test).
- :func:`fit_confidence`: what a reply's ``confidence`` says, P(it is right), fitted on the
  replies the finished agent gives (:mod:`verityrag.agent.confidence`).

What they fitted is one frozen :class:`Calibration`, which the pipeline builds its agents from
and saves (``to_dict``) beside a persistent index.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from verityrag.agent.confidence import ConfidenceModel, reply_row
from verityrag.agent.controller import AgentController
from verityrag.agent.sufficiency import GATE_FEATURES, READER_FEATURES, SufficiencyGate
from verityrag.config import Settings
from verityrag.errors import InvalidInputError
from verityrag.index.protocol import AnyIndex, SnapshotView
from verityrag.retrieval.features import ChunkTermCache, QueryTerms
from verityrag.retrieval.reranker import KEEP_RERANKER_ALPHA, LightGBMReranker, Searches, sign_test_p
from verityrag.text.answers import contains_gold
from verityrag.thresholds.learned import GateOutcome, PairedSufficiency, gate_outcomes
from verityrag.types import Hit, QueryResult

logger = logging.getLogger(__name__)

Labelled = Sequence[tuple[str, Sequence[str]]]

#: The format :meth:`Calibration.to_dict` writes; the formats :meth:`Calibration.from_dict` reads
#: (the second lacked the learned checks' thresholds).
CALIBRATION_FORMAT = "verityrag-calibration/3"
READABLE_FORMATS = frozenset({"verityrag-calibration/2", CALIBRATION_FORMAT})


@dataclass(frozen=True)
class Calibration:
    """What ``train_reranker`` and ``calibrate`` fitted, as one value: the pipeline builds its agents
    from it and replaces it whole (nothing else sets it)."""

    gate: SufficiencyGate | None = None  # None: the bundled gate
    reranker: LightGBMReranker | None = None  # None: retrieval's order
    use_reranker: bool = True  # kept only when it ranks better on labelled questions
    reformulate: bool | None = None  # None: as the gate's own fit chose
    # The reader's answer threshold on the answer logit at the balanced level (None: the model's own).
    reader_logit_threshold: float | None = None
    # P(a reply is right) (None: the gate's probability stands for it).
    confidence: ConfidenceModel | None = None
    # The learned checks' thresholds calibrate fitted, by stage (the others keep their own).
    check_thresholds: Mapping[str, float] = field(default_factory=dict)
    # The sufficiency threshold fitted together with the answerability check it names.
    paired_sufficiency: PairedSufficiency | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON of what was fitted (:meth:`from_dict` reads it back)."""
        paired = self.paired_sufficiency
        return {
            "format": CALIBRATION_FORMAT,
            "gate": self.gate.to_dict() if self.gate is not None else None,
            "reranker": self.reranker.to_dict() if self.reranker is not None else None,
            "use_reranker": self.use_reranker,
            "reformulate": self.reformulate,
            "reader_threshold": self.reader_logit_threshold,
            "confidence": self.confidence.to_dict() if self.confidence is not None else None,
            "check_thresholds": dict(self.check_thresholds),
            "paired_sufficiency": paired.threshold if paired is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], answerability: object | None = None) -> Calibration:
        """What :meth:`to_dict` wrote; the paired sufficiency threshold is bound to
        ``answerability``, the check attached now (none attached: it is dropped)."""
        if data.get("format") not in READABLE_FORMATS:
            raise InvalidInputError(
                "state", f"not a calibration state of this version ({data.get('format')!r})"
            )
        paired = data.get("paired_sufficiency")
        return cls(
            gate=SufficiencyGate.from_dict(data["gate"]) if data["gate"] else None,
            reranker=LightGBMReranker.from_dict(data["reranker"]) if data["reranker"] else None,
            use_reranker=bool(data["use_reranker"]),
            reformulate=None if data["reformulate"] is None else bool(data["reformulate"]),
            reader_logit_threshold=data["reader_threshold"],
            confidence=ConfidenceModel.from_dict(data["confidence"]) if data["confidence"] else None,
            check_thresholds={k: float(v) for k, v in data.get("check_thresholds", {}).items()},
            paired_sufficiency=(
                PairedSufficiency(answerability, float(paired))
                if paired is not None and answerability is not None
                else None
            ),
        )


@dataclass
class GateCalibration:
    """The fitted gate, whether the reformulation loop is kept, and the figures of the fit."""

    gate: SufficiencyGate
    reformulate: bool
    summary: dict[str, Any]


def gold_in(hits: Sequence[Hit], answers: Sequence[str]) -> bool:
    """A gold answer (SQuAD-normalised, whole tokens) is in one of these hits' text."""
    return any(contains_gold(h.chunk.text, answers) for h in hits)


def gate_rows(
    controller: AgentController,
    labelled: Labelled,
    gate_label: str = "evidence",
    snap: SnapshotView | None = None,
) -> tuple[list[list[float]], list[bool], list[bool]]:
    """What the gate learns from ``labelled`` asked of ``controller``'s corpus (one attempt each, on
    ``snap``, default a snapshot taken now): its features, whether answering would be right
    (``gate_label``: a gold answer in the evidence the generator reads, or in the answer it would
    give) and whether the question is unanswerable."""
    snap = snap if snap is not None else controller.index.snapshot()
    max_hits = controller.sentence_ranker.max_hits
    features: list[list[float]] = []
    correct: list[bool] = []
    must_abstain: list[bool] = []
    for question, answers in labelled:
        q = controller.query_terms(question, snap)
        attempt = controller.attempt(q, question, "original", snap)
        answer = attempt.sentences[0].sentence.text if attempt.sentences else ""
        features.append(list(attempt.features))
        if gate_label == "answer":
            correct.append(bool(answers) and contains_gold(answer, answers))
        else:  # "evidence": a gold answer is in the evidence the generator reads
            correct.append(bool(answers) and gold_in(attempt.hits[:max_hits], answers))
        must_abstain.append(not answers)
    return features, correct, must_abstain


def fit_sufficiency_gate(
    controller: AgentController,
    labelled: Labelled,
    settings: Settings,
    with_gate: Callable[[SufficiencyGate], AgentController],
) -> GateCalibration:
    """Fit the gate on ``labelled`` with ``controller`` (built without a gate); ``with_gate(gate)``
    builds the agent looping with another gate (the out-of-fold check of reformulation)."""
    snap = controller.index.snapshot()
    max_hits = controller.sentence_ranker.max_hits
    features, correct, must_abstain = gate_rows(controller, labelled, settings.gate_label, snap)
    # A gate for an agent that reads takes the reader's features too (the attempts carry them).
    feature_set = GATE_FEATURES + READER_FEATURES if len(features[0]) > len(GATE_FEATURES) else GATE_FEATURES
    gate = SufficiencyGate(abstention_target=settings.abstention_target, features=feature_set).fit(
        features, correct, must_abstain
    )
    summary: dict[str, Any] = dict(gate.fit_summary_)
    reformulate = True
    if settings.max_reformulations > 0 and settings.gate_label == "evidence":
        neg = np.asarray(must_abstain)
        _, single = gate.best_operating_point(gate.oof_probabilities_, np.asarray(correct), neg)
        probs, looped_correct = looped_oof(
            labelled, features, correct, snap, settings, max_hits, with_gate, gate
        )
        looped_threshold, looped = gate.best_operating_point(probs, looped_correct, neg)
        reformulate = looped > single
        summary["reformulation"] = {"used": reformulate, "objective_single": single, "objective_loop": looped}
        if reformulate:
            gate.fit_summary_["threshold_single_attempt"] = summary["threshold"]
            gate.set_threshold(looped_threshold)
            summary["threshold_single_attempt"] = summary["threshold"]
            summary["threshold"] = gate.threshold_
        gate.fit_summary_["reformulation"] = summary["reformulation"]
        logger.info("reformulation check: %s", summary["reformulation"])
    return GateCalibration(gate, reformulate, summary)


def looped_oof(
    labelled: Labelled,
    features: Sequence[Sequence[float]],
    correct: Sequence[bool],
    snap: SnapshotView,
    settings: Settings,
    max_hits: int,
    with_gate: Callable[[SufficiencyGate], AgentController],
    gate: SufficiencyGate,
    folds: int = 5,
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Best-of-loop gate probabilities, each from a gate fitted on the other folds (``gate``'s own,
    in sample, when a class is too small for two folds)."""
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(correct, dtype=np.int32)
    x = np.asarray(features, dtype=np.float64)
    probs = np.zeros(len(y))
    looped_correct = np.zeros(len(y), dtype=bool)
    n_folds = min(folds, int(np.bincount(y, minlength=2).min()))
    if n_folds < 2:
        return gate.predict_proba(x), y.astype(bool)
    splitter = StratifiedKFold(n_splits=n_folds, shuffle=True, random_state=0)
    for train_idx, test_idx in splitter.split(x, y):
        # Only the fold gate's probabilities are read (the threshold is chosen on all folds), so it
        # needs no unanswerable question of its own: with fit(), a training part without one (a
        # single unanswerable question, or few in one fold: the split stratifies on correct) was
        # refused and calibrate failed.
        fold_gate = SufficiencyGate(abstention_target=settings.abstention_target, features=gate.features)
        fold_gate.fit_probabilities(x[train_idx], y[train_idx])
        looped = with_gate(fold_gate)
        for i in test_idx:
            question, answers = labelled[i]
            q = looped.query_terms(question, snap)
            best = looped.search(q, snap, threshold=float("inf"), trace=[])
            probs[i] = best.probability
            looped_correct[i] = bool(answers) and gold_in(best.hits[:max_hits], answers)
    return probs, looped_correct


def check_reranker(
    reranker: LightGBMReranker,
    retriever: Searches,
    index: AnyIndex,
    cache: ChunkTermCache,
    labelled: Labelled,
    candidates: int,
) -> tuple[bool, dict[str, Any]]:
    """Keep the ICT reranker only if it ranks a gold-holding chunk first significantly more often
    than fusion alone on the answerable labelled questions (one-sided sign test on the
    questions where exactly one of them does, p < ``KEEP_RERANKER_ALPHA``)."""
    if not reranker.is_fitted:
        return False, {"trained": False, "used": False}
    snap = index.snapshot()
    fused_hits = reranked_hits = wins = losses = n = 0
    for question, answers in labelled:
        if not answers:
            continue
        hits = retriever.search(question, candidates, snap)
        if not hits:
            continue
        q = QueryTerms.from_index(question, index, snap)
        reranked = reranker.rerank(q, hits, cache)
        n += 1
        fused_first, reranked_first = gold_in(hits[:1], answers), gold_in(reranked[:1], answers)
        fused_hits += fused_first
        reranked_hits += reranked_first
        wins += reranked_first and not fused_first
        losses += fused_first and not reranked_first
    p_value = sign_test_p(wins, losses)
    used = p_value < KEEP_RERANKER_ALPHA
    check = {
        "trained": True,
        "used": used,
        "questions": n,
        "gold_at_1_fused": fused_hits / n if n else 0.0,
        "gold_at_1_reranked": reranked_hits / n if n else 0.0,
        "wins": wins,
        "losses": losses,
        "p_value": p_value,
    }
    logger.info("reranker check on labelled questions: %s", check)
    return used, check


#: A wrong answer costs this many right ones when the reader's threshold is chosen: the threshold
#: answers where, at the margin, answers are right at least as often as wrong (an answer given
#: where the documents do not say counts as wrong). 3 (3 right in 4 at the margin) left the
#: reader, as shipped, answering 23.5% of the answerable test questions (decision 0060).
WRONG_ANSWER_COST = 1.0


def reader_thresholds(outcomes: Sequence[GateOutcome]) -> list[float]:
    """Candidate thresholds on the reader's answer probability: 0, 1 and each score reached."""
    scores = sorted({round(o.score, 6) for o in outcomes if o.score is not None})
    return sorted({0.0, 1.0, *scores})


def choose_reader_threshold(outcomes: Sequence[GateOutcome], wrong_cost: float = WRONG_ANSWER_COST) -> float:
    """The answer-probability threshold with the most right answers less ``wrong_cost`` x the wrong
    ones over ``outcomes`` (every question, answerable or not, run with the reader refusing
    nothing); the lowest such threshold (the most answers) on a tie."""

    def utility(t: float) -> float:
        answered = [o for o in outcomes if o.answered and (o.score is None or o.score >= t)]
        right = sum(o.correct for o in answered)
        return right - wrong_cost * (len(answered) - right)

    return max(reader_thresholds(outcomes), key=lambda t: (utility(t), -t))


def fit_reader_threshold(
    query_open: Callable[[str], QueryResult], labelled: Labelled
) -> tuple[float, dict[str, Any]]:
    """Run ``labelled`` once through ``query_open`` (the reader refusing nothing for want of
    confidence) and choose the reader's threshold (:func:`choose_reader_threshold`); exact, as the
    reader's decision only turns answers into abstentions. Returns it and the figures of the fit."""
    questions = [(q, "answerable" if answers else "unanswerable", answers) for q, answers in labelled]
    outcomes = gate_outcomes(query_open, questions, "reader_decision")
    probability = choose_reader_threshold(outcomes)
    answered = [o for o in outcomes if o.answered and o.score is not None and o.score >= probability]
    return probability, {
        "threshold": probability,
        "questions": len(outcomes),
        "questions_reaching_reader": sum(o.score is not None for o in outcomes),
        "answered": len(answered),
        "answered_right": sum(o.correct for o in answered),
    }


def fit_confidence(
    query: Callable[[str], QueryResult], labelled: Labelled
) -> tuple[ConfidenceModel, dict[str, Any]]:
    """Ask ``labelled`` of ``query`` (the agent as it will answer) and fit P(the reply is right) on
    the replies; the model and the figures of the fit."""
    rows = [reply_row(query(question), answers) for question, answers in labelled]
    model = ConfidenceModel.fit(rows)
    answers = [r for r in rows if r.answered]
    return model, {
        "questions": len(rows),
        "answers": len(answers),
        "answers_right": sum(r.right for r in answers),
        "refusals_right": sum(r.right for r in rows if not r.answered),
        "model": model.to_dict(),
    }
