"""How the learned checks' thresholds are chosen on labelled questions.

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
only reports the sweeps, :mod:`verityrag.eval.gate_sweep`). Two rules:

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

Nothing here touches a pipeline: the fits run questions through a *query callable* that
attaches exactly the checks it is given (:data:`QueryWith`), and return the thresholds for
the caller to set.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from verityrag.checks.registry import CHECK_ATTRIBUTES
from verityrag.text.answers import contains_gold

if TYPE_CHECKING:
    from verityrag.config import Settings
    from verityrag.types import QueryResult


class ScoredCheck(Protocol):
    """What the agent calls on a learned check: a threshold and a score (arguments by stage)."""

    threshold: float

    def score(self, *args: str) -> float: ...


#: ``query(question)``: one question through the agent as it is configured.
Query = Callable[[str], "QueryResult"]
#: ``query_with(question, attached, sufficiency)``: one question through the agent with exactly the
#: learned checks in ``attached`` (by stage; a stage absent is detached) and the sufficiency gate at
#: ``sufficiency`` (None: the gate's own threshold).
QueryWith = Callable[[str, Mapping[str, ScoredCheck], "float | None"], "QueryResult"]


def bind(query_with: QueryWith, attached: Mapping[str, ScoredCheck], sufficiency: float | None) -> Query:
    """``query_with`` with these checks and this sufficiency threshold, as a plain :data:`Query`."""
    return lambda question: query_with(question, attached, sufficiency)


class AtThreshold:
    """A check served at another threshold: sweeps run a check at 0 without touching it."""

    def __init__(self, check: ScoredCheck, threshold: float) -> None:
        self.check = check
        self.threshold = threshold

    def score(self, *args: str) -> float:
        return self.check.score(*args)


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


def gate_outcomes(
    query: Query,
    questions: Sequence[tuple[str, str, Sequence[str]]],
    stage: str,
    progress: bool = False,
) -> list[GateOutcome]:
    """Run ``(question, kind, gold answers)`` through ``query``; read ``stage``'s score from each trace."""
    from tqdm.auto import tqdm

    out = []
    for question, kind, answers in tqdm(questions, desc=f"{stage} sweep", unit="q", disable=not progress):
        t0 = time.perf_counter()
        result = query(question)
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


@dataclass(frozen=True)
class ThresholdFit:
    """What :func:`fit_thresholds` chose: a threshold per fitted stage, and the sufficiency
    threshold to pair with the answerability check (None: the gate's own; only meaningful
    when ``answerability`` was among the stages fitted)."""

    thresholds: dict[str, float]
    paired_sufficiency: float | None
    report: dict[str, dict[str, Any]]


def fit_thresholds(
    query_with: QueryWith,
    checks: Mapping[str, ScoredCheck],
    labelled: Sequence[tuple[str, Sequence[str]]],
    stages: Sequence[str],
    sufficiency_oof: Sequence[float] | None = None,
    sufficiency_reference: float | None = None,
    abstention_target: float | None = None,
    paired_sufficiency: float | None = None,
) -> ThresholdFit:
    """Choose each of ``stages``' thresholds on the labelled ``(question, gold answers)``.

    ``checks``: every learned check attached, by stage; those not in ``stages`` keep their
    thresholds (fixed in the settings) and stay attached throughout. The stages are fitted in
    the agent's order, each with the ones fitted before it at their new thresholds and the ones
    still to fit detached (as the main eval sweeps them). The answerability gate takes the
    joint rule when ``sufficiency_oof`` (the sufficiency gate's out-of-fold probability of each
    labelled question, in order) is given with ``sufficiency_reference`` (the gate's own
    threshold) and ``abstention_target``, and some labelled questions are unanswerable; every
    other check takes the sequential rule on the answerable questions. A check no question
    reaches keeps its threshold. ``paired_sufficiency``: the threshold in force with a fixed
    answerability check (None: the gate's own). Nothing is changed: the caller sets the
    returned thresholds.
    """
    labelled = list(labelled)
    if sufficiency_oof is not None and len(sufficiency_oof) != len(labelled):
        raise ValueError(f"{len(sufficiency_oof)} out-of-fold probabilities for {len(labelled)} questions")
    answerable = [(q, "answerable", answers) for q, answers in labelled if answers]
    joint = (
        sufficiency_oof is not None
        and sufficiency_reference is not None
        and abstention_target is not None
        and len(answerable) < len(labelled)
    )
    order = [s for s in CHECK_ATTRIBUTES if s in stages]
    fixed: dict[str, ScoredCheck] = {s: c for s, c in checks.items() if s not in order}
    fitted: dict[str, float] = {}
    paired = None if "answerability" in order else paired_sufficiency
    report: dict[str, dict[str, Any]] = {}
    for stage in order:
        check = checks[stage]
        before: dict[str, ScoredCheck] = {s: AtThreshold(checks[s], t) for s, t in fitted.items()}
        attached = {**fixed, **before}
        if stage == "answerability" and joint:
            assert sufficiency_oof is not None
            assert sufficiency_reference is not None
            assert abstention_target is not None
            fit, paired = _fit_jointly(
                query_with,
                attached,
                check,
                labelled,
                sufficiency_oof,
                sufficiency_reference,
                abstention_target,
            )
            fitted[stage], report[stage] = fit["threshold"], fit
            continue
        sweep = {**attached, stage: AtThreshold(check, 0.0)}
        outcomes = gate_outcomes(bind(query_with, sweep, paired), answerable, stage)
        reached = sum(o.score is not None for o in outcomes)
        fitted[stage] = choose_threshold(outcomes) if reached else check.threshold
        report[stage] = {
            "threshold": fitted[stage],
            "fitted": bool(reached),
            "rule": "sequential",
            "questions": len(outcomes),
            "questions_reaching_check": reached,
            "coverage_check_off": sweep_row(outcomes, 0.0)["coverage"],
            "coverage": sweep_row(outcomes, fitted[stage])["coverage"],
        }
    return ThresholdFit(fitted, paired, report)


