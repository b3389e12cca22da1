"""The ``verityrag.llm`` package: a complete ``__all__``, the old import paths, and its place low in the layers."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
from pathlib import Path

import pytest

import verityrag.llm

LLM_DIR = Path(verityrag.llm.__file__).parent
PUBLIC_MODULES = [
    "anthropic",
    "completion",
    "gemini",
    "local_gemma",
    "local_qwen",
    "openai_compatible",
    "providers",
]


@pytest.mark.unit
def test_llm_all_lists_every_public_name_of_its_modules_and_each_resolves() -> None:
    exported = set(verityrag.llm.__all__)
    assert len(exported) == len(verityrag.llm.__all__)
    for name in PUBLIC_MODULES:
        module = importlib.import_module(f"verityrag.llm.{name}")
        assert set(module.__all__) - exported == set(), name
        for public in module.__all__:
            assert getattr(verityrag.llm, public) is getattr(module, public)
    assert {"HTTPCompleteFn", "RetryPolicy"} <= exported


@pytest.mark.unit
def test_llm_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        verityrag.llm.nope  # noqa: B018


@pytest.mark.unit
def test_llm_modules_import_nothing_of_verityrag_but_errors_and_llm() -> None:
    allowed = ("verityrag.errors", "verityrag.llm")
    for info in pkgutil.iter_modules([str(LLM_DIR)]):
        tree = ast.parse((LLM_DIR / f"{info.name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for name in names:
                if name.startswith("verityrag"):
                    assert name.startswith(allowed), f"verityrag/llm/{info.name}.py imports {name}"


@pytest.mark.integration
def test_importing_the_contract_does_not_import_httpx(child_env: dict[str, str], python_exe: str) -> None:
    code = "import sys, verityrag.llm; print('httpx' in sys.modules)"
    out = subprocess.run([python_exe, "-c", code], env=child_env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
