"""The learned checks the agent's gates ask: each a model folder, a threshold and a score, loaded lazily.

:class:`LearnedAnswerability` (question, evidence), :class:`LearnedGuard` (evidence, answer),
:class:`ReaderCheck` (question, evidence, answer) and :class:`AnswerCheck` (question, short answer,
quoted sentence). :mod:`verityrag.checks.registry` loads them by the trace stage they run at.
Verifying an answer's sentences is :mod:`verityrag.verify`'s; choosing thresholds,
:mod:`verityrag.thresholds`'.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.checks.answer_check import AnswerCheck as AnswerCheck
    from verityrag.checks.answerability import LearnedAnswerability as LearnedAnswerability
    from verityrag.checks.guard import LearnedGuard as LearnedGuard
    from verityrag.checks.reader_check import ReaderCheck as ReaderCheck
    from verityrag.checks.registry import CHECK_ATTRIBUTES as CHECK_ATTRIBUTES
    from verityrag.checks.registry import load_check as load_check
    from verityrag.checks.registry import requested_checks as requested_checks
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.checks.answer_check": ("AnswerCheck",),
            "verityrag.checks.answerability": ("LearnedAnswerability",),
            "verityrag.checks.guard": ("LearnedGuard",),
            "verityrag.checks.reader_check": ("ReaderCheck",),
            "verityrag.checks.registry": ("CHECK_ATTRIBUTES", "load_check", "requested_checks"),
        },
    )

__all__ = [
    "CHECK_ATTRIBUTES",
    "AnswerCheck",
    "LearnedAnswerability",
    "LearnedGuard",
    "ReaderCheck",
    "load_check",
    "requested_checks",
]
