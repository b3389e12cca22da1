"""The learned checks a pipeline attaches from its settings, and how their thresholds are chosen.

Three checks trained here can run inside the agent: the answerability gate (question,
evidence), Verity-Guard (evidence, answer) and the reader check (question, evidence,
answer). ``Settings.answerability_check`` / ``guard_check`` / ``reader_check`` attach
them when the pipeline is built (:func:`attach_from_settings`); a model folder that is
incomplete stops the start with an error naming the missing files and the ``make``
target that builds them.

A check's threshold comes from, first to last:

1. the setting (``answerability_threshold`` ...): ``"settings"``;
2. :func:`fit_thresholds`, which ``VerityRAGPipeline.calibrate`` runs on its labelled
   questions when the pipeline answers extractively: ``"calibration"``;
3. the model folder's ``metadata.json`` (fitted when the model was built, on that
   model's own validation data; for an LLM pipeline's guard, the one fitted on a small
   LLM's answers): ``"metadata"``.

``calibrate`` does not fit for a pipeline with an LLM answer strategy: the fit runs every
labelled question through the whole agent once per check, which would call the LLM
that many times. The guard's and the reader's recorded thresholds were fitted on
gemma-3-270m's labelled answers (the answerability gate's on its own validation pairs: it
runs before any answer exists); to fit on your LLM's, call :func:`fit_thresholds` yourself.

The main eval fits its thresholds with the same function (``calibrate`` runs it; the eval
only reports the sweeps, :mod:`verityrag.crossenc.eval_sweep`). Two rules:

- **Sequential** (the guard and the reader; the answerability gate when the joint rule
  cannot run): run the answerable questions once with the check at threshold 0 (it
  scores every question that reaches it and blocks none), read each score from the trace,
  and keep the highest threshold of :data:`SWEEP_THRESHOLDS` whose coverage stays within
  :data:`MAX_COVERAGE_LOSS` of the check-off coverage. A check only ever turns an answer
  into an abstention, so one pass gives every threshold's coverage exactly.
- **Joint** (the answerability gate, with the sufficiency gate): the lexical sufficiency
  gate refuses answerable questions a strong answerability model would pass, and the
  model can stop unanswerable ones itself, so the two thresholds are chosen together
  (:func:`choose_joint_thresholds`). Every labelled question, answerable or not, runs
  once with both gates open; each takes the sufficiency gate's *out-of-fold* probability
  (the gate was fitted on these questions). Among the pairs of :data:`SUFFICIENCY_GRID`
  x :data:`SWEEP_THRESHOLDS` whose abstention on the unanswerable questions meets
  ``Settings.abstention_target`` and whose coverage stays within
  :data:`MAX_COVERAGE_LOSS` of the sufficiency gate alone, the highest answerability
  threshold wins, then the highest coverage. One pass is exact only with one attempt
  per question, so the joint rule needs calibration to have turned reformulation off,
  and unanswerable questions among the labelled ones; otherwise the sequential rule
  runs. The sufficiency threshold it picks applies only while that answerability check
  is attached (``VerityRAGPipeline.sufficiency_threshold``); the gate's own threshold,
  which holds without the check, is unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from verityrag.text.answers import contains_gold

if TYPE_CHECKING:
    from verityrag.config import Settings
    from verityrag.crossenc.answerability import LearnedAnswerability
    from verityrag.guard import LearnedGuard
    from verityrag.pipeline import VerityRAGPipeline
    from verityrag.reader_check import ReaderCheck

    LearnedCheck = LearnedAnswerability | LearnedGuard | ReaderCheck

#: The checks in the order the agent runs them: the trace stage name and the pipeline attribute.
CHECK_ATTRIBUTES = {"answerability": "answerability", "guard": "answer_guard", "reader": "answer_reader"}

#: The answer source whose threshold the guard's folder records for LLM-written answers
#: (fitted on gemma-3-270m's labelled answers, scripts/guard_gemma_answers.py).
LLM_ANSWER_SOURCE = "gemma"

#: Probabilities; dense near 0 because a model whose scores sit low (the extractive-QA
#: answerability model's null-score difference: 10% of answerable validation pairs under
#: 0.0025) would otherwise lose most of its coverage between the first two steps.
SWEEP_THRESHOLDS = (0.0, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: The most coverage (answerable questions answered) a check may cost on calibration.
MAX_COVERAGE_LOSS = 0.05
#: Sufficiency thresholds the joint rule pairs with each answerability threshold (the gate's
#: own threshold is always tried too).
SUFFICIENCY_GRID = (0.0, *(round(0.05 * i, 2) for i in range(1, 20)))


@dataclass(frozen=True, slots=True)
class GateOutcome:
    """One question run with a check at threshold 0."""

    kind: str  # "answerable", or a kind of unanswerable question
    answered: bool  # with the check at threshold 0
    correct: bool
    score: float | None  # None: the question never reached the check
    latency_ms: float
    # The sufficiency gate's probability of the attempt the agent answered from (None: no
    # attempt); a caller may put the gate's out-of-fold probability here instead.
    sufficiency: float | None = None


def load_check(stage: str, threshold: float | None = None, llm_answers: bool = False) -> LearnedCheck:
    """The learned check for a trace ``stage``, its model folder checked, its session loaded and
    its threshold read (a folder that records none fails here, not on the first query).

    ``llm_answers``: the answers come from an LLM, so the guard, when no threshold is given,
    takes the one its folder recorded for LLM-written answers (:data:`LLM_ANSWER_SOURCE`)
    rather than its HaluEval default, which flags most of gemma's supported answers (62.5% of
    them for the session-15 guard).
    """
    check: LearnedCheck
    if stage == "answerability":
        from verityrag.crossenc.answerability import LearnedAnswerability

        check = LearnedAnswerability(threshold=threshold)
    elif stage == "guard":
        from verityrag.guard import LearnedGuard

        source = LLM_ANSWER_SOURCE if llm_answers and threshold is None else None
        check = LearnedGuard(threshold=threshold, answers_from=source)
    elif stage == "reader":
        from verityrag.reader_check import ReaderCheck

        check = ReaderCheck(threshold=threshold)
    else:
        raise ValueError(f"unknown learned check {stage!r}; known: {', '.join(CHECK_ATTRIBUTES)}")
    check.warm_up()
    _ = check.threshold
    return check


def requested_checks(settings: Settings) -> dict[str, float | None]:
    """The stages ``settings`` turns on, each with its fixed threshold (None: not fixed)."""
    wanted = {
        "answerability": (settings.answerability_check, settings.answerability_threshold),
        "guard": (settings.guard_check, settings.guard_threshold),
        "reader": (settings.reader_check, settings.reader_threshold),
    }
    return {stage: threshold for stage, (on, threshold) in wanted.items() if on}


def attach_from_settings(pipeline: VerityRAGPipeline, settings: Settings) -> dict[str, str]:
    """Attach the checks ``settings`` turns on; returns where each one's threshold comes from."""
    sources = {}
    llm_answers = pipeline.answer_strategy is not None
    for stage, threshold in requested_checks(settings).items():
        setattr(pipeline, CHECK_ATTRIBUTES[stage], load_check(stage, threshold, llm_answers))
        sources[stage] = "settings" if threshold is not None else "metadata"
    return sources


