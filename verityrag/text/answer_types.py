"""What kind of answer a question asks for, and whether a candidate answer is of that kind.

A reader finds the best span the evidence offers, and for a question about a fact the
evidence lacks that span is often of the wrong kind: "How much does the kettle cost?" over
a text that gives its capacity gets "1.7 litres" at best, or a name. Questions whose
answer must be a number, a sum of money or a date say so in their first words; a span
that holds no number (money: no number or currency; date: no year, month, day or period
word; an amount, a duration or a size: no number and no word of quantity) cannot answer them. Questions asking who or where must not be answered by a bare
number or date. Every other question (what, which, why, how ...) accepts any span: the
rules only refuse what is plainly the wrong kind, never judge the right kind.
"""

from __future__ import annotations

import re
from enum import StrEnum


class AnswerType(StrEnum):
    """The kind of answer a question asks for (``any``: no constraint)."""

    NUMBER = "number"
    QUANTITY = "quantity"
    MONEY = "money"
    DATE = "date"
    PERSON = "person"
    PLACE = "place"
    ANY = "any"


_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
    "sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety "
    "hundred hundreds thousand thousands million millions billion billions trillion dozen dozens "
    "half quarter third double twice triple once single few several couple"
).split()
#: The months by name, and with their short forms: what says a value is a date.
MONTH_NAMES = frozenset(
    "january february march april may june july august september october november december".split()
)
MONTHS = MONTH_NAMES | frozenset("jan feb mar apr jun jul aug sep sept oct nov dec".split())
_DATE_WORDS = (
    "century centuries decade decades year years yearly month months week weeks day days today "
    "spring summer autumn fall winter monday tuesday wednesday thursday friday saturday sunday "
    "mondays tuesdays wednesdays thursdays fridays saturdays sundays weekday weekdays weekend weekends "
    "age era period dynasty reign war bc ad bce ce christmas easter morning evening night "
    "ancient medieval modern early late mid"
).split()
_TEMPORAL_PREPOSITIONS = "after before during since until following prior when while".split()
# Words that state an amount, a duration or a degree without a number ("a week", "minimal").
_QUANTITY_WORDS = (
    "little few much many more less most least minimal maximum minimum all none nothing some any "
    "entire whole rest life lifetime forever long short brief briefly immediately instantly "
    "second seconds minute minutes hour hours mile miles kilometre kilometres kilometer kilometers "
    "metre metres meter meters foot feet inch inches percent per cent degree degrees "
    "small large great huge vast enormous tiny high low distance time"
).split()
_CURRENCY_WORDS = (
    "dollar dollars cent cents euro euros pound pounds sterling yen yuan franc francs mark marks "
    "rupee rupees peso pesos usd eur gbp free complimentary included waived"
).split()
_CURRENCY_SIGNS = "$£€¥₹"
# Units that make a number something other than a sum of money ("1.7 litres").
_NON_MONEY_UNITS = (
    "litre litres liter liters ml millilitre millilitres gallon gallons kg kilogram kilograms gram grams g "
    "lb lbs pound-weight tonne tonnes ton tons km kilometre kilometres kilometer kilometers metre metres "
    "meter meters m cm mm mile miles foot feet ft inch inches degree degrees watt watts w kw "
    "volt volts v hour hours minute minutes second seconds day days week weeks month months year years "
    "people persons employees members cups cup"
).split()

_HAS_DIGIT = re.compile(r"\d")
_WH_WORD = re.compile(r"\b(who|whom|whose|what|which|where|when|why|how)\b")
_CONTRACTED_IS = re.compile(r"\b(what|who|where|when|how)['’]s\b")
_WORD = re.compile(r"[a-z]+")

