"""Typed JSON errors of the HTTP API, with the HTTP status of each error kind.

An error is ``{"error": {"type", "message", "field"}}``. The status follows the CLI's exit
code classes: a usage or configuration error 400, an unknown job, document, entity or
community 404, an upload over a limit 413, a strategy or graph the index does not serve or a
build or job holding the index 409, a model failure 502, a store failure 503, anything else
500.
Nothing in an error names a key or a secret: the messages are the CLI's one-line messages.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

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

__all__ = ["error_body", "error_response", "error_status", "install_error_handlers"]


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


def install_error_handlers(api: FastAPI) -> None:
    """Answer every `UkrError` a route raises as a typed JSON error."""

    @api.exception_handler(UkrError)
    async def ukr_error(_: Request, error: UkrError) -> JSONResponse:
        return error_response(error_status(error), type(error).__name__, str(error),
                              getattr(error, "field", None))  # fmt: skip
