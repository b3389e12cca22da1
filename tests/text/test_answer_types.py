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
        # How people ask a price list.
        ("How much is a flat white?", AnswerType.MONEY),
        ("What's the hourly rate for the Loom Room?", AnswerType.MONEY),
        ("What do you charge for an extra adult?", AnswerType.MONEY),
        ("What does the Saturday counter job pay?", AnswerType.MONEY),
        ("What's the monthly payroll charge for each member of staff?", AnswerType.MONEY),
        ("How much is the sieve method of gas production used?", AnswerType.QUANTITY),
        ("How much notice do I need to give?", AnswerType.QUANTITY),
        ("What do statements from the member in charge of the bill indicate?", AnswerType.ANY),
        ("What is the comparison in price between private schools and public?", AnswerType.ANY),
        # The question's own question word decides, not one in a clause after it.
        ("Which header tells me how many requests I've got left this minute?", AnswerType.ANY),
        ("Why does Doctor Who's TARDIS always look the same?", AnswerType.ANY),
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
        ("70%", AnswerType.MONEY, True),  # a share of the full price
        ("50% of the estimate", AnswerType.MONEY, True),
        ("Thursdays", AnswerType.DATE, True),
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
