"""The package's layering, read from the source: imports only go down the layers, the product
imports nothing of the lab (eval, train, datasets), neither the units nor the modules form a cycle,
no two packages name a module alike for different things, and the package root holds only the
modules it should. How long a module may be is a review question (docs/architecture.md), not a test.

A *unit* is ``verityrag.X``: a subpackage or a root module. Every import of every module counts,
including those under ``if TYPE_CHECKING:``, inside functions, relative ones and
``importlib.import_module("verityrag....")`` with a literal name. See the layer table in
docs/architecture.md ("Layers").
"""

from __future__ import annotations

import ast
import itertools
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import verityrag

pytestmark = pytest.mark.unit

PACKAGE = Path(verityrag.__file__).parent
ROOT_NAME = "verityrag"

# Lowest first. A unit may import units of its own layer or below, never above. The lab (the
# evaluation, the training recipes and the third-party datasets they read) is the top layer: the
# product, everything below it, imports nothing of it.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("_lazy", "errors", "types"),  # _lazy: how each package __init__ re-exports its names
    ("text",),
    ("embed", "llm"),
    ("models",),
    ("index",),
    ("retrieval",),
    ("config",),
    ("ingest",),
    ("agent", "generation", "checks", "verify", "thresholds"),
    ("pipeline",),
    (
        "serve",
        "api",
        "ui",
        "mcp_server",
        "__main__",
        # the package's own __init__
        "__init__",
    ),
    ("eval", "train", "datasets"),
)
LAYER_OF = {unit: level for level, units in enumerate(LAYERS) for unit in units}
LAB = LAYERS[-1]
# Module names that two packages share for the same idea: each backend's snapshot (index.protocol's
# Snapshot).
SHARED_MODULE_NAMES = {
    "snapshot.py": ("verityrag/index/elastic/snapshot.py", "verityrag/index/snapshot.py"),
}

ROOT_MODULES = {
    "__init__",
    "_lazy",  # how every package __init__ re-exports its names (PEP 562)
    "__main__",
    "config",
    "errors",
    "types",
    "pipeline",
    "mcp_server",  # the entry point `python -m verityrag.mcp_server`
}


@dataclass(frozen=True)
class Import:
    """One import of a verityrag unit: where it is written and which unit it reaches."""

    path: str  # relative to the repository, e.g. verityrag/index/live.py
    line: int
    source: str  # the importing unit
    target: str  # the imported unit
    name: str  # the imported module (or name), as written after resolution

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.name}"