def joint_outcomes(
    query_with: QueryWith,
    attached: Mapping[str, ScoredCheck],
    check: ScoredCheck,
    questions: Sequence[tuple[str, str, Sequence[str]]],
    sufficiency_oof: Sequence[float] | None = None,
) -> list[GateOutcome]:
    """Run ``(question, kind, gold answers)`` once with both gates open: ``check`` as the answerability
    gate at threshold 0 (beside the checks ``attached``), the sufficiency gate at 0.
    ``sufficiency_oof`` replaces each outcome's sufficiency probability (the gate's out-of-fold
    probability of a question it was fitted on); without it the trace's probability stands."""
    sweep = {**attached, "answerability": AtThreshold(check, 0.0)}
    outcomes = gate_outcomes(bind(query_with, sweep, 0.0), questions, "answerability")
    if sufficiency_oof is None:
        return outcomes
    return [replace(o, sufficiency=float(p)) for o, p in zip(outcomes, sufficiency_oof, strict=True)]


def _fit_jointly(
    query_with: QueryWith,
    attached: Mapping[str, ScoredCheck],
    check: ScoredCheck,
    labelled: Sequence[tuple[str, Sequence[str]]],
    sufficiency_oof: Sequence[float],
    reference: float,
    target: float,
) -> tuple[dict[str, Any], float | None]:
    """The joint rule for the answerability ``check``: its report, and the paired sufficiency threshold."""
    questions = [(q, "answerable" if answers else "unanswerable", answers) for q, answers in labelled]
    outcomes = joint_outcomes(query_with, attached, check, questions, sufficiency_oof)
    reached = sum(o.score is not None for o in outcomes)
    if not reached:
        return {
            "threshold": check.threshold,
            "fitted": False,
            "rule": "joint",
            "questions": len(outcomes),
            "questions_reaching_check": 0,
        }, None
    choice = choose_joint_thresholds(outcomes, reference, target)
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
    }, (choice.sufficiency if choice.met else None)


class ChecksOwner(Protocol):
    """What :func:`fit_attached_checks` reads of a pipeline (``VerityRAGPipeline``); it sets nothing."""

    settings: Settings

    @property
    def reformulate(self) -> bool: ...

    @property
    def gate(self) -> Any: ...

    def checks(self) -> dict[str, Any]: ...

    def paired_threshold(self) -> float | None: ...

    def query_with(
        self, question: str, checks: Mapping[str, ScoredCheck], sufficiency_threshold: float | None
    ) -> QueryResult: ...


def fit_attached_checks(
    pipeline: ChecksOwner, labelled: Sequence[tuple[str, Sequence[str]]], stages: Sequence[str]
) -> ThresholdFit:
    """The thresholds of ``pipeline``'s learned checks at ``stages`` (:func:`fit_thresholds`, with
    its gate as fitted), for the pipeline to set."""
    gate = pipeline.gate
    # The joint rule emulates the pair from one pass, which holds only with one attempt per
    # question: the gate's out-of-fold probabilities only without reformulation.
    one_attempt = not pipeline.reformulate or pipeline.settings.max_reformulations == 0
    return fit_thresholds(
        pipeline.query_with,
        pipeline.checks(),
        labelled,
        stages,
        sufficiency_oof=[float(p) for p in gate.oof_probabilities_] if one_attempt else None,
        sufficiency_reference=float(gate.threshold_),
        abstention_target=pipeline.settings.abstention_target,
        paired_sufficiency=pipeline.paired_threshold(),
    )
