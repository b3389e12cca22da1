"""Each verifier, the guard, the reader check and their stacks, scored on an LLM's recorded answers.

    python scripts/score_llm_answers.py     # guard_work/eval/llm_answers_local.jsonl -> scripts/results/llm_checks_local.json

The answers are the record ``python -m verityrag.eval --real-llm PROVIDER`` writes: every test
question that reached the LLM, attempt by attempt, with the evidence the LLM was given and the
grounding verifier's sentence verdicts. Nothing is generated again.

- **Unit**: the LLM's *first* attempt at each question, the one no check has seen (a later
  attempt exists only because the grounding verifier rejected the one before).
- **Label**: right when its sentences contain a gold answer (SQuAD-normalised, as in the main
  eval); any answer to an unanswerable question is wrong.
- **Scores**: each check's support score, higher = more likely right. The support checks read
  the chunks the answer cites (the guard's input in the agent); the reader check reads the
  question and the evidence the LLM was given (the agent gives it the first three chunks).
- **Thresholds**, never fitted on the answers they are reported on: *own* (the pipeline's
  grounding threshold at the record's strictness, the model folder's recorded threshold, else
  the fixed value :data:`FIXED_THRESHOLD` stated beside it) and *cross-fitted* (the questions
  split in two by a hash of their id; on each half the threshold that catches most wrong answers
  while rejecting at most :data:`RIGHT_REJECTED_BUDGET` of the right ones there, applied to the
  other half; both halves pooled).
- **Stacks**: an answer passes only when every member passes at its threshold.
- **The LLM path end to end**: its final answers with each check or stack added as the last
  stage. A check there only turns an answer into an abstention, so this is exact.
- **Strictness**: what each level makes of the recorded sentence scores of every first attempt
  (kept whole, trimmed, refused) for right and wrong answers, and right answers whose gold
  answer was in a dropped sentence.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from verityrag.agent.controller import GROUNDING_THRESHOLDS
from verityrag.agent.gates import QUESTION_CHECK_CHUNKS
from verityrag.config import STRICTNESS_LEVELS
from verityrag.eval.llm_eval import attempt_correct
from verityrag.eval.metrics import auroc, contains_gold, percentiles, rate
from verityrag.verify.protocols import VerificationResult
from verityrag.verify.strictness import apply_strictness, strictness_policy

__all__ = [
    "FIXED_THRESHOLD",
    "RIGHT_REJECTED_BUDGET",
    "Check",
    "LabelledAnswer",
    "cross_fitted_thresholds",
    "first_attempts",
    "score_checks",
    "strictness_table",
]

#: The most right answers a cross-fitted threshold may reject on its fitting half: the issue's
#: "rejecting <= 15% of right ones".
RIGHT_REJECTED_BUDGET = 0.15
#: The threshold of a check whose folder records none for this score (an entailment probability,
#: the reader's probability share): one half, fixed before any answer was scored.
FIXED_THRESHOLD = 0.5


@dataclass(frozen=True, slots=True)
class LabelledAnswer:
    """One answer of the LLM to one question, with what the checks read and its label."""

    question_id: str
    kind: str
    question: str
    text: str
    sentences: tuple[str, ...]
    sentence_scores: tuple[float, ...]  # the grounding verifier's, as recorded
    cited: str  # the text of the chunks the answer cites (all given chunks when it cites none)
    evidence: str  # the first QUESTION_CHECK_CHUNKS chunks the LLM was given
    right: bool
    gold_answers: tuple[str, ...]

    @property
    def fold(self) -> int:
        """0 or 1 by a hash of the question id: the cross-fitting halves."""
        return hashlib.sha1(self.question_id.encode("utf-8")).digest()[0] & 1


@dataclass(frozen=True)
class Check:
    """A named support score over answers, with its own threshold and where that comes from."""

    name: str
    score: Callable[[Sequence[LabelledAnswer]], list[float]]
    threshold: float
    threshold_source: str


def _labelled(
    record: dict[str, Any], attempt: dict[str, Any], delivered: bool = False
) -> LabelledAnswer | None:
    """``attempt`` as a labelled answer; ``delivered``: only the sentences its strictness kept."""
    dropped = set(attempt["unsupported_claims"]) if delivered else set()
    kept = [
        (s, v)
        for s, v in zip(attempt["sentences"], attempt["verdicts"], strict=False)
        if s["text"].strip() and s["text"] not in dropped
    ]
    sentences = tuple(s["text"] for s, _ in kept)
    if attempt["refused"] or not sentences:
        return None
    by_id = {e["chunk_id"]: e["text"] for e in record["evidence"]}
    cited_ids = dict.fromkeys(c for s, _ in kept for c in s.get("chunk_ids", []))
    cited = " ".join(by_id[c] for c in cited_ids if c in by_id)
    given = [e["text"] for e in record["evidence"]]
    return LabelledAnswer(
        question_id=record["id"],
        kind=record["kind"],
        question=record["question"],
        text=" ".join(sentences),
        sentences=sentences,
        sentence_scores=tuple(float(v["score"]) for _, v in kept),
        cited=cited or " ".join(given),
        evidence=" ".join(given[:QUESTION_CHECK_CHUNKS]),
        right=record["correct"] if delivered else attempt_correct(record, attempt),
        gold_answers=tuple(record["gold_answers"]),
    )


def first_attempts(records: Sequence[dict[str, Any]]) -> list[LabelledAnswer]:
    """The first attempt of every record that reached the LLM and was not a refusal."""
    answers = []
    for r in records:
        if r.get("reached_llm") and r["llm"]["attempt_log"]:
            a = _labelled(r, r["llm"]["attempt_log"][0])
            if a is not None:
                answers.append(a)
    return answers


def final_answers(records: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], LabelledAnswer]]:
    """The answers the LLM path gave (accepted by its strategy and the agent), with their record."""
    out = []
    for r in records:
        if not (r["answered"] and r.get("reached_llm")):
            continue
        chosen = r["llm"]["chosen_attempt"]
        attempt = next(a for a in r["llm"]["attempt_log"] if a["attempt"] == chosen)
        a = _labelled(r, attempt, delivered=True)
        if a is not None:
            out.append((r, a))
    return out


def grounding_scores(answers: Sequence[LabelledAnswer]) -> list[float]:
    """The pipeline's grounding verdict: the weakest sentence's recorded score."""
    return [min(a.sentence_scores, default=0.0) for a in answers]


def cross_fitted_thresholds(
    scores: Sequence[float], answers: Sequence[LabelledAnswer], budget: float = RIGHT_REJECTED_BUDGET
) -> dict[int, float]:
    """For each fold, the threshold fitted on the *other* fold: the highest that rejects at most
    ``budget`` of that fold's right answers (an answer passes at ``score >= threshold``)."""
    thresholds = {}
    for fold in (0, 1):
        right = sorted(s for s, a in zip(scores, answers, strict=True) if a.fold != fold and a.right)
        k = math.floor(budget * len(right))  # how many right answers may fall below the threshold
        thresholds[fold] = right[k] if right else -math.inf
    return thresholds