def unit_of_path(relative: Path) -> str:
    """``index/live.py`` -> ``index``; ``pipeline.py`` -> ``pipeline``; ``__init__.py`` -> ``__init__``."""
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def module_name(relative: Path) -> str:
    parts = [ROOT_NAME, *relative.with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of_module(name: str, package: Path) -> str | None:
    """The unit a dotted name reaches, or None outside the package.

    ``verityrag`` itself is its ``__init__``; ``verityrag.X`` a subpackage or root module X.
    A name imported from the package (``from verityrag import Settings``) that is not a
    module of it comes from ``__init__``.
    """
    parts = name.split(".")
    if parts[0] != ROOT_NAME:
        return None
    if len(parts) == 1:
        return "__init__"
    first = parts[1]
    if (package / first).is_dir() or (package / f"{first}.py").is_file():
        return first
    return "__init__"


def _resolve_from(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """(line, dotted name) of every import in the tree: anywhere, under any condition."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_from(node, module, is_package)
            if base == ROOT_NAME:  # from verityrag import x: a submodule or a name of __init__
                for alias in node.names:
                    yield node.lineno, f"{ROOT_NAME}.{alias.name}"
            else:
                yield node.lineno, base
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute | ast.Name)
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value


def scan(package: Path) -> list[Import]:
    """Every import from one unit of ``package`` into another."""
    out = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        source = unit_of_path(relative)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        module = module_name(relative)
        for line, name in imported_names(tree, module, path.name == "__init__.py"):
            target = unit_of_module(name, package)
            if target is not None and target != source:
                shown = Path(package.name) / relative
                out.append(Import(shown.as_posix(), line, source, target, name))
    return out


def units(package: Path) -> set[str]:
    found = {p.name for p in package.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    return found | {p.stem for p in package.glob("*.py")}


def upward_imports(imports: list[Import]) -> list[str]:
    problems = []
    for imp in imports:
        if imp.source not in LAYER_OF or imp.target not in LAYER_OF:
            continue  # reported by the unplaced-unit check
        src, dst = LAYER_OF[imp.source], LAYER_OF[imp.target]
        if dst > src:
            problems.append(
                f"{imp}: `{imp.source}` (layer {src}) may not import `{imp.target}` (layer {dst}, higher); "
                f"move the code down, pass it in from above, or change LAYERS if the design changed"
            )
    return problems


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return scan(PACKAGE)


def test_every_unit_has_a_layer() -> None:
    unplaced = sorted(units(PACKAGE) - set(LAYER_OF))
    assert not unplaced, (
        f"verityrag units with no layer in tests/test_layers.py LAYERS: {', '.join(unplaced)}; "
        "add each to the layer it belongs to (docs/architecture.md, Layers)"
    )


def test_layer_table_names_each_unit_once() -> None:
    listed = [unit for layer in LAYERS for unit in layer]
    assert len(listed) == len(set(listed)), sorted({u for u in listed if listed.count(u) > 1})


def test_imports_only_go_to_the_same_or_a_lower_layer(imports: list[Import]) -> None:
    problems = upward_imports(imports)
    assert not problems, "imports into a higher layer:\n" + "\n".join(problems)


def test_units_import_each_other_without_a_cycle(imports: list[Import]) -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    example: dict[tuple[str, str], Import] = {}
    for imp in imports:
        edges[imp.source].add(imp.target)
        example.setdefault((imp.source, imp.target), imp)
    cycle = find_cycle(edges)
    assert cycle is None, (
        "the units import each other in a cycle: "
        + " -> ".join(cycle)
        + "\n"
        + "\n".join(f"  {a} -> {b}: {example[(a, b)]}" for a, b in itertools.pairwise(cycle))
    )


def test_the_product_imports_nothing_of_the_lab(imports: list[Import]) -> None:
    into_lab = [f"{imp}" for imp in imports if imp.target in LAB and imp.source not in LAB]
    assert not into_lab, (
        f"the product imports the lab ({', '.join(LAB)}); move what it needs down:\n" + "\n".join(into_lab)
    )


def module_imports(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (anywhere, under any condition).

    ``from verityrag.a import b`` reaches the module ``verityrag.a.b`` when there is one, else
    ``verityrag.a`` (its ``__init__``); a package's ``__init__`` is the package's own name.
    """
    modules = {module_name(p.relative_to(package)) for p in package.rglob("*.py")}
    edges: dict[str, set[str]] = defaultdict(set)
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        module = module_name(relative)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve_from(node, module, path.name == "__init__.py")
                names = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                    for alias in node.names
                ]
            for name in names:
                while name and name not in modules:  # verityrag.a.b.C -> verityrag.a.b
                    name = name.rpartition(".")[0]
                if name and name != module:
                    edges[module].add(name)
    return edges


def test_modules_import_each_other_without_a_cycle() -> None:
    cycle = find_cycle(module_imports(PACKAGE))
    assert cycle is None, (
        "modules import each other in a cycle (also under TYPE_CHECKING or inside a function): "
        + " -> ".join(cycle)
        + "; put what both need in a module below them, or pass it in"
    )


def test_no_two_packages_name_a_module_alike_for_different_things() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name not in ("__init__.py", "__main__.py"):
            by_name[path.name].append(path.relative_to(PACKAGE.parent).as_posix())
    clashes = {
        name: paths
        for name, paths in by_name.items()
        if len(paths) > 1 and tuple(sorted(paths)) != SHARED_MODULE_NAMES.get(name)
    }
    assert not clashes, (
        "one module name for different things in several packages (name each for what it is): "
        + ("; ".join(f"{name}: {', '.join(paths)}" for name, paths in clashes.items()))
    )


def test_package_root_holds_only_the_expected_modules() -> None:
    found = {p.stem for p in PACKAGE.glob("*.py")}
    extra, missing = sorted(found - ROOT_MODULES), sorted(ROOT_MODULES - found)
    assert not extra, (
        f"modules at the root of verityrag/ that belong in a subpackage: {', '.join(extra)} "
        f"(the root holds only {', '.join(sorted(ROOT_MODULES))})"
    )
    assert not missing, f"root modules users import are gone: {', '.join(missing)}"


# ------------------------------------------------------------------ the checker itself


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    package = tmp_path / ROOT_NAME
    for name, text in {"__init__.py": "", **files}.items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


def test_checker_sees_imports_under_type_checking_in_functions_relative_and_by_name(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        {
            "text/__init__.py": "",
            "text/a.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n"
                "    from verityrag.pipeline import X\n"
                "def f():\n"
                "    import verityrag.index.live\n"
                "    from ..retrieval import hybrid\n"
                "    from verityrag import config\n"
                "    importlib.import_module('verityrag.agent.controller')\n"
                "from . import b\n"  # the same unit
            ),
            "text/b.py": "",
            "pipeline.py": "",
            "config.py": "",
            "index/__init__.py": "",
            "retrieval/__init__.py": "",
            "agent/__init__.py": "",
        },
    )
    found = scan(package)
    assert [(i.line, i.target) for i in found] == [
        (3, "pipeline"),
        (5, "index"),
        (6, "retrieval"),
        (7, "config"),
        (8, "agent"),
    ]
    problems = upward_imports(found)
    assert len(problems) == 5
    assert problems[0].startswith("verityrag/text/a.py:3 imports verityrag.pipeline: `text` (layer 1)")


def test_checker_reads_a_name_from_the_package_as_its_init(tmp_path: Path) -> None:
    package = _package(tmp_path, {"errors.py": "from verityrag import Settings\n"})
    (imp,) = scan(package)
    assert (imp.source, imp.target) == ("errors", "__init__")
    assert "`errors` (layer 0) may not import `__init__`" in upward_imports([imp])[0]


def test_checker_finds_a_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}}) is None
