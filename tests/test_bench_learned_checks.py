"""The learned-checks benchmark's configuration subset and its table (no models needed)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

from verityrag.eval.benchmarks import learned_checks_table

pytestmark = pytest.mark.unit


def _run(config: str, p50: float) -> dict[str, Any]:
    return {
        "config": config,
        "checks": {},
        "startup_s": 1.0,
        "query_ms": {"p50": p50, "p95": p50 * 2},
        "coverage": 0.8,
        "in_domain_unanswerable_abstention": 0.5,
    }


def test_a_subset_always_keeps_none_first(load_script: Callable[[str], ModuleType]) -> None:
    bench = load_script("bench_learned_checks")
    assert list(bench.chosen_configs("answerability")) == ["none", "answerability"]
    assert list(bench.chosen_configs("reader, guard")) == ["none", "guard", "reader"]
    assert list(bench.chosen_configs(None)) == list(bench.CONFIGS)


def test_an_unknown_configuration_is_refused_by_name(load_script: Callable[[str], ModuleType]) -> None:
    bench = load_script("bench_learned_checks")
    with pytest.raises(SystemExit, match="'gaurd'"):
        bench.chosen_configs("gaurd")


def test_the_table_names_what_was_left_out() -> None:
    data = {"runs": [_run("none", 2.0), _run("answerability", 20.0)], "configs_skipped": ["guard", "reader"]}
    table = learned_checks_table(data)
    assert "| answerability | - | 1.0 | 20.0 | 40.0 | 10.00 | 80.0% | 50.0% |" in table
    assert table.endswith("Not measured in this run (`--configs`): guard, reader.")
    full = learned_checks_table({"runs": data["runs"]})  # reports from before the option
    assert "Not measured" not in full
