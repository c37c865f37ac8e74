"""Errors of the chat-protocol routes, in the shape each protocol's clients read.

The rest of the API answers ``{"error": {"type", "message", "field"}}`` (`errors`). A chat
client reads its own protocol's shape: the ``openai`` SDK turns ``{"error": {"message",
"type", "param", "code"}}`` into ``NotFoundError``, ``BadRequestError`` …, the ``ollama``
client reads ``{"error": "message"}`` into ``ResponseError``. `protocol_route` returns a
FastAPI route class that answers, in the shape a ``render`` function draws, every error a
route of its router raises: a `UkrError` with its usual status (`errors.error_status`), an
unknown model 404, a malformed body 400 (both protocols call that a bad request, not 422),
and an HTTP error (a refused key) with its status and headers.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Protocol

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException

from unified_kg_rag.service.chat_models import UnknownModelError
from unified_kg_rag.service.errors import ServiceError, error_status
from unified_kg_rag.util.errors import UkrError

__all__ = ["ErrorRenderer", "ProtocolError", "protocol_route"]


@dataclass(frozen=True)
class ProtocolError:
    """One error to draw.

    Attributes:
        status: the HTTP status.
        kind: the error's kind: the `UkrError` class name, ``model_not_found``,
            ``invalid_request`` (a malformed body) or ``http_error``.
        message: one line for the user.
        field: the request field at fault, when known.
    """

    status: int
    kind: str
    message: str
    field: str | None = None


class ErrorRenderer(Protocol):
    """Draws an error in one protocol's shape."""

    def __call__(self, error: ProtocolError) -> Response:
        """The reply for ``error`` (its status set)."""
        ...


def protocol_route(render: ErrorRenderer) -> type[APIRoute]:
    """A route class whose routes answer their errors as ``render`` draws them."""

    class ProtocolRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def route(request: Request) -> Response:
                try:
                    return await handler(request)
                except UnknownModelError as error:
                    return render(ProtocolError(404, "model_not_found", str(error), "model"))
                except UkrError as error:
                    field = getattr(error, "field", None)
                    return render(ProtocolError(error_status(error), type(error).__name__,
                                                str(error), field))  # fmt: skip
                except RequestValidationError as error:
                    return render(_invalid(error))
                except ServiceError as error:  # a refused key, a question too long
                    reply = render(ProtocolError(error.status, error.kind, error.message,
                                                 error.field))  # fmt: skip
                    reply.headers.update(error.headers)
                    return reply
                except HTTPException as error:
                    reply = render(ProtocolError(error.status_code, "http_error",
                                                 str(error.detail)))  # fmt: skip
                    reply.headers.update(error.headers or {})
                    return reply

            return route

    return ProtocolRoute


def _invalid(error: RequestValidationError) -> ProtocolError:
    """The first problem of a malformed body, as ``field: problem``."""
    problems = list(error.errors())
    if not problems:
        return ProtocolError(400, "invalid_request", "the request body is invalid")
    first = problems[0]
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    field = ".".join(loc) or None
    message = str(first.get("msg", "invalid"))
    return ProtocolError(400, "invalid_request", f"{field}: {message}" if field else message,
                         field)  # fmt: skip
