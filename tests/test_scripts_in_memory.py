"""Benchmarks, training recipes and the eval never read or write a user's VERITYRAG_DATA_DIR store.

A pipeline built without ``data_dir`` falls back to that variable: a user who has it set for
their API would get the benchmark's documents in their store and their documents in the
published figures. Every pipeline these build names its ``data_dir`` (``IN_MEMORY``, or a
temporary folder for the restore benchmark).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILDERS = [
    *sorted((ROOT / "scripts").glob("*.py")),
    *sorted((ROOT / "verityrag" / "eval").glob("*.py")),
    *sorted((ROOT / "verityrag" / "train").glob("*.py")),  # the recipes (gate, selector, ...)
]


def _pipelines_without_data_dir(path: Path) -> list[int]:
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        name = getattr(node, "func", None)
        called = getattr(name, "id", getattr(name, "attr", None))
        if (
            isinstance(node, ast.Call)
            and called == "VerityRAGPipeline"
            and not any(k.arg == "data_dir" for k in node.keywords)
        ):
            lines.append(node.lineno)
    return lines


@pytest.mark.unit
def test_every_pipeline_a_script_or_the_eval_builds_names_its_data_dir() -> None:
    found = {str(p.relative_to(ROOT)): _pipelines_without_data_dir(p) for p in BUILDERS}
    assert sum(len(v) for v in found.values()) == 0, {k: v for k, v in found.items() if v}
    assert any("bench_index" in str(p) for p in BUILDERS)  # the scan sees the scripts
    assert any(p.name == "gate_recipe.py" for p in BUILDERS)  # and the recipes that moved out of them