def gate_outcomes(
    pipeline: VerityRAGPipeline,
    questions: Sequence[tuple[str, str, Sequence[str]]],
    stage: str,
    progress: bool = False,
) -> list[GateOutcome]:
    """Run ``(question, kind, gold answers)`` through the pipeline; read ``stage``'s score from each trace."""
    from tqdm.auto import tqdm

    out = []
    for question, kind, answers in tqdm(questions, desc=f"{stage} sweep", unit="q", disable=not progress):
        t0 = time.perf_counter()
        result = pipeline.query(question)
        ms = (time.perf_counter() - t0) * 1000
        scores = [float(s.details["score"]) for s in result.trace if s.stage == stage]
        # The agent answers from its most probable attempt (AgentController.search).
        probabilities = [
            float(s.details["probability"]) for s in result.trace if s.stage.startswith("attempt_")
        ]
        answer = None if result.abstained else result.answer
        correct = bool(answer) and kind == "answerable" and contains_gold(answer or "", answers)
        score = scores[-1] if scores else None
        sufficiency = max(probabilities) if probabilities else None
        out.append(GateOutcome(kind, not result.abstained, correct, score, ms, sufficiency))
    return out


def _rate(hits: int, total: int) -> float | None:
    return hits / total if total else None


def sweep_row(
    outcomes: Sequence[GateOutcome], threshold: float, sufficiency: float | None = None
) -> dict[str, Any]:
    """The figures the outcomes would give with the check at ``threshold`` and, if given, the
    sufficiency gate at ``sufficiency`` (outcomes run with it at 0; no reformulation)."""

    def answered(o: GateOutcome) -> bool:
        if sufficiency is not None and (o.sufficiency is None or o.sufficiency < sufficiency):
            return False
        return o.answered and (o.score is None or o.score >= threshold)

    answerable = [o for o in outcomes if o.kind == "answerable"]
    refuse = [o for o in outcomes if o.kind != "answerable"]
    in_domain = [o for o in outcomes if o.kind == "unanswerable_in_domain"]
    return {
        "threshold": threshold,
        "coverage": _rate(sum(answered(o) for o in answerable), len(answerable)),
        "answered_and_correct": _rate(sum(answered(o) and o.correct for o in answerable), len(answerable)),
        "correct_abstention": _rate(sum(not answered(o) for o in refuse), len(refuse)),
        "in_domain_unanswerable_abstention": _rate(sum(not answered(o) for o in in_domain), len(in_domain)),
        "held_out_abstention": _rate(
            sum(not answered(o) for o in outcomes if o.kind == "held_out"),
            sum(o.kind == "held_out" for o in outcomes),
        ),
        # Measured with the check scoring every question that reached it; abstaining at a higher
        # threshold only skips generation and grounding after it (well under 1 ms here).
        "latency_p50_ms": float(np.percentile([o.latency_ms for o in outcomes], 50)) if outcomes else None,
    }


