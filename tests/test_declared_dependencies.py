"""pyproject.toml is the truth about what the package imports: every third-party module that
verityrag/ and app.py import comes from a distribution declared there (the core or an extra)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = {_name(r) for r in project["dependencies"]}
    for requirements in project["optional-dependencies"].values():
        names |= {_name(r) for r in requirements}
    return names


def _imported() -> dict[str, str]:
    """Top-level third-party module -> one file that imports it."""
    found: dict[str, str] = {}
    for path in [*sorted((ROOT / "verityrag").rglob("*.py")), ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for module in modules:
                top = module.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("verityrag", "__future__"):
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


def test_every_third_party_import_is_a_declared_distribution() -> None:
    declared = _declared()
    installed = packages_distributions()
    undeclared = []
    for module, where in sorted(_imported().items()):
        # Not installed here (an optional model package): its distribution is named like it.
        candidates = installed.get(module) or [module]
        if not any(_name(d) in declared for d in candidates):
            undeclared.append(f"{module} ({', '.join(candidates)}), imported by {where}")
    assert not undeclared, "imported but not declared in pyproject.toml:\n" + "\n".join(undeclared)


def test_the_file_parsers_need_nothing_outside_the_core() -> None:
    # `pip install verityrag[api]` serves uploads: the parsers' imports are core dependencies.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    core = {_name(r) for r in project["dependencies"]}
    assert {"pypdf", "python-docx", "lxml", "markdown-it-py"} <= core
