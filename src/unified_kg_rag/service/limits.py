"""Request limits: body size, query-string length, question length.

`LimitsMiddleware` refuses, before any route:

- a query string over ``service.max_query_string_bytes`` bytes: 414 ``QueryStringTooLong``;
- a body over ``service.max_body_bytes`` (``multipart/form-data`` bodies, the uploads, over
  ``service.max_upload_total_bytes``; their per-file limits are the upload route's): 413
  ``RequestTooLarge``. A ``Content-Length`` over the limit is refused without reading the
  body; otherwise the bytes are counted as they stream in (chunked bodies too) and the
  request is refused as soon as they pass the limit, whatever the route had started;
- a multipart upload from a caller whose key lacks ``write``, while keys are required: 401 or
  403 before a byte of the (up to 200 MiB) body is read. The upload route checks again.

`check_question` is the question-length limit the routes that take a question apply
(``service.max_question_chars``): 422 ``QuestionTooLong``.
"""

from __future__ import annotations

from fastapi import Request
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from unified_kg_rag.config.service import ServiceConfig
from unified_kg_rag.service.auth import authorize
from unified_kg_rag.service.errors import ServiceError, send_error

__all__ = ["LimitsMiddleware", "check_question"]


class _BodyTooLargeError(Exception):
    """Raised from ``receive`` when the body passed its limit."""


class LimitsMiddleware:
    """The ASGI middleware enforcing the body and query-string limits (module docstring)."""

    def __init__(self, app: ASGIApp, config: ServiceConfig) -> None:
        """Wrap ``app`` with the limits of ``config``."""
        self.app = app
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the request, or refuse it as the module docstring says."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        try:
            limit = self._check_head(scope, headers)
        except ServiceError as error:
            await send_error(scope, receive, send, error)
            return
        received = 0
        exceeded = False
        started = False

        async def counted_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise _BodyTooLargeError
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if exceeded:  # the app's answer to the failed read is replaced by the 413
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if not exceeded:
                raise
        if exceeded and not started:
            upload = _multipart(headers) and _is_upload(scope)
            await send_error(scope, receive, send, _too_large(limit, upload=upload))

    def _check_head(self, scope: Scope, headers: Headers) -> int:
        """The body limit of this request, after the checks its head allows.

        Raises:
            ServiceError: 414, 413 (by ``Content-Length``), or 401/403 for an upload.
        """
        query = scope.get("query_string", b"")
        if len(query) > self.config.max_query_string_bytes:
            raise ServiceError(414, "QueryStringTooLong", f"the query string is {len(query):,} "
                               f"bytes; at most {self.config.max_query_string_bytes:,} are "
                               "allowed (service.max_query_string_bytes)")  # fmt: skip
        multipart = _multipart(headers) and _is_upload(scope)
        limit = self.config.max_upload_total_bytes if multipart else self.config.max_body_bytes
        if multipart:
            authorize(scope, "write")
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            raise _too_large(limit, upload=multipart)
        return limit


UPLOAD_ROUTE = ("POST", "/v1/documents")
"""The one route that takes a multipart body (files); other routes keep the body limit."""


def _is_upload(scope: Scope) -> bool:
    return (scope.get("method"), scope.get("path", "").rstrip("/")) == UPLOAD_ROUTE


def _multipart(headers: Headers) -> bool:
    return headers.get("content-type", "").lower().startswith("multipart/form-data")


def _too_large(limit: int, *, upload: bool) -> ServiceError:
    """413: an upload names its own limit and kind, as the upload route's checks do."""
    if upload:
        return ServiceError(413, "PayloadTooLargeError", f"the upload is over {limit:,} bytes "
                            "in all (service.max_upload_total_bytes)")  # fmt: skip
    return ServiceError(413, "RequestTooLarge", f"the request body is over {limit:,} bytes "
                        "(service.max_body_bytes)")


def check_question(request: Request, text: str, field: str = "question") -> None:
    """Refuse a question (or chat message) longer than ``service.max_question_chars``.

    Args:
        request: the request (its app holds the configuration as ``state.config``).
        text: the question.
        field: the request field holding it, named in the error.

    Raises:
        ServiceError: 422 ``QuestionTooLong``.
    """
    most = request.app.state.config.service.max_question_chars
    if len(text) > most:
        raise ServiceError(422, "QuestionTooLong", f"the question is {len(text):,} characters; "
                           f"at most {most:,} are allowed (service.max_question_chars)",
                           field=field)  # fmt: skip
