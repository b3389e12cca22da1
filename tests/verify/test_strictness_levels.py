"""Strictness levels: one table, what each level keeps, drops and refuses."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import get_args

import pytest

import verityrag
from verityrag import config
from verityrag.agent.controller import GROUNDING_THRESHOLDS
from verityrag.errors import InvalidInputError
from verityrag.verify import strictness
from verityrag.verify.protocols import VerificationResult
from verityrag.verify.strictness import STRICTNESS_TABLE, apply_strictness, strictness_policy

pytestmark = pytest.mark.unit

GOOD = VerificationResult("Watt improved the steam engine in 1769.", 0.9, True, "nli")  # 39 chars
BAD = VerificationResult("He was born on Mars.", 0.1, False, "nli")  # 20 chars
BROKEN = VerificationResult(
    "Watt added a condenser.", 0.0, False, "llm_judge", "verifier_error", "LLMTimeoutError: slow"
)


def test_thresholds_rise_with_strictness() -> None:
    levels = ["loose", "balanced", "strict", "paranoid"]
    rows = [STRICTNESS_TABLE[level] for level in levels]  # type: ignore[index]
    assert [r.grounding_threshold for r in rows] == sorted(r.grounding_threshold for r in rows)
    assert [r.min_faithfulness for r in rows] == sorted(r.min_faithfulness for r in rows)
    assert not rows[0].drops_unsupported
    assert all(r.drops_unsupported for r in rows[1:])


def test_agent_grounding_thresholds_come_from_the_table() -> None:
    assert set(GROUNDING_THRESHOLDS) == set(STRICTNESS_TABLE)
    for level, row in STRICTNESS_TABLE.items():
        assert GROUNDING_THRESHOLDS[level] == row.grounding_threshold


def test_loose_returns_every_sentence_and_lists_unsupported() -> None:
    outcome = apply_strictness([GOOD, BAD], "loose")
    assert outcome.kept == (GOOD.sentence, BAD.sentence)
    assert outcome.unsupported_claims == (BAD.sentence,)
    assert not outcome.refused
    assert strictness_policy("lenient").level == "loose"


def test_balanced_drops_unsupported_and_keeps_a_mostly_faithful_answer() -> None:
    outcome = apply_strictness([GOOD, BAD], "balanced")
    assert outcome.kept == (GOOD.sentence,)
    assert outcome.answer == GOOD.sentence
    assert outcome.unsupported_claims == (BAD.sentence,)
    assert outcome.faithfulness == pytest.approx(39 / 59)
    assert not outcome.refused


@pytest.mark.parametrize(("level", "refused"), [("balanced", False), ("strict", True), ("paranoid", True)])
def test_faithfulness_under_the_level_threshold_refuses(level: str, refused: bool) -> None:
    outcome = apply_strictness([GOOD, BAD], level)
    assert outcome.refused is refused
    assert outcome.refusal == ("unfaithful" if refused else None)


def test_paranoid_accepts_only_fully_supported_answers() -> None:
    assert not apply_strictness([GOOD, GOOD], "paranoid").refused


def test_nothing_supported_refuses() -> None:
    assert apply_strictness([BAD], "balanced").refusal == "nothing_supported"


def test_verifier_error_refuses_with_its_reason() -> None:
    outcome = apply_strictness([GOOD, BROKEN], "balanced")
    assert outcome.refusal == "verifier_error"
    assert outcome.errors == ("LLMTimeoutError: slow",)
    assert not apply_strictness([GOOD, BROKEN], "loose").refused


def test_unknown_level_lists_allowed() -> None:
    with pytest.raises(InvalidInputError, match="loose, balanced, strict, paranoid, lenient"):
        strictness_policy("extreme")


# ------------------------------------------------------------------ one definition of the levels

PACKAGE = Path(verityrag.__file__).parent
LEVEL_NAMES = {"loose", "balanced", "strict", "paranoid"}
# The four names in order, as a hand-written list in prose: "loose, balanced, strict or paranoid".
LEVELS_IN_PROSE = re.compile(r"loose\W+balanced\W+strict\W+(?:or\W+)?paranoid")


def _hand_written_level_lists(path: Path) -> list[int]:
    """Lines of ``path`` holding a list, tuple, set or ``Literal[...]`` of all four level names, or
    a string naming them in order."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.List | ast.Tuple | ast.Set):  # a Literal[...] holds a Tuple
            names = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if names >= LEVEL_NAMES:
                lines.append(node.lineno)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and LEVELS_IN_PROSE.search(node.value)
        ):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_strictness_levels_are_written_out_once_in_config() -> None:
    found = {
        path.relative_to(PACKAGE.parent).as_posix(): lines
        for path in [*sorted(PACKAGE.rglob("*.py")), PACKAGE.parent / "app.py"]
        if (lines := _hand_written_level_lists(path))
    }
    assert list(found) == ["verityrag/config.py"], found
    assert len(found["verityrag/config.py"]) == 1


def test_strictness_names_elsewhere_are_the_config_definition() -> None:
    assert not hasattr(strictness, "StrictnessLevel")  # one name: config.Strictness
    assert strictness.STRICTNESS_LEVELS is config.STRICTNESS_LEVELS == get_args(config.Strictness)
    assert strictness.STRICTNESS_ALIASES is config.STRICTNESS_ALIASES
    assert set(config.STRICTNESS_LEVELS) == LEVEL_NAMES


def test_strictness_table_has_one_row_per_level_in_level_order() -> None:
    assert tuple(STRICTNESS_TABLE) == config.STRICTNESS_LEVELS
    assert all(row.level == level for level, row in STRICTNESS_TABLE.items())


def test_api_strictness_field_offers_exactly_the_levels() -> None:
    from verityrag.api.schemas import QueryIn

    field = QueryIn.model_json_schema()["properties"]["strictness"]
    enums = [option["enum"] for option in field["anyOf"] if "enum" in option]
    assert enums == [list(config.STRICTNESS_LEVELS)]
    assert all(level in field["description"] for level in config.STRICTNESS_LEVELS)
