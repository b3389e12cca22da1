"""The one HTTP client of the API (``serve.api_client``) against a real server: the key it sends,
and the health check ``make ask`` and the MCP server start with."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest
from fastapi import FastAPI

from verityrag.api import create_app
from verityrag.errors import BackendUnavailableError
from verityrag.pipeline import IN_MEMORY, VerityRAGPipeline
from verityrag.serve.api_client import ApiClient, running_api

pytestmark = pytest.mark.integration

KEY = "a-test-key"
Serve = Callable[[FastAPI], AbstractContextManager[str]]  # the ``serve`` fixture (conftest.py)


def test_the_client_sends_its_key_and_finds_a_running_api(serve: Serve) -> None:
    with serve(create_app(VerityRAGPipeline(data_dir=IN_MEMORY), api_key=KEY)) as url:
        added = ApiClient(url, api_key=KEY).add_document("mill", "Mill", "The mill was built in 1790.")
        assert added["doc_id"] == "mill"
        with pytest.raises(BackendUnavailableError, match="401"):
            ApiClient(url).add_document("mill", "Mill", "The mill was built in 1790.")
        assert ApiClient(url).health()["documents"] == 1
        assert running_api(url) == url
        assert running_api(url + "/") == url
    assert running_api(url) is None  # stopped
