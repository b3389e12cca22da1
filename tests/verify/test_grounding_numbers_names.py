"""Grounding of numbers, dates, signs and non-ASCII names: one spelling per fact on both sides.

The checker also scores extractive answers (a sentence copied from the evidence), so
every normalisation here must leave a verbatim sentence at full support.
"""

from __future__ import annotations

import pytest

from verityrag.embed.hashing import HashingEmbedder
from verityrag.types import Chunk, Citation, CitedSentence
from verityrag.verify import GroundingChecker
from verityrag.verify.grounding_verifier import GroundingVerifier
from verityrag.verify.stack import DeterministicVerifier
from verityrag.verify.strictness import strictness_policy

pytestmark = pytest.mark.unit

PARANOID = strictness_policy("paranoid").grounding_threshold


def support(
    sentence: str, evidence: str, checker: GroundingChecker | None = None
) -> tuple[float, dict[str, float]]:
    """Overall support of ``sentence`` citing one chunk holding ``evidence``, and its weakest claim's details."""
    chunk = Chunk("c#0", "c", "", evidence, 0, 0, len(evidence))
    report = (checker or GroundingChecker()).check(
        [CitedSentence(sentence, (Citation("c#0", "c", "", 0, 0),))], {"c#0": chunk}
    )
    weakest = min(report.claims, key=lambda c: c.support)
    return report.overall_score, weakest.details


def deterministic(sentence: str, evidence: str) -> bool:
    return DeterministicVerifier().verify([sentence], [evidence])[0].supported


def fails_on(claim: str, evidence: str, signal: str) -> float:
    """``claim`` fails the deterministic stage and its weakest claim's ``signal`` (numbers,
    entities) is short of 1; returns its overall support."""
    assert not deterministic(claim, evidence)
    score, details = support(claim, evidence)
    assert details[signal] < 1.0
    return score


# ------------------------------------------------------------------ verbatim sentences keep support

VERBATIM_EVIDENCE = (
    "On 2019-03-05 the temperature in Łódź fell to −40 °C, the lowest since 1,000 readings began. "
    "Škoda sold 12 000 cars in 1990-1995 at an interest rate of .5 percent. "
    "The treaty was signed on March 5, 2019, by Σαπφώ Παππά and the F-16 pilots of the U.S. Air Force. "
    "Revenue changed by -3.25% to $1,234,567.50 in the 2015-16 season, against 1.5 million in 2014. "
    "Super Bowl 50 was played on February 7, 2016, at Levi's Stadium; the Broncos won 24–10. "
    "Warsaw had 1 793 579 inhabitants on 31 December 2019, and Kraków had about 780,000."
)
VERBATIM = [
    "On 2019-03-05 the temperature in Łódź fell to −40 °C, the lowest since 1,000 readings began.",
    "Škoda sold 12 000 cars in 1990-1995 at an interest rate of .5 percent.",
    "The treaty was signed on March 5, 2019, by Σαπφώ Παππά and the F-16 pilots of the U.S. Air Force.",
    "Revenue changed by -3.25% to $1,234,567.50 in the 2015-16 season, against 1.5 million in 2014.",
    "Super Bowl 50 was played on February 7, 2016, at Levi's Stadium; the Broncos won 24–10.",
    "Warsaw had 1 793 579 inhabitants on 31 December 2019, and Kraków had about 780,000.",
]


@pytest.mark.parametrize("sentence", VERBATIM)
@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["lexical", "hashing"])
def test_verbatim_sentence_with_numbers_dates_and_names_keeps_full_support(
    sentence: str, embedder: HashingEmbedder | None
) -> None:
    assert sentence in VERBATIM_EVIDENCE
    score, details = support(sentence, VERBATIM_EVIDENCE, GroundingChecker(embedder=embedder))
    assert details["lexical"] == details["bigram"] == 1.0
    assert details["numbers"] == details["entities"] == 1.0
    assert score == pytest.approx(1.0) if embedder is None else score >= 0.95
    assert deterministic(sentence, VERBATIM_EVIDENCE)


# ------------------------------------------------------------------ 1: digit-group separators


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The plant employs 1,000 workers.", "The plant employs 1000 workers."),
        ("The plant employs 1000 workers.", "The plant employs 1,000 workers."),
        ("The plant employs 1 000 workers.", "The plant employs 1000 workers."),
        ("The plant employs 1\u00a0000 workers.", "The plant employs 1,000 workers."),
        ("The city had 1,793,579 inhabitants.", "The city had 1 793 579 inhabitants."),
        ("The bill came to 1,234.50 dollars.", "The bill came to 1234.50 dollars."),
    ],
    ids=["comma-vs-plain", "plain-vs-comma", "space", "nbsp", "millions", "decimal-kept"],
)
def test_digit_grouped_number_scores_as_the_plain_number(claim: str, evidence: str) -> None:
    score, details = support(claim, evidence)
    assert details["lexical"] == details["bigram"] == details["numbers"] == 1.0
    assert score == pytest.approx(1.0)
    assert score >= PARANOID  # a correct answer no longer abstains at the strictest level


