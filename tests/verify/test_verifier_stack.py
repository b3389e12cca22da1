"""Ensembles over scorers, and the cheapest-first verifier stack with its per-stage trace."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from verityrag.errors import InvalidInputError
from verityrag.verify.ensemble import DualNLIVerifier, EnsembleScorer, aggregate
from verityrag.verify.nli_verifier import NLIVerifier
from verityrag.verify.protocols import NLIScorer, VerificationResult, Verifier
from verityrag.verify.stack import DeterministicVerifier, VerifierStack

pytestmark = pytest.mark.unit

EVIDENCE = [
    "James Watt improved the steam engine in 1769 by adding a separate condenser. "
    "Thomas Newcomen built the first practical engine in 1712."
]


class WordOverlap:
    """Share of the hypothesis' lowercase words found in the premise."""

    def __init__(self) -> None:
        self.calls = 0

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        self.calls += len(pairs)
        out = []
        for premise, hypothesis in pairs:
            words = {w.strip(".,").lower() for w in hypothesis.split()}
            found = {w.strip(".,").lower() for w in premise.split()}
            out.append(len(words & found) / len(words) if words else 0.0)
        return out


class Constant:
    def __init__(self, value: float) -> None:
        self.value = value

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [self.value] * len(pairs)


class Recording:
    """A verifier that supports everything and remembers what it saw."""

    stage = "recording"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def verify(self, sentences: Sequence[str], documents: Sequence[str]) -> list[VerificationResult]:
        self.seen.extend(sentences)
        return [VerificationResult(s, 1.0, True, self.stage) for s in sentences]


@pytest.mark.parametrize(("how", "expected"), [("min", 0.2), ("mean", 0.5), ("max", 0.8)])
def test_ensemble_aggregations(how: str, expected: float) -> None:
    ensemble = EnsembleScorer([Constant(0.2), Constant(0.5), Constant(0.8)], aggregation=how)  # type: ignore[arg-type]
    assert isinstance(ensemble, NLIScorer)
    assert ensemble.score_pairs([("p", "h"), ("p", "h2")]) == pytest.approx([expected, expected])


def test_ensemble_weighted_mean() -> None:
    ensemble = EnsembleScorer([Constant(0.0), Constant(1.0)], "mean", weights=[1.0, 3.0])
    assert ensemble.score_pairs([("p", "h")]) == [pytest.approx(0.75)]
    assert aggregate([0.1, 0.9], "mean") == pytest.approx(0.5)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scorers": []}, "at least one"),
        ({"scorers": [Constant(1)], "aggregation": "median"}, "min, mean, max"),
        ({"scorers": [Constant(1)], "weights": [1.0, 2.0]}, "needs 1 weights"),
        ({"scorers": [Constant(1)], "aggregation": "min", "weights": [1.0]}, "only apply"),
    ],
)
def test_ensemble_bad_parameters_raise(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        EnsembleScorer(**kwargs)  # type: ignore[arg-type]


def test_dual_nli_verifier_min_needs_both_and_records_members() -> None:
    dual = DualNLIVerifier([WordOverlap(), Constant(0.3)], aggregation="min", threshold=0.5)
    assert isinstance(dual, Verifier)
    [result] = dual.verify(["Watt improved the steam engine."], EVIDENCE)
    assert result.details["members"] == [1.0, 0.3]
    assert result.score == pytest.approx(0.3)
    assert not result.supported
    [either] = DualNLIVerifier([WordOverlap(), Constant(0.3)], "max").verify(
        ["Watt improved the engine."], EVIDENCE
    )
    assert either.supported


def test_nli_verifier_score_is_min_over_sentences() -> None:
    verifier = NLIVerifier(WordOverlap(), threshold=0.5)
    answer = "Watt improved the steam engine. Pigs can fly over Paris."
    assert verifier.score(EVIDENCE[0], answer) == pytest.approx(0.0)
    assert verifier.score(EVIDENCE[0], "Watt improved the steam engine.") == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("sentence", "passes"),
    [
        ("Watt improved the steam engine in 1769.", True),
        ("Watt improved the steam engine in 1781.", False),  # a wrong year
        ("Newcomen built an engine in 1712.", True),
        ("George Stephenson built an engine in 1712.", False),  # a name absent from the evidence
    ],
)
def test_deterministic_verifier_numbers_and_names(sentence: str, passes: bool) -> None:
    [result] = DeterministicVerifier().verify([sentence], EVIDENCE)
    assert result.supported is passes
    assert result.stage == "deterministic"


