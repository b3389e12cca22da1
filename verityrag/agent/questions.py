"""The checks a question (and a labelled one) passes before it reaches the agent, naming the field."""

from __future__ import annotations

from collections.abc import Sequence, Set

from verityrag.errors import InvalidInputError
from verityrag.text.unicode import check_utf8


def check_question(field: str, question: object, max_chars: int) -> None:
    """The checks ``query`` runs on a question, naming ``field``."""
    if not isinstance(question, str):
        raise InvalidInputError(field, f"must be a string, got {type(question).__name__}")
    if not question.strip():
        raise InvalidInputError(field, "is empty")
    if len(question) > max_chars:
        raise InvalidInputError(field, f"is {len(question):,} characters; the limit is {max_chars:,}")
    # A lone surrogate (half an emoji) passed, and the result could not be serialised.
    check_utf8(field, question)


def check_labelled(labelled: Sequence[object], max_chars: int, field: str = "questions") -> None:
    """Each item is ``(question, gold answers)``: a question ``query`` accepts and a list of strings.

    A bare string as the answers is a ``Sequence[str]`` too: its characters were matched as the
    gold answers ("1", "7", "7", "6" for "1776", never whole tokens of the evidence), so the question
    was labelled wrong and calibrate fitted the gate on wrong labels or failed far from the cause.
    """
    for i, item in enumerate(labelled):
        if not isinstance(item, Sequence) or isinstance(item, str) or len(item) != 2:
            raise InvalidInputError(f"{field}[{i}]", "must be a (question, answers) pair")
        question, answers = item
        check_question(f"{field}[{i}].question", question, max_chars)
        if isinstance(answers, str | bytes) or not isinstance(answers, Sequence | Set):
            raise InvalidInputError(
                f"{field}[{i}].answers",
                f"must be a list of answer strings ([] if the corpus cannot answer), got {type(answers).__name__}",
            )
        bad = next((a for a in answers if not isinstance(a, str)), None)
        if bad is not None:
            raise InvalidInputError(
                f"{field}[{i}].answers", f"must hold strings only, got {type(bad).__name__}"
            )