def test_digit_groups_are_not_decimals() -> None:
    _, details = support("The ship carried 1,500 tonnes.", "The ship carried 1.5 tonnes.")
    assert details["numbers"] < 1.0


# ------------------------------------------------------------------ 2: dates and bare decimals


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The treaty was signed on 2019-03-05.", "The treaty was signed on March 5, 2019."),
        ("The treaty was signed on March 5, 2019.", "The treaty was signed on 2019-03-05."),
        ("The treaty was signed on 5 March 2019.", "The treaty was signed on 2019-03-05."),
        ("The ratio fell to .5 in the study.", "The ratio fell to 0.5 in the study."),
        ("The ratio fell to 0.5 in the study.", "The ratio fell to .5 in the study."),
    ],
    ids=["iso-vs-written", "written-vs-iso", "day-first-vs-iso", "bare-vs-zero", "zero-vs-bare"],
)
def test_same_date_or_decimal_in_another_format_passes_the_deterministic_check(
    claim: str, evidence: str
) -> None:
    assert deterministic(claim, evidence)
    _, details = support(claim, evidence)
    assert details["numbers"] == 1.0


def test_iso_date_scores_like_its_written_form() -> None:
    score, _ = support("The treaty was signed on 2019-03-05.", "The treaty was signed on March 5, 2019.")
    assert score >= PARANOID


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The treaty was signed on 2019-05-03.", "The treaty was signed on March 5, 2019."),
        ("The treaty was signed on 2019-03-06.", "The treaty was signed on March 5, 2019."),
        ("The treaty was signed on March 5, 2019.", "The treaty was signed on 2018-03-05."),
        ("The ratio fell to .5 in the study.", "The ratio fell to 5 in the study."),
    ],
    ids=["day-month-swapped", "other-day", "other-year", "bare-decimal-vs-integer"],
)
def test_a_different_date_or_decimal_still_fails(claim: str, evidence: str) -> None:
    fails_on(claim, evidence, "numbers")


# ------------------------------------------------------------------ 3: signs


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        (
            "The lowest temperature recorded was -40 degrees.",
            "The lowest temperature recorded was 40 degrees.",
        ),
        (
            "The lowest temperature recorded was 40 degrees.",
            "The lowest temperature recorded was -40 degrees.",
        ),
        ("Profit changed by \u22125% last year.", "Profit changed by 5% last year."),
        ("Profit changed by (-5%) last year.", "Profit changed by (5%) last year."),
    ],
    ids=["hyphen-minus", "sign-dropped", "unicode-minus", "in-brackets"],
)
def test_flipped_sign_is_a_missing_number(claim: str, evidence: str) -> None:
    assert fails_on(claim, evidence, "numbers") <= 0.5


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("Profit changed by \u22125% last year.", "Profit changed by -5% last year."),
        ("He ruled from 1990-1995 in the north.", "He ruled from 1990 to 1995 in the north."),
        (
            "The F-16 entered service in the 2015-16 season.",
            "The F 16 entered service in the 2015 16 season.",
        ),
        ("The model 737-800 seats 189.", "The model 737, series 800, seats 189."),
    ],
    ids=["unicode-vs-ascii-minus", "year-range", "after-letter-and-digit", "model-number"],
)
def test_hyphen_after_a_letter_or_digit_is_no_sign(claim: str, evidence: str) -> None:
    assert deterministic(claim, evidence)


# ------------------------------------------------------------------ 3: names in any cased script


@pytest.mark.parametrize(
    ("claim", "evidence"),
    [
        ("The factory was built in Łódź by the company.", "The factory was built in Warsaw by the company."),
        ("The car was made by Škoda in the factory.", "The car was made by Tatra in the factory."),
        ("The poem was written by Σαπφώ long ago.", "The poem was written by Homer long ago."),
        ("The novel was written by Толстой in exile.", "The novel was written by Chekhov in exile."),
    ],
    ids=["polish", "czech", "greek", "cyrillic"],
)
def test_name_starting_with_a_non_latin1_capital_is_checked(claim: str, evidence: str) -> None:
    assert fails_on(claim, evidence, "entities") <= 0.5
    assert not GroundingVerifier().verify([claim], [evidence])[0].supported


def test_non_latin1_name_found_in_the_evidence_passes() -> None:
    evidence = "The factory was built in Łódź by Škoda engineers and Σαπφώ."
    assert deterministic("Škoda engineers built the factory in Łódź.", evidence)
