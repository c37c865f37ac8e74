"""Typed JSON errors of the HTTP API, with the HTTP status of each error kind.

An error is ``{"error": {"type", "message", "field"}}``. The status follows the CLI's exit
code classes: a usage or configuration error 400, an unknown job, document, entity or
community 404, an upload over a limit 413, a strategy or graph the index does not serve or a
build or job holding the index 409, a model failure 502, a store failure 503 (also when a
pipeline stage meets them), a pipeline stage past its timeout 504, anything else 500.
Nothing in an error names a key or a secret: the messages are the CLI's one-line messages.

The service's own refusals are `ServiceError` (a key missing or unknown 401, a scope lacking
403, a body too large 413, a query string too long 414, a question too long 422);
middlewares, which answer before any route, send the same body with `send_error`.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Receive, Scope, Send

from unified_kg_rag.retrieval.pipeline import PipelineError, StageTimeoutError
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
    "ERROR_RESPONSES",
    "ErrorDetail",
    "ErrorResponse",
    "ServiceError",
    "error_body",
    "error_response",
    "error_status",
    "install_error_handlers",
    "send_error",
    "validation_message",
]


class ErrorDetail(BaseModel):
    """What went wrong: the error kind, one line, the request field at fault if one."""

    type: str
    message: str
    field: str | None = None


class ErrorResponse(BaseModel):
    """The body of every error reply of the ``/v1`` API."""

    error: ErrorDetail


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorResponse, "description": meaning}
    for status, meaning in (
        (400, "a bad argument or configuration"),
        (401, "no API key, or an unknown one"),
        (403, "the key lacks the route's scope"),
        (404, "the named index, job, document, entity or community is not there"),
        (409, "the index does not serve the strategy or graph, or a job or build writes it"),
        (413, "a body or upload over a limit"),
        (422, "a malformed request: not JSON, a field of the wrong type or out of range"),
        (502, "the model failed"),
        (503, "the store failed"),
        (504, "a staged pipeline's stage ran past its timeout"),
    )
}
"""The error replies every route may give, for the OpenAPI document (typed, not FastAPI's)."""


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
    """Return the HTTP status of an error kind (module docstring).

    A staged pipeline's stage error has the status of what it wraps (a store 503, a model
    502), a stage past its timeout 504.
    """
    if isinstance(error, StageTimeoutError):
        return 504
    if isinstance(error, PipelineError) and isinstance(error.__cause__, UkrError):
        return error_status(error.__cause__)
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
    body: dict[str, Any] = {"type": kind, "message": _encodable(message)}
    if field:
        body["field"] = _encodable(field)
    return {"error": body}


def _encodable(text: str) -> str:
    """``text`` with what UTF-8 cannot carry (a lone surrogate echoed from a request) escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


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


_HTTP_KINDS = {400: "BadRequest", 404: "NotFound", 405: "MethodNotAllowed"}
"""Error kinds of the framework's own refusals (no such route, a body it cannot parse)."""


def validation_message(error: RequestValidationError) -> tuple[str, str | None]:
    """One line for a malformed request, and the field at fault (``query.limit``, ``body``).

    The first problem is named (``query.limit: Input should be greater than or equal to
    1``), with how many more there are.
    """
    problems = list(error.errors())
    if not problems:
        return "the request is malformed", None
    first = problems[0]
    where = ".".join(str(part) for part in first.get("loc", ()))
    message = f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg"))
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more)"
    return message, where or None


def install_error_handlers(api: FastAPI) -> None:
    """Answer every `UkrError`, `ServiceError` and malformed request as a typed JSON error.

    A malformed request (not JSON, a field of the wrong type or out of range) is 422
    ``RequestValidationError`` naming the first field at fault; the framework's own
    refusals (no such route 404, a method the route lacks 405, a body it cannot parse 400)
    keep their status with the same shape.
    """

    @api.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, error: StarletteHTTPException) -> JSONResponse:
        kind = _HTTP_KINDS.get(error.status_code, "HTTPError")
        response = error_response(error.status_code, kind, str(error.detail))
        response.headers.update(error.headers or {})
        return response

    @api.exception_handler(RequestValidationError)
    async def malformed(_: Request, error: RequestValidationError) -> JSONResponse:
        message, field = validation_message(error)
        return error_response(422, "RequestValidationError", message, field)

    @api.exception_handler(ServiceError)
    async def service_error(_: Request, error: ServiceError) -> JSONResponse:
        response = error_response(error.status, error.kind, error.message, error.field)
        response.headers.update(error.headers)
        return response

    @api.exception_handler(UkrError)
    async def ukr_error(_: Request, error: UkrError) -> JSONResponse:
        return error_response(error_status(error), type(error).__name__, str(error),
                              getattr(error, "field", None))  # fmt: skip
