"""The learned checks by the trace stage they run at, and loading one from its model folder.

Four checks trained here can run inside the agent: the answer check (question, short answer,
its quoted sentence), the answerability gate (question, evidence), Verity-Guard (evidence,
answer) and the reader check (question, evidence, answer). ``Settings.answer_check`` /
``answerability_check`` / ``guard_check`` / ``reader_check`` attach them
when the pipeline is built, each from the folder the settings name (``Settings.models_dir`` and
the checks' ``*_dir`` fields); a model folder that is incomplete stops the start with an error
naming the missing files and the ``make`` target that builds them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag.config import Settings

if TYPE_CHECKING:
    from verityrag.checks.answer_check import AnswerCheck
    from verityrag.checks.answerability import LearnedAnswerability
    from verityrag.checks.guard import LearnedGuard
    from verityrag.checks.reader_check import ReaderCheck

    LearnedCheck = AnswerCheck | LearnedAnswerability | LearnedGuard | ReaderCheck

#: The checks in the order the agent runs them: the trace stage name and the pipeline attribute.
CHECK_ATTRIBUTES = {
    "answer_check": "answer_check",
    "answerability": "answerability",
    "guard": "answer_guard",
    "reader": "reader_check",
}

#: The answer source whose threshold the guard's folder records for LLM-written answers
#: (fitted on gemma-3-270m's labelled answers, python -m verityrag.train gemma-answers).
LLM_ANSWER_SOURCE = "gemma"


def load_check(
    stage: str, threshold: float | None = None, llm_answers: bool = False, settings: Settings | None = None
) -> LearnedCheck:
    """The learned check for a trace ``stage``, from the folder ``settings`` name (None: the
    defaults, under the checkout's guard_work/), its model folder checked, its session loaded and
    its threshold read (a folder that records none fails here, not on the first query).

    ``llm_answers``: the answers come from an LLM, so the guard, when no threshold is given,
    takes the one its folder recorded for LLM-written answers (:data:`LLM_ANSWER_SOURCE`)
    rather than its HaluEval default, which flags most of a small LLM's supported answers.
    """
    settings = settings if settings is not None else Settings()
    check: LearnedCheck
    if stage == "answer_check":
        from verityrag.checks.answer_check import AnswerCheck

        check = AnswerCheck.from_settings(settings, threshold=threshold)
    elif stage == "answerability":
        from verityrag.checks.answerability import LearnedAnswerability

        check = LearnedAnswerability.from_settings(settings, threshold=threshold)
    elif stage == "guard":
        from verityrag.checks.guard import LearnedGuard

        source = LLM_ANSWER_SOURCE if llm_answers and threshold is None else None
        check = LearnedGuard.from_settings(settings, threshold=threshold, answers_from=source)
    elif stage == "reader":
        from verityrag.checks.reader_check import ReaderCheck

        check = ReaderCheck.from_settings(settings, threshold=threshold)
    else:
        raise ValueError(f"unknown learned check {stage!r}; known: {', '.join(CHECK_ATTRIBUTES)}")
    check.warm_up()
    _ = check.threshold
    return check


def requested_checks(settings: Settings, llm_answers: bool = False) -> dict[str, float | None]:
    """The stages ``settings`` turns on, each with its fixed threshold (None: not fixed).

    ``llm_answers``: an LLM writes the answers, so the reader check is on unless
    ``settings.llm_reader_check`` is off (without a reader-check model it reads with the
    shipped extractive reader: :func:`verityrag.checks.reader_check.default_reader_dir`).
    """
    reader = settings.reader_check or (llm_answers and settings.llm_reader_check)
    wanted = {
        # It reads the reader's short answer: without the reader there is none to check.
        "answer_check": (settings.answer_check and settings.reader, settings.answer_check_threshold),
        "answerability": (settings.answerability_check, settings.answerability_threshold),
        "guard": (settings.guard_check, settings.guard_threshold),
        "reader": (reader, settings.reader_threshold),
    }
    return {stage: threshold for stage, (on, threshold) in wanted.items() if on}
