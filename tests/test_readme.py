"""README figures are generated from the reports, never typed: the committed README must match."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.unit
def test_readme_and_results_page_match_the_committed_reports(
    load_script: Callable[[str], ModuleType],
) -> None:
    module = load_script("update_readme_results")
    for page in module.PAGES:
        text = page.read_text(encoding="utf-8")
        assert module.render(text, page) == text, f"{page.name} figures are stale: run `make readme-results`"


@pytest.mark.unit
def test_readme_starts_with_the_two_setup_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    head = readme.split("## ", 1)[0]
    assert "make run" in head
    assert "make test" in head
    assert "make test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
