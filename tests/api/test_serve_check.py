"""``python -m verityrag.serve --check``'s query against a real API server, both verdicts."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest
from fastapi import FastAPI

from verityrag import VerityRAGPipeline
from verityrag.api import create_app
from verityrag.serve import check_query

Serve = Callable[[FastAPI], AbstractContextManager[str]]  # the ``serve`` fixture (conftest.py)

pytestmark = pytest.mark.integration


def test_check_reports_the_abstain_reason_and_fails(serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    with serve(create_app(VerityRAGPipeline(), api_key="")) as url:  # an empty index must abstain
        assert check_query(url) == 1
    assert "-> abstained (no_evidence)" in capsys.readouterr().out


def test_check_prints_the_answer_and_passes(serve: Serve, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = VerityRAGPipeline()
    pipeline.ingest_document(
        "tesla", "Nikola Tesla", "In 1884 Tesla moved to New York City to work for Thomas Edison."
    )
    with serve(create_app(pipeline, api_key="")) as url:
        code = check_query(url)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "-> answered:" in out
    assert "Edison" in out
