"""StackedScorer: a logistic regression over member scores, usable as an NLIScorer."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from verityrag.errors import InvalidInputError, NotFittedError
from verityrag.verify import NLIScorer, StackedScorer

pytestmark = pytest.mark.unit


class KeywordScorer:
    """P(supported) high when the hypothesis's last word is in the premise (a real, if crude, signal)."""

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [0.9 if h.rstrip(".").split()[-1] in p else 0.2 for p, h in pairs]


class LengthScorer:
    """Scores by hypothesis length only: no signal about support here."""

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        return [min(0.99, len(h) / 40) for _, h in pairs]


PREMISE = "James Watt improved the steam engine in Glasgow in 1769."
PAIRS = [
    (PREMISE, "Watt worked in Glasgow."),
    (PREMISE, "The engine was improved in 1769."),
    (PREMISE, "Watt was born in Paris."),
    (PREMISE, "The improvement came in 1812."),
    (PREMISE, "Watt improved the engine."),
    (PREMISE, "He sold it in London."),
] * 4
SUPPORTED = [1, 1, 0, 0, 1, 0] * 4


def test_fitted_stack_is_an_nli_scorer_that_separates_and_weights_the_useful_member() -> None:
    stack = StackedScorer([KeywordScorer(), LengthScorer()]).fit(PAIRS, SUPPORTED)
    assert isinstance(stack, NLIScorer)
    scores = stack.score_pairs(PAIRS[:6])
    assert min(scores[i] for i in (0, 1, 4)) > max(scores[i] for i in (2, 3, 5))
    weights = list(stack.coefficients().values())
    assert weights[0] > abs(weights[1])
    assert stack.score_pairs([]) == []


def test_out_of_fold_scores_one_per_pair_in_unit_interval() -> None:
    stack = StackedScorer([KeywordScorer(), LengthScorer()])
    columns = [KeywordScorer().score_pairs(PAIRS), LengthScorer().score_pairs(PAIRS)]
    oof = stack.out_of_fold(columns, SUPPORTED, folds=3)
    assert len(oof) == len(PAIRS)
    assert all(0.0 <= v <= 1.0 for v in oof)


def test_stack_errors_are_clear() -> None:
    with pytest.raises(InvalidInputError, match="at least one"):
        StackedScorer([])
    with pytest.raises(InvalidInputError, match="c"):
        StackedScorer([KeywordScorer()], c=0)
    with pytest.raises(NotFittedError):
        StackedScorer([KeywordScorer()]).score_pairs(PAIRS)
    with pytest.raises(InvalidInputError, match="both"):
        StackedScorer([KeywordScorer()]).fit(PAIRS, [1] * len(PAIRS))
    with pytest.raises(InvalidInputError, match="2 score lists"):
        StackedScorer([KeywordScorer(), LengthScorer()]).fit_scores([[0.5] * len(PAIRS)], SUPPORTED)


def test_out_of_fold_with_one_label_raises_naming_supported() -> None:
    # It failed inside scikit-learn ("This solver needs samples of at least 2 classes").
    columns = [KeywordScorer().score_pairs(PAIRS)]
    with pytest.raises(InvalidInputError, match=r"supported.*both"):
        StackedScorer([KeywordScorer()]).out_of_fold(columns, [1] * len(PAIRS))


def test_out_of_fold_with_fewer_pairs_of_a_label_than_folds_raises_saying_what_to_do() -> None:
    # It failed inside scikit-learn ("Cannot have number of splits n_splits=5 greater ...").
    with pytest.raises(InvalidInputError, match="fewer than folds=5"):
        StackedScorer([KeywordScorer()]).out_of_fold([[0.9, 0.1, 0.2, 0.8]], [1, 0, 0, 1], folds=5)
    with pytest.raises(InvalidInputError, match="folds"):
        StackedScorer([KeywordScorer()]).out_of_fold([[0.9, 0.1, 0.2, 0.8]], [1, 0, 0, 1], folds=1)


def test_fit_scores_with_a_label_count_unlike_the_scores_raises_naming_the_column() -> None:
    with pytest.raises(InvalidInputError, match=r"columns\[0\].*4 scores"):
        StackedScorer([KeywordScorer()]).fit_scores([[0.9, 0.1, 0.2, 0.8]], [1, 0, 0])
    with pytest.raises(InvalidInputError, match=r"columns\[1\]"):
        StackedScorer([KeywordScorer(), LengthScorer()]).fit_scores([[0.9, 0.1], [0.5]], [1, 0])


def test_stack_with_a_nan_member_score_scores_it_as_unsupported() -> None:
    # NaN reached scikit-learn, which raised "Input X contains NaN" from predict_proba.
    stack = StackedScorer([KeywordScorer()]).fit(PAIRS, SUPPORTED)
    [nan_score, zero_score] = stack.combine([[float("nan"), 0.0]])
    assert nan_score == pytest.approx(zero_score)
    assert nan_score < 0.5
