"""Rank fusion: reciprocal rank fusion and weighted min-max, checked by hand."""

from __future__ import annotations

import pytest

from verityrag.errors import InvalidInputError
from verityrag.retrieval.fusion import check_fusion_mode, rrf, weighted

pytestmark = pytest.mark.unit


def test_rrf_two_rankings_sums_reciprocal_ranks() -> None:
    fused = rrf([["a", "b", "c"], ["b", "d"]], k=60)
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 63, "d": 1 / 62})


def test_rrf_empty_rankings_give_nothing() -> None:
    assert rrf([[], []]) == {}


def test_weighted_min_max_normalises_each_list_then_weights() -> None:
    fused = weighted([{"a": 10.0, "b": 5.0, "c": 0.0}, {"b": 0.9, "d": 0.1}], [0.5, 0.5])
    assert fused == pytest.approx({"a": 0.5, "b": 0.25 + 0.5, "c": 0.0, "d": 0.0})


def test_weighted_constant_scores_count_as_one() -> None:
    assert weighted([{"a": 2.0, "b": 2.0}], [1.0]) == {"a": 1.0, "b": 1.0}


def test_weighted_mismatched_weights_raise() -> None:
    with pytest.raises(InvalidInputError, match="one weight per score list") as err:
        weighted([{"a": 1.0}], [0.5, 0.5])
    assert err.value.field == "weights"


def test_check_fusion_mode_unknown_lists_allowed() -> None:
    assert check_fusion_mode("rrf") == "rrf"
    with pytest.raises(InvalidInputError, match="'sum' is not one of rrf, weighted"):
        check_fusion_mode("sum")
