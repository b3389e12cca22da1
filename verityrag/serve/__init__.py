"""Serving: the launcher of ``make run`` (the API and the app), and what the front ends share.

``python -m verityrag.serve`` starts both; :mod:`verityrag.serve.bundled` builds the pipeline
over the bundled corpus (calibrated once, then restored from disk);
:mod:`verityrag.serve.query_reply` is the one JSON reply to a question every front end gives, and
:mod:`verityrag.serve.api_client` the one HTTP client of the API (the app, the MCP server and
``make ask`` use it when they ask a running API); the API lives in
:mod:`verityrag.api`, the app's views in :mod:`verityrag.ui`, the MCP server in
:mod:`verityrag.mcp_server`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verityrag._lazy import lazy_exports

if TYPE_CHECKING:
    from verityrag.serve.launcher import API_KEEP_ALIVE_S as API_KEEP_ALIVE_S
    from verityrag.serve.launcher import Service as Service
    from verityrag.serve.launcher import api_command as api_command
    from verityrag.serve.launcher import check_query as check_query
    from verityrag.serve.launcher import free_port as free_port
    from verityrag.serve.launcher import main as main
    from verityrag.serve.launcher import running_api_server as running_api_server
    from verityrag.serve.launcher import ui_command as ui_command
    from verityrag.serve.launcher import wait_healthy as wait_healthy
else:
    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "verityrag.serve.launcher": (
                "API_KEEP_ALIVE_S",
                "Service",
                "api_command",
                "check_query",
                "free_port",
                "main",
                "running_api_server",
                "ui_command",
                "wait_healthy",
            ),
        },
    )

__all__ = [
    "API_KEEP_ALIVE_S",
    "Service",
    "api_command",
    "check_query",
    "free_port",
    "main",
    "running_api_server",
    "ui_command",
    "wait_healthy",
]