def choose_threshold(
    calibration: Sequence[GateOutcome],
    max_coverage_loss: float = MAX_COVERAGE_LOSS,
    sufficiency: float | None = None,
) -> float:
    """Highest sweep threshold whose calibration coverage is within ``max_coverage_loss`` of check-off
    (with the sufficiency gate at ``sufficiency`` when given, as in :func:`sweep_row`)."""
    base = sweep_row(calibration, 0.0, sufficiency)["coverage"] or 0.0
    ok = [
        t
        for t in SWEEP_THRESHOLDS
        if (sweep_row(calibration, t, sufficiency)["coverage"] or 0.0) >= base - max_coverage_loss
    ]
    return max(ok)


@dataclass(frozen=True, slots=True)
class JointChoice:
    """The (sufficiency, answerability) pair the joint rule picked, and what it was held to."""

    sufficiency: float
    answerability: float
    coverage_floor: float  # calibration coverage of the sufficiency gate alone, less MAX_COVERAGE_LOSS
    met: bool  # False: no pair met the abstention target; the sequential pick is returned


def choose_joint_thresholds(
    calibration: Sequence[GateOutcome],
    reference: float,
    target: float,
    max_coverage_loss: float = MAX_COVERAGE_LOSS,
) -> JointChoice:
    """The joint rule (module docstring) on outcomes run with both gates open.

    ``reference`` is the sufficiency gate's own threshold; ``target`` the abstention the
    unanswerable calibration questions must keep. When no pair meets it (the gate alone
    misses it on these outcomes), the sequential choice at ``reference`` is returned.
    """
    floor = (sweep_row(calibration, 0.0, reference)["coverage"] or 0.0) - max_coverage_loss
    ok = []
    for s in sorted({*SUFFICIENCY_GRID, reference}):
        for a in SWEEP_THRESHOLDS:
            row = sweep_row(calibration, a, s)
            coverage = row["coverage"] or 0.0
            if (row["correct_abstention"] or 0.0) >= target and coverage >= floor:
                ok.append((a, coverage, s))
    if not ok:
        sequential = choose_threshold(calibration, max_coverage_loss, reference)
        return JointChoice(reference, sequential, floor, met=False)
    # The strictest answerability threshold, then the most coverage, then the stricter sufficiency.
    a, _, s = max(ok)
    return JointChoice(s, a, floor, met=True)


@dataclass(frozen=True, slots=True)
class PairedSufficiency:
    """A sufficiency threshold fitted together with one answerability check (the joint rule):
    the agent applies it while that very check is attached, and the gate's own threshold otherwise."""

    check: object
    threshold: float


