"""The MCP server answers every line on stdin: a malformed one gets its JSON-RPC error reply
(verityrag.serve.mcp_stdio), where the ``mcp`` package's transport dropped it and the client hung."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from queue import Empty, Queue
from typing import Any

import pytest

from verityrag.serve.mcp_stdio import refusal

REPO_ROOT = Path(__file__).resolve().parent.parent
DEEP = '{"a": ' * 1000 + "1" + "}" * 1000
CALL = '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "query", "arguments": %s}}'

MALFORMED = [
    ("{not json", None, -32700),
    ("[]", None, -32600),
    ("123", None, -32600),
    ('{"id": 1, "method": "ping"}', 1, -32600),  # no "jsonrpc"
    ('{"jsonrpc": "2.0", "id": 2, "method": "ping",}', None, -32700),  # trailing comma
    ('{"jsonrpc": "2.0", "id": 3, "method": 5}', 3, -32600),
    ('{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": "x"}', 4, -32600),
    ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', None, -32600),
    ('[{"jsonrpc": "2.0", "id": 5, "method": "ping"}]', None, -32600),  # a batch
    (CALL % ('{"question": "x?", "filter": ' + DEEP + "}"), None, None),  # nested past parsing
]


@pytest.mark.unit
@pytest.mark.parametrize(("line", "request_id", "code"), MALFORMED)
def test_a_malformed_line_gets_its_json_rpc_error(
    line: str, request_id: int | None, code: int | None
) -> None:
    error = refusal(line)
    assert error is not None
    if code is not None:
        assert error.error.code == code
        assert error.id == request_id
    json.loads(error.model_dump_json(by_alias=True, exclude_unset=True))  # writable as one line


@pytest.mark.unit
def test_a_valid_message_passes() -> None:
    assert refusal('{"jsonrpc": "2.0", "id": 1, "method": "ping"}') is None
    assert refusal(CALL % '{"question": "Who?"}') is None


def _reader(stream: Any, lines: Queue[str]) -> None:
    for line in stream:
        lines.put(line)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_the_server_answers_malformed_lines_and_goes_on(tmp_path: Path) -> None:
    env = {**os.environ, "VERITYRAG_MCP_MAX_DOCS": "5"}
    env.pop("VERITYRAG_DATA_DIR", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "verityrag.mcp_server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "server.log").open("w"),
        text=True,
        encoding="utf-8",
        cwd=REPO_ROOT,
        env=env,
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    lines: Queue[str] = Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()

    def send(text: str) -> None:
        assert proc.stdin is not None
        proc.stdin.write(text + "\n")
        proc.stdin.flush()

    def reply() -> dict[str, Any]:
        try:
            return dict(json.loads(lines.get(timeout=60)))
        except Empty:
            pytest.fail("no reply within 60 s: the server went silent")

    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
        assert reply()["id"] == 0
        send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
        for line, request_id, code in MALFORMED:
            answer = reply() if (send(line) or True) else {}
            assert "error" in answer, answer
            if code is not None:
                assert (answer["id"], answer["error"]["code"]) == (request_id, code)
        send(CALL % '{"question": "\\ud800"}')  # a lone surrogate: an error reply, not silence
        answer = reply()
        assert answer["id"] == 7
        assert answer.get("error") or answer["result"]["isError"]
        send('{"jsonrpc": "2.0", "id": 9, "method": "ping"}')
        assert reply() == {"jsonrpc": "2.0", "id": 9, "result": {}}
    finally:
        proc.terminate()
        proc.wait(20)
