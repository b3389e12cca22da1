"""How the API's endpoints are declared: :class:`RouteTable`, and the error responses, key
dependencies and 404 that the endpoints in :mod:`verityrag.api.routes` share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Depends, FastAPI

from verityrag.api.deps import API_KEY_HEADER, require_api_key, require_read_key
from verityrag.api.schemas import ErrorOut

__all__ = ["ERROR_RESPONSES", "NOT_FOUND", "READ", "READ_RESPONSES", "WRITE", "WRITE_RESPONSES", "RouteTable"]

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    422: {"model": ErrorOut, "description": "Invalid input; `error.field` names it."},
    413: {"model": ErrorOut, "description": "Request body over the limit."},
    503: {"model": ErrorOut, "description": "A model or backend is unavailable; `error.message` says why."},
}
READ_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    401: {
        "model": ErrorOut,
        "description": f"Missing or wrong `{API_KEY_HEADER}` (when the server has a read key).",
    },
}
WRITE_RESPONSES: dict[int | str, dict[str, Any]] = {
    **ERROR_RESPONSES,
    401: {
        "model": ErrorOut,
        "description": f"Missing or wrong `{API_KEY_HEADER}` (when the server has a key).",
    },
    403: {"model": ErrorOut, "description": "The read key, where the write key is needed."},
}
READ = [Depends(require_read_key)]
WRITE = [Depends(require_api_key)]
NOT_FOUND: dict[int | str, dict[str, Any]] = {404: {"model": ErrorOut, "description": "No such document."}}

_Endpoint = TypeVar("_Endpoint", bound=Callable[..., Any])


class RouteTable:
    """Endpoints declared where they are defined (``@endpoints.post(path, ...)``), added to an app by ``add_to``.

    Not an ``APIRouter``: from FastAPI 0.165 ``app.include_router`` keeps a router as one
    nested route, and ``app.routes`` no longer lists the ``APIRoute`` objects that the 405
    ``Allow`` header (:mod:`verityrag.api.error_responses`) and the route label of a request answered
    before routing (:mod:`verityrag.api.middleware`) look through. ``add_to`` registers each
    endpoint on the app itself, as ``app.get(...)`` and friends do, in declaration order.
    """

    def __init__(self) -> None:
        self._routes: list[tuple[str, Callable[..., Any], list[str], dict[str, Any]]] = []

    def route(self, path: str, methods: list[str], **options: Any) -> Callable[[_Endpoint], _Endpoint]:
        def record(endpoint: _Endpoint) -> _Endpoint:
            self._routes.append((path, endpoint, methods, options))
            return endpoint

        return record

    def post(self, path: str, **options: Any) -> Callable[[_Endpoint], _Endpoint]:
        return self.route(path, ["POST"], **options)

    def delete(self, path: str, **options: Any) -> Callable[[_Endpoint], _Endpoint]:
        return self.route(path, ["DELETE"], **options)

    def get_with_head(self, path: str, **options: Any) -> Callable[[_Endpoint], _Endpoint]:
        """A GET route that answers HEAD too, as Starlette's GET routes do and FastAPI's do not.

        HEAD runs the same endpoint, so it gets the GET's status and headers (the server sends
        no body), on a twin route kept out of the OpenAPI spec: listed there, HEAD would repeat
        the GET's operationId (which must be unique) and promise a JSON body it does not send.
        """

        def register(endpoint: _Endpoint) -> _Endpoint:
            self.route(path, ["GET"], **options)(endpoint)
            self.route(path, ["HEAD"], include_in_schema=False, **options)(endpoint)
            return endpoint

        return register

    def add_to(self, app: FastAPI) -> None:
        for path, endpoint, methods, options in self._routes:
            app.add_api_route(path, endpoint, methods=methods, **options)
