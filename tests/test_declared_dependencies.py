"""pyproject.toml is the truth about what the package imports: every third-party module that
verityrag/ and app.py import comes from a distribution declared there (the core or an extra); the
installed package holds every file it ships; and requirements*.txt pin, within pyproject.toml's
ranges, every distribution ``make setup`` installs from it."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement

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


def test_the_shipped_reader_needs_nothing_outside_the_core() -> None:
    # Settings.reader is on by default: `pip install verityrag[api]` serves with the int8 ONNX reader.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert {"onnxruntime", "tokenizers"} <= {_name(r) for r in project["dependencies"]}


def test_every_shipped_resource_is_package_data() -> None:
    # "resources/*" alone left the reader's folder (resources/reader/) out of the installed package.
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    patterns = setuptools["package-data"]["verityrag"]
    package = ROOT / "verityrag"
    shipped = [p for p in (package / "resources").rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert shipped
    left_out = [
        str(p.relative_to(package))
        for p in shipped
        if not any(p.relative_to(package).match(pattern) for pattern in patterns)
    ]
    assert left_out == []


def _makefile_extras() -> list[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(r"^EXTRAS := (.+)$", makefile, re.MULTILINE)
    assert match, "the Makefile names the extras `make setup` installs (EXTRAS := ...)"
    return match.group(1).strip().split(",")


def _pins() -> dict[str, str]:
    """Distribution -> pinned version, from requirements.txt, requirements-dev.txt and the
    Makefile's torch (installed first, from a local CPU wheel)."""
    lines = [
        *(ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines(),
        *(ROOT / "requirements-dev.txt").read_text(encoding="utf-8").splitlines(),
        *re.findall(r"pip install -q (torch==\S+)", (ROOT / "Makefile").read_text(encoding="utf-8")),
    ]
    pins = {}
    for line in lines:
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[_name(name)] = version.strip()
    return pins


def test_requirements_pin_every_distribution_make_setup_installs_within_its_declared_range() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = _makefile_extras()
    assert set(extras) <= set(project["optional-dependencies"]), extras
    declared = [Requirement(r) for r in project["dependencies"]]
    for extra in extras:
        declared += [Requirement(r) for r in project["optional-dependencies"][extra]]
    pins = _pins()
    unpinned = sorted({_name(r.name) for r in declared} - set(pins))
    assert unpinned == [], "declared in pyproject.toml, pinned in no requirements*.txt"
    outside = [
        f"{r} (pinned {pins[_name(r.name)]})" for r in declared if pins[_name(r.name)] not in r.specifier
    ]
    assert outside == [], "pinned outside pyproject.toml's range"
