"""Pure ASGI middleware: a request body limit (413) and read timeout (408), a JSON 500 that keeps
the connection usable, and request counting for /metrics."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from verityrag.api.prometheus import ApiMetrics

logger = logging.getLogger(__name__)


def error_body(field: str | None, message: str) -> bytes:
    return json.dumps({"error": {"field": field, "message": message}}).encode("utf-8")


async def send_json(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


#: Seconds a request body may go without a byte arriving, and seconds it may take in all, before
#: the request is answered 408 and its connection closed (a stalled upload was held open).
BODY_IDLE_TIMEOUT_S = 10.0
BODY_TOTAL_TIMEOUT_S = 60.0


class BodySizeLimitMiddleware:
    """Refuse a request body above ``max_bytes`` with 413, by Content-Length or while it streams in,
    and one that stalls (``idle_timeout_s`` without a byte) or drags (``total_timeout_s``) with 408.

    The body is read here (it is at most ``max_bytes``) and replayed to the app, so a
    chunked upload without Content-Length is held to the same limit. ``path_limits`` gives
    some paths their own limit (file uploads).
    """

    def __init__(
        self,
        app: ASGIApp,
        max_bytes: int,
        idle_timeout_s: float = BODY_IDLE_TIMEOUT_S,
        total_timeout_s: float = BODY_TOTAL_TIMEOUT_S,
        path_limits: Mapping[str, int] | None = None,
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.idle_timeout_s = idle_timeout_s
        self.total_timeout_s = total_timeout_s
        self.path_limits = dict(path_limits or {})

    def _too_large(self, size: str, limit: int) -> bytes:
        return error_body("body", f"request body is {size}; the limit is {limit:,} bytes")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.path_limits.get(scope["path"], self.max_bytes)
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared is not None:
            try:
                length = int(declared)
            except ValueError:
                await send_json(send, 400, error_body("Content-Length", "is not an integer"))
                return
            if length > limit:
                await send_json(
                    send, 413, self._too_large(f"{length:,} bytes", limit), [(b"connection", b"close")]
                )
                return
        chunks: list[bytes] = []
        size = 0
        more = True
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.total_timeout_s
        while more:
            wait = min(self.idle_timeout_s, deadline - loop.time())
            try:
                message = await asyncio.wait_for(receive(), timeout=max(wait, 0.0))
            except TimeoutError:
                stalled = wait >= self.idle_timeout_s
                why = (
                    f"no byte of it arrived for {self.idle_timeout_s:g} s"
                    if stalled
                    else f"it took over {self.total_timeout_s:g} s"
                )
                logger.info("408 on %s %s after %d body bytes: %s", scope["method"], scope["path"], size, why)
                body = error_body("body", f"the request body timed out: {why} (the body-read timeout)")
                await send_json(send, 408, body, [(b"connection", b"close")])
                return
            if message["type"] != "http.request":  # client went away
                await self.app(scope, _replay([], message, receive), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            more = message.get("more_body", False)
            if size > limit:
                if more and not await self._drain(receive, limit):
                    return  # the client went away
                await send_json(
                    send, 413, self._too_large("over the limit", limit), [(b"connection", b"close")]
                )
                return
            chunks.append(chunk)
        await self.app(scope, _replay(chunks, None, receive), send)

    async def _drain(self, receive: Receive, limit: int) -> bool:
        """Read and drop the rest of an over-limit body, up to another ``max_bytes``, before the 413.

        The server cannot read the body once the response is sent, so a client still uploading
        would meet a closed connection instead of the 413 (seen as a rare test failure). A body
        longer still gets the 413 at that point and the connection closes under it.
        False: the client disconnected.
        """
        drained = 0
        more = True
        while more and drained <= limit:
            message = await receive()
            if message["type"] != "http.request":
                return False
            drained += len(message.get("body", b""))
            more = message.get("more_body", False)
        return True


def _replay(chunks: list[bytes], pending: Message | None, receive: Receive) -> Receive:
    state: dict[str, Any] = {"sent": False}

    async def replay() -> Message:
        if not state["sent"]:
            state["sent"] = True
            if pending is not None:
                return pending
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        return await receive()

    return replay


class UnhandledErrorMiddleware:
    """Answer an unexpected exception with the API's JSON 500, and keep the connection usable.

    Starlette's own handler for ``Exception`` sends the 500 and then re-raises, and uvicorn closes
    a connection whose app raised, without ``Connection: close``: the client's next request on it
    failed in transit. Here the exception ends with the response (logged with its traceback). One
    raised after the response began cannot be answered: it propagates, and the server closes the
    connection under the cut-short response, the only honest end of it.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_wrapper(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        except Exception as exc:
            logger.error("unexpected error on %s %s", scope["method"], scope["path"], exc_info=exc)
            if started:
                raise
            message = f"internal error ({type(exc).__name__}); it has been logged"
            await send_json(send, 500, error_body(None, message))


class RequestMetricsMiddleware:
    """Count every HTTP response by method, route template (not the raw path) and status."""

    def __init__(self, app: ASGIApp, metrics: ApiMetrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = {"code": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.record_request(scope["method"], _endpoint(scope), status["code"])


def _endpoint(scope: Scope) -> str:
    """The route template of the request, or ``"unmatched"``.

    The router records the route it chose in ``scope["route"]``. A request answered before
    routing (a 413 from ``BodySizeLimitMiddleware``) has none, so the app's routes are
    matched here as the router would: the first full match, else the first partial one
    (right path, other method).
    """
    route = scope.get("route")
    if route is None:
        route = _match_route(scope)
    return getattr(route, "path_format", None) or getattr(route, "path", None) or "unmatched"


def _match_route(scope: Scope) -> BaseRoute | None:
    router = getattr(scope.get("app"), "router", None)  # Starlette puts the app in the scope
    partial: BaseRoute | None = None
    for route in getattr(router, "routes", ()):
        if not isinstance(route, BaseRoute):
            continue
        match, _ = route.matches(scope)
        if match == Match.FULL:
            return route
        if match == Match.PARTIAL and partial is None:
            partial = route
    return partial
