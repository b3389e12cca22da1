"""SourcesAgree: two sources' different values, each read well enough, are reported as a conflict."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from verityrag.agent.gates import SourcesAgree
from verityrag.generation.reading import Alternative
from verityrag.types import AbstainReason, ShortAnswer

pytestmark = pytest.mark.unit


def _case(answer_logit: float, rival_logit: float) -> SimpleNamespace:
    reading = SimpleNamespace(
        short_answer=ShortAnswer("70 metres", "notice#0", 0, 9, 0.99),
        answer_logit=answer_logit,
        alternatives=(Alternative("64 metres", "fleet#0", "fleet", "Fleet list", rival_logit),),
        sentences=(),
    )
    return SimpleNamespace(best=SimpleNamespace(reading=reading))


def test_two_values_each_read_above_the_bar_are_a_conflict_naming_both() -> None:
    refusal = SourcesAgree(logit_threshold=5.0).decide(_case(6.0, 5.5)).refusal  # type: ignore[arg-type]
    assert refusal is not None
    assert refusal.reason is AbstainReason.CONFLICT
    assert "70 metres" in refusal.details["explanation"]
    assert "64 metres" in refusal.details["explanation"]


def test_a_rival_or_an_answer_under_the_bar_is_no_conflict() -> None:
    assert SourcesAgree(logit_threshold=5.0).decide(_case(6.0, 4.0)).refusal is None  # type: ignore[arg-type]
    # the answer itself is under the bar: the reader's own decision refuses it, not a conflict
    assert SourcesAgree(logit_threshold=5.0).decide(_case(4.0, 6.0)).refusal is None  # type: ignore[arg-type]