def _operating_point(passed: Sequence[bool], answers: Sequence[LabelledAnswer]) -> dict[str, Any]:
    wrong = [p for p, a in zip(passed, answers, strict=True) if not a.right]
    right = [p for p, a in zip(passed, answers, strict=True) if a.right]
    caught, lost = sum(not p for p in wrong), sum(not p for p in right)
    return {
        "wrong_caught": caught,
        "wrong": len(wrong),
        "right_rejected": lost,
        "right": len(right),
        "wrong_caught_rate": rate(caught, len(wrong)),
        "right_rejected_rate": rate(lost, len(right)),
    }


def _passes(
    scores: Sequence[float], answers: Sequence[LabelledAnswer], thresholds: dict[int, float]
) -> list[bool]:
    return [s >= thresholds[a.fold] for s, a in zip(scores, answers, strict=True)]


def _path_figures(
    records: Sequence[dict[str, Any]],
    finals: Sequence[tuple[dict[str, Any], LabelledAnswer]],
    kept: Sequence[bool],
) -> dict[str, Any]:
    """The LLM path's answers when only ``kept`` of its LLM-written answers stand (the others abstain)."""
    dropped = {r["id"] for (r, _), k in zip(finals, kept, strict=True) if not k}
    answered = [r for r in records if r["answered"] and r["id"] not in dropped]
    answerable = [r for r in records if r["gold_answers"]]
    right = sum(r["correct"] for r in answered)
    return {
        "answered": len(answered),
        "answered_wrong": len(answered) - right,
        "answerable_correct": sum(r["correct"] for r in answered if r["gold_answers"]),
        "coverage": rate(sum(r["id"] not in dropped and r["answered"] for r in answerable), len(answerable)),
        "accuracy_of_all_answers": rate(right, len(answered)),
    }


