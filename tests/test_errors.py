"""``verityrag/errors.py`` holds the one exception tree: every error is defined there and drawn in its docstring."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import verityrag
import verityrag.errors

PACKAGE = Path(verityrag.__file__).parent

# Exceptions that are not errors of the library, with why they live elsewhere.
DEFINED_ELSEWHERE = {
    (
        "api/error_responses.py",
        "ApiError",
    ),  # an HTTP response the API layer builds, not raised by the library
}


def _error_classes() -> dict[str, type[BaseException]]:
    return {
        name: value
        for name, value in vars(verityrag.errors).items()
        if inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__ == "verityrag.errors"
    }


def _looks_like_exception(node: ast.ClassDef) -> bool:
    bases = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
    return node.name.endswith(("Error", "Exception")) or any(
        base.endswith(("Error", "Exception")) for base in bases
    )


@pytest.mark.unit
def test_no_public_exception_class_is_defined_outside_errors_module() -> None:
    elsewhere = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ClassDef)
                and not node.name.startswith("_")
                and _looks_like_exception(node)
            ):
                elsewhere.add((relative, node.name))
    assert elsewhere - DEFINED_ELSEWHERE == set()


@pytest.mark.unit
def test_errors_docstring_tree_names_every_error() -> None:
    doc = verityrag.errors.__doc__ or ""
    assert [name for name in _error_classes() if name not in doc] == []


@pytest.mark.unit
@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("verityrag.models", "ModelFilesMissingError"),
        ("verityrag.models.folder", "ModelFilesMissingError"),
        ("verityrag.thresholds.precision", "ThresholdNotReachableError"),
        ("verityrag.verify.llm_judge", "MalformedVerdictError"),
    ],
)
def test_moved_error_stays_importable_from_its_old_module(module: str, name: str) -> None:
    assert getattr(importlib.import_module(module), name) is getattr(verityrag.errors, name)


@pytest.mark.unit
def test_moved_errors_keep_their_place_in_the_tree() -> None:
    errors = verityrag.errors
    assert issubclass(errors.ModelFilesMissingError, errors.ModelLoadError)
    assert issubclass(errors.MalformedVerdictError, errors.LLMResponseError)
    assert issubclass(errors.ThresholdNotReachableError, errors.VerityRAGError)
    missing = errors.ModelFilesMissingError("the reader", Path("m"), ["tokenizer.json"], "make models-reader")
    assert (missing.folder, missing.missing, missing.build_command) == (
        Path("m"),
        ["tokenizer.json"],
        "make models-reader",
    )
    assert missing.attempts == [("m", "missing tokenizer.json; build them with `make models-reader`")]
    assert errors.MalformedVerdictError("bad").provider == "llm_judge"
