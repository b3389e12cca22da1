"""The learned checks: small objects with ``score``, a threshold and ``warm_up()``.

- :class:`LearnedAnswerability` (question, evidence): can the evidence answer the question?
- :class:`LearnedGuard` (evidence, answer): does the evidence support the answer?
- :class:`ReaderCheck` (question, evidence, answer): does the answer say what a reader finds?
- :class:`LearnedNLI`: the NLI model trained here, as a scorer for the verifier stack.

:mod:`verityrag.checks.registry` loads them by stage; :mod:`verityrag.checks.thresholds`
chooses their thresholds on labelled questions. Models load lazily, never at import.
"""

from verityrag.checks.answerability import LearnedAnswerability
from verityrag.checks.guard import LearnedGuard
from verityrag.checks.nli import LearnedNLI
from verityrag.checks.reader_check import ReaderCheck
from verityrag.checks.registry import CHECK_ATTRIBUTES, load_check, requested_checks
from verityrag.checks.thresholds import ThresholdFit, fit_thresholds

__all__ = [
    "CHECK_ATTRIBUTES",
    "LearnedAnswerability",
    "LearnedGuard",
    "LearnedNLI",
    "ReaderCheck",
    "ThresholdFit",
    "fit_thresholds",
    "load_check",
    "requested_checks",
]