def score_checks(
    records: Sequence[dict[str, Any]], checks: Sequence[Check], max_stack: int = 3
) -> dict[str, Any]:
    """Every check and every stack of up to ``max_stack`` checks, on the first attempts and the path."""
    answers = first_attempts(records)
    finals = final_answers(records)
    if not any(a.right for a in answers) or all(a.right for a in answers):
        raise ValueError("the recorded first attempts need both right and wrong answers")
    delivered = [a for _, a in finals]
    first_scores = {c.name: c.score(answers) for c in checks}
    final_scores = {c.name: c.score(delivered) if delivered else [] for c in checks}
    fitted = {c.name: cross_fitted_thresholds(first_scores[c.name], answers) for c in checks}
    thresholds = {
        "own": {c.name: {0: c.threshold, 1: c.threshold} for c in checks},
        "cross_fitted": fitted,
    }
    # Each check's verdicts, once per kind of threshold: (first attempts, delivered answers).
    passes = {
        how: {
            name: (
                _passes(first_scores[name], answers, by_fold),
                _passes(final_scores[name], delivered, by_fold),
            )
            for name, by_fold in by_check.items()
        }
        for how, by_check in thresholds.items()
    }
    labels = [int(a.right) for a in answers]
    rows: list[dict[str, Any]] = []
    for size in range(1, max_stack + 1):
        for members in combinations([c.name for c in checks], size):
            row: dict[str, Any] = {"checks": list(members)}
            if size == 1:
                check = next(c for c in checks if c.name == members[0])
                row["auroc"] = auroc(first_scores[check.name], labels)
                row["threshold"] = check.threshold
                row["threshold_source"] = check.threshold_source
                row["cross_fitted_thresholds"] = [fitted[check.name][0], fitted[check.name][1]]
            for how, by_check in passes.items():
                first = [all(t) for t in zip(*(by_check[m][0] for m in members), strict=True)]
                final = [all(t) for t in zip(*(by_check[m][1] for m in members), strict=True)]
                row[how] = {
                    **_operating_point(first, answers),
                    "llm_path": _path_figures(records, finals, final),
                }
            rows.append(row)
    return {
        "first_attempts": len(answers),
        "right": sum(a.right for a in answers),
        "by_kind": {k: sum(a.kind == k for a in answers) for k in sorted({a.kind for a in answers})},
        "right_rejected_budget": RIGHT_REJECTED_BUDGET,
        "llm_path_without_checks": _path_figures(records, finals, [True] * len(finals)),
        "rows": rows,
    }


def _verdicts(answer: LabelledAnswer, threshold: float) -> list[VerificationResult]:
    return [
        VerificationResult(s, score, score >= threshold, "grounding")
        for s, score in zip(answer.sentences, answer.sentence_scores, strict=False)
    ]


def strictness_table(answers: Sequence[LabelledAnswer]) -> dict[str, dict[str, Any]]:
    """Each strictness level applied to the recorded sentence scores of ``answers``."""
    table = {}
    for level in STRICTNESS_LEVELS:
        threshold = strictness_policy(level).grounding_threshold
        counts: dict[str, int] = {}
        for a in answers:
            outcome = apply_strictness(_verdicts(a, threshold), level)
            side = "right" if a.right else "wrong"
            what = (
                "refused"
                if outcome.refused
                else ("trimmed" if outcome.unsupported_claims and level != "loose" else "whole")
            )
            counts[f"{side}_{what}"] = counts.get(f"{side}_{what}", 0) + 1
            if a.right and not outcome.refused and not contains_gold(outcome.answer, list(a.gold_answers)):
                counts["right_lost_gold"] = counts.get("right_lost_gold", 0) + 1
            counts["sentences"] = counts.get("sentences", 0) + len(a.sentences)
            counts["sentences_dropped"] = counts.get("sentences_dropped", 0) + (
                len(outcome.unsupported_claims) if level != "loose" else 0
            )
        table[level] = {"threshold": threshold, **counts}
    return table


def latency_figures(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Per-question latency of the questions that reached the LLM, and of all questions."""
    return {
        "per_llm_question_ms": percentiles([r["latency_ms"] for r in records if r.get("reached_llm")]),
        "per_question_ms": percentiles([r["latency_ms"] for r in records]),
    }


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSONL answer record (gzipped when the name ends in .gz)."""
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def grounding_check(strictness: str = "balanced") -> Check:
    return Check(
        "grounding",
        grounding_scores,
        GROUNDING_THRESHOLDS[strictness],
        f"the pipeline's grounding threshold at {strictness}",
    )
