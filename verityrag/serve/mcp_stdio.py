"""The MCP server's stdio transport, which answers every line it is sent.

The ``mcp`` package's stdio transport passes a line that is not a JSON-RPC message to the
session as an exception, and the session drops it: no reply, no log line, and a client waiting
on the request's id hangs (found by an independent test with ``{not json``, ``[]``, ``123``, an
object without ``jsonrpc``, ``"method": 5``, params as a string, an object as id, a batch
array, a filter nested 1,000 deep). Here each line is checked first; one that is not a
message gets the JSON-RPC 2.0 error reply (-32700 parse error, -32600 invalid request, with
the request's id when it has a usable one), sent through the transport's own writer so replies
never interleave, and a line on stderr.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterable, AsyncIterator
from io import TextIOWrapper
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from verityrag.text.unicode import utf8_safe

logger = logging.getLogger(__name__)

#: Refusals waiting for the writer (lines arrive faster than replies are written only in bursts).
_QUEUE = 256


def refusal(line: str) -> types.JSONRPCError | None:
    """The error reply to ``line`` when it is not a JSON-RPC message, else None."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError) as exc:
        return _error(None, types.PARSE_ERROR, f"Parse error: not JSON ({_short(exc)})")
    request_id = value.get("id") if isinstance(value, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    why = _not_a_message(value, request_id)
    if why is None:
        try:  # the package's own reading, which the session will do again
            types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            return None
        except Exception:  # pydantic's ValidationError, or a depth or Unicode error
            why = "not a valid request, notification or response (a value may be of the wrong type, or nest too deep)"
    return _error(request_id, types.INVALID_REQUEST, f"Invalid Request: {why}")


def _not_a_message(value: object, request_id: str | int | None) -> str | None:
    """Why ``value`` is not a JSON-RPC 2.0 object, or None. An object id passed the package's
    check as a notification's extra field, and went unanswered."""
    if isinstance(value, list):
        return "a batch (an array) is not supported: send one request per line"
    if not isinstance(value, dict):
        return "not a JSON-RPC object"
    if value.get("jsonrpc") != "2.0":
        return 'it needs "jsonrpc": "2.0"'
    if "method" in value and not isinstance(value["method"], str):
        return '"method" must be a string'
    if "params" in value and not isinstance(value["params"], dict | list):
        return '"params" must be an object'
    if "id" in value and request_id is None and value["id"] is not None:
        return '"id" must be a string or an integer'
    return None


def _error(request_id: str | int | None, code: int, message: str) -> types.JSONRPCError:
    error = types.ErrorData(code=code, message=utf8_safe(message))
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)


def _short(exc: BaseException) -> str:
    return "nests too deep" if isinstance(exc, RecursionError) else str(exc)[:120]


class CheckedLines:
    """The lines of ``lines`` that are JSON-RPC messages; the reply to each other line goes to
    ``refusals`` (and a warning to the log)."""

    def __init__(self, lines: AsyncIterable[str], refusals: MemoryObjectSendStream[SessionMessage]) -> None:
        self.lines = lines
        self.refusals = refusals

    def __aiter__(self) -> AsyncIterator[str]:
        return self._messages()

    async def _messages(self) -> AsyncIterator[str]:
        async with self.refusals:
            async for line in self.lines:
                if not line.strip():
                    continue
                error = refusal(line)
                if error is None:
                    yield line
                    continue
                logger.warning("refused a line on stdin: %s", error.error.message)
                await self.refusals.send(SessionMessage(error))


async def serve_stdio(server: MCPServer[Any]) -> None:
    """Run ``server`` on stdin / stdout until stdin ends, answering malformed lines."""
    send, receive = anyio.create_memory_object_stream[SessionMessage](_QUEUE)
    raw = anyio.wrap_file(TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, on our streams
    async with stdio_server(stdin=CheckedLines(raw, send)) as (read_stream, write_stream):  # type: ignore[arg-type]

        async def forward_refusals() -> None:
            async with receive:
                async for message in receive:
                    await write_stream.send(message)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(forward_refusals)
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()


def run_stdio(server: MCPServer[Any]) -> None:
    """:func:`serve_stdio` from synchronous code (``MCPServer.run("stdio")``'s place)."""
    anyio.run(serve_stdio, server)
