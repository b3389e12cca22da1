"""docs/llm.md's Python examples run as written (with a key in the environment: nothing is sent)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from verityrag.config import ENV_PREFIX

# integration: the examples build pipelines as written, and an LLM pipeline loads the reader check.
pytestmark = pytest.mark.integration

LLM_DOC = Path(__file__).resolve().parents[2] / "docs" / "llm.md"


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)


def test_llm_doc_python_examples_as_written_run(monkeypatch: pytest.MonkeyPatch) -> None:
    # The example names ANTHROPIC_API_KEY as its key's source; the providers only build their
    # requests here, and the local LLMs load on their first call: no network and no LLM is used
    # (the extractive reader is: the LLM pipelines attach its check at construction).
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    for name in [n for n in os.environ if n.upper().startswith(ENV_PREFIX)]:
        monkeypatch.delenv(name)  # the pipelines read Settings.from_env(): run on the defaults
    blocks = _python_blocks(LLM_DOC.read_text(encoding="utf-8"))
    assert blocks, "docs/llm.md has no Python example"
    for block in blocks:
        exec(compile(block, str(LLM_DOC), "exec"), {"__name__": "llm_doc_example"})