def fit_thresholds(
    pipeline: VerityRAGPipeline,
    labelled: Sequence[tuple[str, Sequence[str]]],
    stages: Sequence[str],
    sufficiency_oof: Sequence[float] | None = None,
) -> dict[str, dict[str, Any]]:
    """Choose each of ``stages``' thresholds on the labelled ``(question, gold answers)``.

    The checks are fitted in the agent's order, each with the ones fitted before it at their
    new thresholds and the ones still to fit detached (as the main eval sweeps them); checks
    not in ``stages`` (a threshold fixed in the settings) stay as they are. The answerability
    gate takes the joint rule when ``sufficiency_oof`` (the sufficiency gate's out-of-fold
    probability of each labelled question, in order; ``calibrate`` passes it when it turned
    reformulation off) is given and some labelled questions are unanswerable; every other
    check takes the sequential rule on the answerable questions. A check no question
    reaches keeps its threshold.
    """
    labelled = list(labelled)
    if sufficiency_oof is not None and len(sufficiency_oof) != len(labelled):
        raise ValueError(f"{len(sufficiency_oof)} out-of-fold probabilities for {len(labelled)} questions")
    answerable = [(q, "answerable", answers) for q, answers in labelled if answers]
    joint = sufficiency_oof is not None and len(answerable) < len(labelled)
    order = [s for s in CHECK_ATTRIBUTES if s in stages]
    held = {s: getattr(pipeline, CHECK_ATTRIBUTES[s]) for s in order}
    kept = {s: held[s].threshold for s in order}
    for s in order:
        setattr(pipeline, CHECK_ATTRIBUTES[s], None)
    if "answerability" in order:
        pipeline.paired_sufficiency = None
    report: dict[str, dict[str, Any]] = {}
    try:
        for stage in order:
            check = held[stage]
            setattr(pipeline, CHECK_ATTRIBUTES[stage], check)
            if stage == "answerability" and joint:
                assert sufficiency_oof is not None
                report[stage] = _fit_jointly(pipeline, check, labelled, sufficiency_oof, kept[stage])
                continue
            check.threshold = 0.0
            outcomes = gate_outcomes(pipeline, answerable, stage)
            reached = sum(o.score is not None for o in outcomes)
            check.threshold = choose_threshold(outcomes) if reached else kept[stage]
            report[stage] = {
                "threshold": check.threshold,
                "fitted": bool(reached),
                "rule": "sequential",
                "questions": len(outcomes),
                "questions_reaching_check": reached,
                "coverage_check_off": sweep_row(outcomes, 0.0)["coverage"],
                "coverage": sweep_row(outcomes, check.threshold)["coverage"],
            }
    finally:  # also on an error half-way: every check back, unfitted ones at their old threshold
        for s in order:
            if s not in report:
                held[s].threshold = kept[s]
                if s == "answerability":
                    pipeline.paired_sufficiency = None
            setattr(pipeline, CHECK_ATTRIBUTES[s], held[s])
    return report


def joint_outcomes(
    pipeline: VerityRAGPipeline,
    check: LearnedCheck,
    questions: Sequence[tuple[str, str, Sequence[str]]],
    sufficiency_oof: Sequence[float] | None = None,
) -> list[GateOutcome]:
    """Run ``(question, kind, gold answers)`` once with both gates open: ``check`` attached as the
    answerability gate at threshold 0, the sufficiency gate at 0 while it is. ``sufficiency_oof``
    replaces each outcome's sufficiency probability (the gate's out-of-fold probability of a
    question it was fitted on); without it the trace's probability stands. Leaves ``check``
    attached at threshold 0 and no sufficiency threshold paired with it."""
    setattr(pipeline, CHECK_ATTRIBUTES["answerability"], check)
    check.threshold = 0.0
    pipeline.paired_sufficiency = PairedSufficiency(check, 0.0)
    try:
        outcomes = gate_outcomes(pipeline, questions, "answerability")
    finally:
        pipeline.paired_sufficiency = None
    if sufficiency_oof is None:
        return outcomes
    return [replace(o, sufficiency=float(p)) for o, p in zip(outcomes, sufficiency_oof, strict=True)]


def _fit_jointly(
    pipeline: VerityRAGPipeline,
    check: LearnedCheck,
    labelled: Sequence[tuple[str, Sequence[str]]],
    sufficiency_oof: Sequence[float],
    kept: float,
) -> dict[str, Any]:
    """The joint rule for the answerability ``check`` (attached); pairs the sufficiency threshold with it."""
    reference = float(pipeline.gate.threshold_)
    questions = [(q, "answerable" if answers else "unanswerable", answers) for q, answers in labelled]
    outcomes = joint_outcomes(pipeline, check, questions, sufficiency_oof)
    reached = sum(o.score is not None for o in outcomes)
    if not reached:
        check.threshold = kept
        return {
            "threshold": kept,
            "fitted": False,
            "rule": "joint",
            "questions": len(outcomes),
            "questions_reaching_check": 0,
        }
    target = pipeline.settings.abstention_target
    choice = choose_joint_thresholds(outcomes, reference, target)
    check.threshold = choice.answerability
    if choice.met:
        pipeline.paired_sufficiency = PairedSufficiency(check, choice.sufficiency)
    alone, paired = (
        sweep_row(outcomes, 0.0, reference),
        sweep_row(outcomes, choice.answerability, choice.sufficiency),
    )
    return {
        "threshold": choice.answerability,
        "fitted": True,
        "rule": "joint" if choice.met else "sequential (no pair met the abstention target)",
        "questions": len(outcomes),
        "questions_reaching_check": reached,
        "sufficiency_threshold": choice.sufficiency,
        "sufficiency_threshold_alone": reference,
        "abstention_target": target,
        "coverage_floor": choice.coverage_floor,
        "coverage_check_off": alone["coverage"],
        "abstention_check_off": alone["correct_abstention"],
        "coverage": paired["coverage"],
        "abstention": paired["correct_abstention"],
    }