# (pattern on the lower-cased question, type), first match wins.
_RULES: tuple[tuple[re.Pattern[str], AnswerType], ...] = tuple(
    (re.compile(pattern), kind)
    for pattern, kind in (
        (r"\bhow much\b.*\b(cost|costs|costed|price|priced|pay|paid|worth|charge|charged|fee|fees|spend|spent|sell|sold|earn|earned|salary|budget|fund|funding|money|dollars?|euros?|pounds?)\b", AnswerType.MONEY),
        # "How much is a flat white?": in documents people ask about, what a thing "is" is its
        # price, unless a participle follows ("how much is used"); "how much of", "how much
        # notice" ask for a share or a time (quantity, below).
        (r"\bhow much (for|extra|deposit|compensation)\b|\bhow much (is|are|was|were)\b(?!.*\b(used|known|given|made|left|lost|taken|done|\w{3,}ed)\b)", AnswerType.MONEY),
        (r"\bwhat (is|was|are|were) the (price|cost|fee|salary|budget|value)\b", AnswerType.MONEY),
        (r"\bwhat (is|was|are|were|will be) (the|a|an) ((?!(in|of|between|for) )[\w-]+ ){0,3}(price|prices|cost|costs|fee|fees|charge|fare|fares|deposit|fine|surcharge|excess|rent|(hourly|daily|weekly|monthly|nightly|annual|yearly) rate)\b", AnswerType.MONEY),
        (r"\bwhat (do|does|did|will|would) [\w\s'-]*?\b(cost|(?<!in )charge)\b(?! of)", AnswerType.MONEY),
        (r"\bwhat (do|does|did|will|would) [\w\s'-]*?\bpay\?*$", AnswerType.MONEY),
        (r"\bhow (many|old)\b", AnswerType.NUMBER),
        (r"\bwhat (percentage|percent|number|population)\b", AnswerType.NUMBER),
        (r"\bhow (much|long|far|tall|high|deep|wide|large|big|fast|heavy|often)\b", AnswerType.QUANTITY),
        (r"\bwhat (proportion|fraction|amount|temperature)\b", AnswerType.QUANTITY),
        (r"\b(in |during |by )?(what|which) (year|years|century|decade|month|day|date|season)\b", AnswerType.DATE),
        (r"^(since when|until when)\b|^when (did|does|do|was|were|is|are|will|had|has|have)\b(?!.*, (who|what|which|where|how)\b)", AnswerType.DATE),
        (r"^(who|whom|whose)\b|\b(by|to|for|with) whom\b|\bwho (is|was|were|are|did|does|has|had|wrote|invented|founded|discovered)\b", AnswerType.PERSON),
        (r"^where\b|\bwhere (is|was|were|are|did|does|do)\b", AnswerType.PLACE),
    )
)  # fmt: skip


def expected_type(question: str) -> AnswerType:
    """The kind of answer ``question`` asks for; ``ANY`` when its words do not say."""
    q = _CONTRACTED_IS.sub(r"\1 is", " ".join(question.lower().split()))
    first = _WH_WORD.search(q)
    for pattern, kind in _RULES:
        found = pattern.search(q)
        if found is None:
            continue
        # The question's own question word decides: "Which header tells me how many requests
        # are left?" asks for a header, not a number.
        own = _WH_WORD.search(q, found.start())
        if first is None or own is None or own.start() == first.start():
            return kind
    return AnswerType.ANY


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def has_number(text: str) -> bool:
    return bool(_HAS_DIGIT.search(text)) or any(w in _NUMBER_WORDS for w in _words(text))


def has_date(text: str) -> bool:
    words = _words(text)
    return (
        bool(_HAS_DIGIT.search(text))
        or any(w in MONTHS or w in _DATE_WORDS or w in _TEMPORAL_PREPOSITIONS for w in words)
        or any(w.endswith(("th", "st", "nd", "rd")) and w[:-2] in _NUMBER_WORDS for w in words)
    )


def has_quantity(text: str) -> bool:
    return has_number(text) or any(w in _QUANTITY_WORDS or w in _DATE_WORDS for w in _words(text))


def has_money(text: str) -> bool:
    words = _words(text)
    if (
        any(c in text for c in _CURRENCY_SIGNS)
        or any(w in _CURRENCY_WORDS for w in words)
        or "nothing" in words
    ):
        return True
    # A share of a price answers what something costs ("70%" of the full price, "50% of the
    # estimate"); a capacity or a weight does not.
    unit = any(w in _NON_MONEY_UNITS for w in words)
    return has_number(text) and not unit


def is_only_number_or_date(text: str) -> bool:
    """The span is a bare number, year or date (no other word): never a person or a place."""
    words = _words(text)
    return bool(_HAS_DIGIT.search(text)) and all(w in MONTHS or w in _NUMBER_WORDS for w in words)


def matches(span: str, kind: AnswerType) -> bool:
    """Whether ``span`` can be an answer of ``kind`` (``ANY``: always)."""
    if kind is AnswerType.NUMBER:
        return has_number(span)
    if kind is AnswerType.QUANTITY:
        return has_quantity(span)
    if kind is AnswerType.MONEY:
        return has_money(span)
    if kind is AnswerType.DATE:
        return has_date(span)
    if kind in (AnswerType.PERSON, AnswerType.PLACE):
        return not is_only_number_or_date(span)
    return True
