"""scripts/ holds command lines only: none imports another script or edits ``sys.path``, and a
script whose recipe moved into verityrag.train is a short wrapper around a registered recipe."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

from verityrag.train.__main__ import RECIPE_MODULES, RECIPES

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted((ROOT / "scripts").glob("*.py"))
PACKAGE = sorted((ROOT / "verityrag").rglob("*.py"))


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _imported(tree: ast.Module) -> list[str]:
    """The absolute module names a file imports."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_no_script_imports_another_script() -> None:
    stems = {p.stem for p in SCRIPTS}
    found = {p.name: sorted(stems & {name.split(".")[0] for name in _imported(_tree(p))}) for p in SCRIPTS}
    assert {name: hits for name, hits in found.items() if hits} == {}


def test_no_script_or_package_module_edits_sys_path() -> None:
    def edits(path: Path) -> bool:
        return any(
            isinstance(node, ast.Attribute)
            and node.attr == "path"
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
            for node in ast.walk(_tree(path))
        )

    assert [str(p.relative_to(ROOT)) for p in [*SCRIPTS, *PACKAGE] if edits(p)] == []


def test_no_script_wraps_a_recipe() -> None:
    # A recipe runs as `python -m verityrag.train NAME`; a second way to run it was a script that
    # nothing ran and docs that drifted.
    assert {
        p.name for p in SCRIPTS if any(m.startswith("verityrag.train.") for m in _imported(_tree(p)))
    } == set()


def test_every_script_is_run_by_the_makefile_or_named_in_the_docs() -> None:
    places = [ROOT / "Makefile", ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *SCRIPTS]
    texts = {p: p.read_text(encoding="utf-8") for p in places}
    unrun = [s.name for s in SCRIPTS if not any(s.name in t for p, t in texts.items() if p != s)]
    assert unrun == []


def test_every_recipe_is_a_module_with_a_main() -> None:
    assert RECIPES[0] == "reader"
    for module in ["reader_recipe", *RECIPE_MODULES.values()]:
        spec = importlib.util.find_spec(f"verityrag.train.{module}")
        assert spec is not None, module
        assert spec.origin is not None, module
        tree = _tree(Path(spec.origin))
        assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body), module
