"""``make ask`` (``python -m verityrag``) with the API running: questions go to the API's index."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest
from fastapi import FastAPI

from verityrag import VerityRAGPipeline
from verityrag.__main__ import main
from verityrag.api import create_app
from verityrag.pipeline import IN_MEMORY


@pytest.mark.integration
def test_questions_go_to_the_running_api_with_its_documents(
    serve: Callable[[FastAPI], AbstractContextManager[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = VerityRAGPipeline(data_dir=IN_MEMORY)
    pipeline.ingest_document(
        "mill", "Wexcombe tide mill", "The tide mill at Wexcombe was built by the Ashby family in 1790."
    )
    with serve(create_app(pipeline)) as url:
        assert (
            main(["--api-url", url, "Who built the tide mill at Wexcombe?", "What colour is the mill?"]) == 0
        )
    out = capsys.readouterr().out
    assert "VerityRAG ready: 1 documents, 1 chunks" in out
    assert f"asking the API at {url}" in out
    assert "ANSWER: the Ashby family: The tide mill at Wexcombe was built by the Ashby family" in out
    assert "ABSTAIN (" in out
    assert "\n  why: " in out


@pytest.mark.integration
def test_an_api_url_that_does_not_answer_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--api-url", "http://127.0.0.1:9", "a question"]) == 2
    assert "no VerityRAG API answers at http://127.0.0.1:9" in capsys.readouterr().err
