"""What kind of answer a question asks for, and whether a span is of that kind."""

from __future__ import annotations

import pytest

from verityrag.text.answer_types import AnswerType, expected_type, matches

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How much does the Halcyon Pro kettle cost?", AnswerType.MONEY),
        ("What is the price of a ticket?", AnswerType.MONEY),
        ("How many people live in Warsaw?", AnswerType.NUMBER),
        ("What percentage of voters agreed?", AnswerType.NUMBER),
        ("How long did the siege last?", AnswerType.QUANTITY),
        ("In which year did Mara Lind found the company?", AnswerType.DATE),
        ("When did the company open its first shop?", AnswerType.DATE),
        ("Who founded the company?", AnswerType.PERSON),
        ("Where is the factory?", AnswerType.PLACE),
        ("What does the kettle hold?", AnswerType.ANY),
        # A "when" clause before another question word asks that question, not for a date.
        ("When John Fox left as head coach, who replaced him?", AnswerType.ANY),
        ("thanks!", AnswerType.ANY),
    ],
)
def test_expected_type_reads_the_question_words(question: str, kind: AnswerType) -> None:
    assert expected_type(question) is kind


@pytest.mark.parametrize(
    ("span", "kind", "ok"),
    [
        ("1.7 litres", AnswerType.MONEY, False),  # a capacity, not a price
        ("49.90", AnswerType.MONEY, True),
        ("brushed steel", AnswerType.MONEY, False),
        ("$49", AnswerType.MONEY, True),
        ("free", AnswerType.MONEY, True),
        ("Mara Lind", AnswerType.NUMBER, False),
        ("three hundred", AnswerType.NUMBER, True),
        ("1891", AnswerType.DATE, True),
        ("the spring of that year", AnswerType.DATE, True),
        ("after the war", AnswerType.DATE, True),
        ("Mara Lind", AnswerType.DATE, False),
        ("almost a month", AnswerType.QUANTITY, True),
        ("1891", AnswerType.PERSON, False),
        ("10 July 1856", AnswerType.PLACE, False),
        ("Mara Lind", AnswerType.PERSON, True),
        ("anything at all", AnswerType.ANY, True),
    ],
)
def test_matches_refuses_only_the_plainly_wrong_kind(span: str, kind: AnswerType, ok: bool) -> None:
    assert matches(span, kind) is ok