def test_stack_runs_cheapest_first_and_only_survivors_reach_later_stages() -> None:
    overlap = WordOverlap()
    judge = Recording()
    stack = VerifierStack.default(nli=NLIVerifier(overlap, threshold=0.6), judge=judge)
    sentences = [
        "Watt improved the steam engine in 1769.",  # passes everything
        "Watt improved the steam engine in 1781.",  # stopped by the deterministic stage
        "Watt painted the engine bright green.",  # stopped by NLI (word overlap 3/6)
    ]
    results, stats = stack.run(sentences, EVIDENCE)
    assert [r.supported for r in results] == [True, False, False]
    assert [r.stage for r in results] == ["recording", "deterministic", "nli"]
    assert overlap.calls == 2  # the wrong year never reached NLI
    assert judge.seen == [sentences[0]]  # only the survivor reached the judge
    assert [(s.stage, s.checked, s.passed, s.rejected) for s in stats] == [
        ("deterministic", 3, 2, 1),
        ("nli", 2, 1, 1),
        ("recording", 1, 1, 0),
    ]
    assert all(s.ms >= 0 for s in stats)
    assert results[0].details["stages"] == ["deterministic", "nli", "recording"]
    assert results[1].details["stack"] == [s.as_dict() for s in stats]


def test_stack_stops_when_nothing_survives() -> None:
    judge = Recording()
    results = VerifierStack.default(nli=NLIVerifier(Constant(0.0)), judge=judge).verify(
        ["Watt improved it."], EVIDENCE
    )
    assert not results[0].supported
    assert judge.seen == []


def test_empty_stack_raises() -> None:
    with pytest.raises(InvalidInputError, match="at least one"):
        VerifierStack([])


# ------------------------------------------------------------------ NaN scores and bad arguments

NAN = float("nan")


@pytest.mark.parametrize("members", [[0.9, NAN], [NAN, 0.9]])
def test_min_ensemble_with_a_nan_member_score_rejects_whatever_its_position(members: list[float]) -> None:
    # min([0.9, nan]) is 0.9: the broken member used to pass the sentence when it came second.
    ensemble = EnsembleScorer([Constant(v) for v in members], "min")
    assert ensemble.score_pairs([("premise", "hypothesis")]) == [0.0]
    [result] = DualNLIVerifier([Constant(v) for v in members], "min").verify(["A claim."], EVIDENCE)
    assert result.score == 0.0
    assert not result.supported
    assert result.details["members"] == [None if math.isnan(v) else v for v in members]  # JSON-safe trace


@pytest.mark.parametrize("members", [[0.9, NAN], [NAN, 0.9]])
def test_max_ensemble_with_a_nan_member_score_keeps_the_other_member(members: list[float]) -> None:
    assert aggregate(members, "max") == 0.9
    assert aggregate(members, "mean") == pytest.approx(0.45)


class Scripted:
    """Scores pair i with ``values[i]``."""

    def __init__(self, values: Sequence[float]) -> None:
        self.values = list(values)

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return self.values[: len(pairs)]


def test_nli_verifier_nan_sentence_score_is_unsupported_zero() -> None:
    # score(): min over sentences, where a NaN second sentence was skipped (min(0.9, nan) = 0.9).
    verifier = NLIVerifier(Scripted([0.9, NAN]), threshold=0.5)
    assert verifier.score(EVIDENCE[0], "Watt improved it. Pigs fly.") == 0.0
    results = verifier.verify(["Watt improved it.", "Pigs fly."], EVIDENCE)
    assert [r.score for r in results] == [0.9, 0.0]  # 0.0, not NaN (not valid JSON in a response)
    assert [r.supported for r in results] == [True, False]


@pytest.mark.parametrize(
    "make",
    [
        lambda: NLIVerifier(WordOverlap()),
        lambda: DualNLIVerifier([WordOverlap(), Constant(0.9)]),
        lambda: DeterministicVerifier(),
        lambda: VerifierStack([Recording()]),
    ],
)
@pytest.mark.parametrize(
    ("sentences", "documents", "field"),
    [
        ("Watt improved the steam engine.", EVIDENCE, "sentences"),
        (["Watt improved the steam engine."], EVIDENCE[0], "documents"),
        (["Watt improved the steam engine.", None], EVIDENCE, r"sentences\[1\]"),
        (["Watt improved the steam engine."], [EVIDENCE[0], None], r"documents\[1\]"),
    ],
)
def test_verify_with_a_bare_string_or_non_string_item_raises_naming_the_field(
    make: object, sentences: object, documents: object, field: str
) -> None:
    # A bare string is a Sequence[str]: it was judged character by character (documents: the
    # evidence became single letters), silently; a None item failed deep inside.
    verifier = make()  # type: ignore[operator]
    with pytest.raises(InvalidInputError, match=field):
        verifier.verify(sentences, documents)
