"""The API's error responses: ``{"error": {"field", "message"}}`` for every failure, and the handlers that make them."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from verityrag.api.schemas import PATTERN_RULES, UNION_TAGS
from verityrag.errors import InvalidInputError, VerityRAGError
from verityrag.ingest.writer import METADATA_LIMITS
from verityrag.text.unicode import utf8_safe

__all__ = ["ApiError", "error_response", "install_error_handlers"]

logger = logging.getLogger(__name__)


class ApiError(Exception):
    """An error response the API chooses: status, the field at fault (or None) and a message."""

    def __init__(self, status: int, field: str | None, message: str) -> None:
        self.status = status
        self.field = field
        self.message = message
        super().__init__(message)


def error_response(
    status: int, field: str | None, message: str, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    # UTF-8-safe: a lone surrogate echoed from the input made the 422 a 500
    body = {"field": utf8_safe(field) if field is not None else None, "message": utf8_safe(message)}
    return JSONResponse({"error": body}, status_code=status, headers=dict(headers or {}))


def _field_path(loc: Sequence[int | str]) -> str | None:
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    path = ""
    for part in parts:
        if part in UNION_TAGS:
            continue
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "body"


def _allowed_methods(request: Request) -> list[str]:
    methods: set[str] = set()
    for route in request.app.router.routes:
        if isinstance(route, APIRoute) and route.matches(request.scope)[0] != Match.NONE:
            methods |= route.methods or set()
    if "GET" in methods:
        methods.add("HEAD")
    return sorted(methods)


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def on_validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first: dict[str, Any] = (
            dict(errors[0]) if errors else {"loc": (), "msg": "invalid request", "type": ""}
        )
        field: str | None
        if first.get("type") == "json_invalid":
            ctx = first.get("ctx") or {}
            field, problem = "body", f"is not valid JSON ({ctx.get('error', first['msg'])})"
        elif isinstance(first.get("input"), bytes):
            # FastAPI parses a body as JSON only under a JSON Content-Type and passes any other as
            # bytes, which failed as "Input should be a valid dictionary": `curl -d '{...}'` sends
            # application/x-www-form-urlencoded.
            field = "body"
            sent = request.headers.get("content-type", "none")
            problem = f"must be JSON sent with Content-Type: application/json (the request's was {sent})"
        else:
            field = _field_path(first.get("loc", ()))
            pattern = str((first.get("ctx") or {}).get("pattern", ""))
            rule = PATTERN_RULES.get(pattern) if first.get("type") == "string_pattern_mismatch" else None
            problem = rule or str(first["msg"])
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        return error_response(422, field, f"{field}: {problem}{more}")

    @app.exception_handler(InvalidInputError)
    async def on_invalid_input(_: Request, exc: InvalidInputError) -> JSONResponse:
        return error_response(422, exc.field, str(exc))

    @app.exception_handler(VerityRAGError)
    async def on_unavailable(_: Request, exc: VerityRAGError) -> JSONResponse:
        # ModelLoadError, StorageError, BackendUnavailableError, NotFittedError: the
        # request was fine, a model or backend is not; retrying later may work.
        logger.error("503 %s: %s", type(exc).__name__, exc)
        return error_response(503, None, f"{type(exc).__name__}: {exc}", headers={"Retry-After": "5"})

    @app.exception_handler(ApiError)
    async def on_api_error(_: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.field, exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def on_http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:
            # FastAPI's "error parsing the body" (e.g. bytes that are not UTF-8): one status
            # for every unreadable body, the documented 422 naming the body.
            if isinstance(exc.__cause__, RecursionError):  # JSON nested deeper than Python parses
                limit = METADATA_LIMITS.depth
                return error_response(
                    422, "body", f"body: nests too deep to parse (metadata may nest {limit} levels)"
                )
            if request.headers.get("content-type", "").lower().startswith("multipart/"):
                return error_response(
                    422, "body", f"body: is not a readable multipart/form-data body ({exc.detail})"
                )
            return error_response(422, "body", f"body: is not valid JSON ({exc.detail})")
        if exc.status_code == 405:
            # Starlette answers from the first route whose path matches, so its Allow
            # header lists that route's methods only; list every route's for this path.
            allowed = _allowed_methods(request)
            return error_response(405, None, str(exc.detail), headers={"Allow": ", ".join(allowed)})
        return error_response(exc.status_code, None, str(exc.detail), headers=exc.headers)

    # An unexpected exception is answered by verityrag.api.middleware.UnhandledErrorMiddleware:
    # a handler registered here for Exception runs in Starlette's ServerErrorMiddleware, which
    # re-raises after the response, and uvicorn then closed the keep-alive connection unannounced.
