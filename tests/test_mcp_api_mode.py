"""``python -m verityrag.mcp_server --api-url URL``: the MCP tools on the REST API's index, both real
processes (the API under uvicorn, the MCP server over stdio driven by the official client)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from verityrag.serve import free_port
from verityrag.serve.launcher import running_api_server

REPO_ROOT = Path(__file__).resolve().parent.parent
KEY = "mcp-test-key"
DOCS = [
    {
        "doc_id": "notes/zanthor",
        "title": "Zanthor lighthouse",
        "text": "The Zanthor lighthouse stands on the northern cliffs of Vellmark island. "
        "It was designed by the engineer Ottoline Brask in 1887.",
        "metadata": {"lang": "en"},
    },
    {
        "doc_id": "notes/orchard",
        "title": "Vellmoor orchard",
        "text": "The Vellmoor orchard was planted in 1896 by the gardener Tobias Lindqvist.",
        "metadata": {"lang": "de"},
    },
]

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.timeout(120)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def api_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with running_api_server(tmp_path_factory.mktemp("api"), KEY) as url:
        reply = httpx.post(f"{url}/documents", json={"documents": DOCS}, headers={"X-API-Key": KEY})
        assert reply.status_code == 200, reply.text
        yield url


@asynccontextmanager
async def mcp_on_api(api_url: str, tmp_path: Path) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "verityrag.mcp_server", "--api-url", api_url],
        env={"VERITYRAG_API_KEY": KEY},
        cwd=REPO_ROOT,
    )
    with (tmp_path / "server.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def test_tools_read_and_write_the_apis_index(api_url: str, tmp_path: Path) -> None:
    question = "Who designed the Zanthor lighthouse?"
    async with mcp_on_api(api_url, tmp_path) as session:
        listed = await call(session, "list_documents", limit=1)
        german = await call(session, "list_documents", filter={"lang": "de"})
        via_mcp = await call(session, "query", question=question)
        via_api = httpx.post(f"{api_url}/query", json={"question": question}).json()
        added = await call(
            session, "ingest", doc_id="notes/bell", title="Bell", text="The bell was cast in 1702."
        )
        gone = await call(session, "delete_document", doc_id="notes/zanthor")
        gone_again = await call(session, "delete_document", doc_id="notes/zanthor")
        bad = await session.call_tool("list_documents", {"filter": {"lang": {"$gt": 1}}})
        verified = await call(session, "verify", answer="Brask designed it.", evidence=[DOCS[0]["text"]])
    assert (listed["total"], listed["next_offset"]) == (2, 1)
    assert [d["doc_id"] for d in listed["documents"]] == ["notes/orchard"]
    assert [d["doc_id"] for d in german["documents"]] == ["notes/orchard"]
    # The same reply the API gives, in the MCP tool's shape.
    assert via_mcp["abstained"] == via_api["abstained"]
    assert via_mcp["answer"] == via_api["answer"]
    assert via_mcp["grounding_score"] == via_api["grounding"]["overall_score"]
    assert set(via_mcp) >= {"short_answer", "citations", "explanation", "latency_ms"}
    assert added == {"doc_id": "notes/bell", "n_chunks": 1, "replaced": False}
    assert httpx.get(f"{api_url}/documents/notes/bell").status_code == 200
    assert gone == {"doc_id": "notes/zanthor", "deleted": True}
    assert gone_again == {"doc_id": "notes/zanthor", "deleted": False}
    assert httpx.get(f"{api_url}/documents/notes/zanthor").status_code == 404
    assert bad.is_error
    assert "invalid input: filter" in bad.content[0].text  # type: ignore[union-attr]
    assert 0.0 < verified["overall_score"] <= 1.0
    assert "serving the API at" in (tmp_path / "server.log").read_text()


def test_an_api_that_does_not_answer_is_a_usage_error() -> None:
    url = f"http://127.0.0.1:{free_port('127.0.0.1')}"  # nothing listens there
    done = subprocess.run(
        [sys.executable, "-m", "verityrag.mcp_server", "--api-url", url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert f"--api-url {url}: " in done.stderr
    assert "did not answer" in done.stderr
    assert done.stdout == ""  # stdout carries only the protocol
