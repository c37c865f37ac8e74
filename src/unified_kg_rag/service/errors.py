"""Typed JSON errors of the HTTP API, with the HTTP status of each error kind.

An error is ``{"error": {"type", "message", "field"}}``. The status follows the CLI's exit
code classes: a usage or configuration error 400, an unknown job, document, entity or
community 404, an upload over a limit 413, a strategy or graph the index does not serve or a
build or job holding the index 409, a model failure 502, a store failure 503, anything else
500.
Nothing in an error names a key or a secret: the messages are the CLI's one-line messages.

The service's own refusals are `ServiceError` (a key missing or unknown 401, a scope lacking
403, a body too large 413, a query string too long 414, a question too long 422);
middlewares, which answer before any route, send the same body with `send_error`.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from unified_kg_rag.util.errors import (
    BuildInProgress,
    JobConflictError,
    MethodologyNotIndexedError,
    ModelError,
    NotFoundError,
    PayloadTooLargeError,
    StoreError,
    UkrError,
)

__all__ = [
    "ServiceError",
    "error_body",
    "error_response",
    "error_status",
    "install_error_handlers",
    "send_error",
]


class ServiceError(Exception):
    """A request the service refuses on its own account (auth, limits), with its status.

    Attributes:
        status: the HTTP status.
        kind: the error's ``type`` in the JSON body (``AuthenticationError`` ...).
        message: one line; never a key or a secret.
        field: the request field or header at fault, if one.
        headers: extra response headers (``WWW-Authenticate`` on a 401).
    """

    def __init__(
        self, status: int, kind: str, message: str, *, field: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.status = status
        self.kind = kind
        self.message = message
        self.field = field
        self.headers = headers or {}


def error_status(error: UkrError) -> int:
    """Return the HTTP status of an error kind (module docstring)."""
    if isinstance(error, MethodologyNotIndexedError | BuildInProgress | JobConflictError):
        return 409
    if isinstance(error, NotFoundError):
        return 404
    if isinstance(error, PayloadTooLargeError):
        return 413
    if isinstance(error, StoreError):
        return 503
    if isinstance(error, ModelError):
        return 502
    return 400 if error.exit_code == 2 else 500


def error_body(kind: str, message: str, field: str | None = None) -> dict[str, Any]:
    """The JSON body of an error: ``{"error": {"type", "message"[, "field"]}}``."""
    body: dict[str, Any] = {"type": kind, "message": message}
    if field:
        body["field"] = field
    return {"error": body}


def error_response(status: int, kind: str, message: str, field: str | None = None) -> JSONResponse:
    """A JSON error reply with ``status``."""
    return JSONResponse(error_body(kind, message, field), status_code=status)


async def send_error(
    scope: Scope, receive: Receive, send: Send, error: ServiceError
) -> None:
    """Answer an ASGI request with ``error`` as a typed JSON error (for middlewares)."""
    response = error_response(error.status, error.kind, error.message, error.field)
    response.headers.update(error.headers)
    await response(scope, receive, send)


def install_error_handlers(api: FastAPI) -> None:
    """Answer every `UkrError` and `ServiceError` a route raises as a typed JSON error."""

    @api.exception_handler(ServiceError)
    async def service_error(_: Request, error: ServiceError) -> JSONResponse:
        response = error_response(error.status, error.kind, error.message, error.field)
        response.headers.update(error.headers)
        return response

    @api.exception_handler(UkrError)
    async def ukr_error(_: Request, error: UkrError) -> JSONResponse:
        return error_response(error_status(error), type(error).__name__, str(error),
                              getattr(error, "field", None))  # fmt: skip
