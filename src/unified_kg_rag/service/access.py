"""The access log and the request metrics: one line and one observation per request.

`AccessMiddleware` is the outermost middleware, so it sees every answer, refusals by the
other middlewares (CORS, limits) included. The line, on the logger
``unified_kg_rag.service.access`` at INFO::

    GET /v1/documents/{document_id} 200 12.3 ms key=ci client=127.0.0.1:50412

method, route template (``<unmatched>`` when no route matched; never the raw path or the
query string), status, duration in milliseconds (to the last byte sent), the name of the
key the request was admitted with (``-`` for none), the client's address. With
``service.log_questions`` a route that noted a question (`note_question`) adds
``question='…'`` (at most 500 characters); otherwise no question reaches the logs.
Every request has an id: the client's ``X-Request-ID`` when it is a plain token
(`util.correlation.valid_id`), else a fresh one; the answer carries it back in
``X-Request-ID``. While the request is answered the id is the ``request_id`` of
`util.correlation` (and the ``query_id`` of the query it asks, if any), so every log record
written for it carries the id in the JSON log format, and the staged pipelines it runs report
to the service's metrics (`ServiceMetrics.pipeline_observer`).
`ukr serve` turns uvicorn's own access log off in favour of this one, and sets this logger
to INFO whatever ``logging.level`` says (a library caller configures logging itself).
"""

from __future__ import annotations

import logging
import time

from fastapi import Request
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from unified_kg_rag.retrieval.pipeline_observers import observing
from unified_kg_rag.service.auth import KEY_NAME_SCOPE
from unified_kg_rag.service.metrics import ServiceMetrics
from unified_kg_rag.util.correlation import request_scope, valid_id

__all__ = [
    "ACCESS_LOGGER",
    "REQUEST_ID_HEADER",
    "AccessMiddleware",
    "note_question",
    "route_template",
]

REQUEST_ID_HEADER = "X-Request-ID"
"""The header naming a request (read from the request, written on the answer)."""

ACCESS_LOGGER = "unified_kg_rag.service.access"
"""The access log's logger name."""

access_logger = logging.getLogger(ACCESS_LOGGER)

_QUESTION_SCOPE = "ukr.question"
_QUESTION_CHARS = 500


def note_question(request: Request, question: str) -> None:
    """Hand a request's question to the access log (logged only with ``service.log_questions``)."""
    request.scope[_QUESTION_SCOPE] = question


def route_template(scope: Scope) -> str:
    """The template of the route that answered, else ``<unmatched>``.

    FastAPI names only its API routes in ``scope["route"]``; a plain route (``/docs``,
    ``/openapi.json``) or a mount is found again by matching the app's routes.

    Returns:
        ``/v1/documents/{document_id}`` for a route, ``/ui/{path}`` for a mount.
    """
    route = scope.get("route")
    if route is None:
        for candidate in getattr(getattr(scope.get("app"), "router", None), "routes", ()):
            if candidate.matches(scope)[0] is Match.FULL:
                route = candidate
                break
    path = getattr(route, "path_format", None) or getattr(route, "path", None)
    if not isinstance(path, str):
        return "<unmatched>"
    return f"{path}/{{path}}" if isinstance(route, Mount) else path


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class AccessMiddleware:
    """The ASGI middleware writing the access log and the request metrics (module docstring)."""

    def __init__(
        self, app: ASGIApp, *, metrics: ServiceMetrics, log: bool, log_questions: bool
    ) -> None:
        """Wrap ``app``.

        Args:
            app: the app.
            metrics: where requests are counted.
            log: ``service.access_log``.
            log_questions: ``service.log_questions``.
        """
        self.app = app
        self.metrics = metrics
        self.log = log
        self.log_questions = log_questions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer the request, then log it and count it."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the server answers when the app raises before its answer
        given = next((v.decode("latin-1") for k, v in scope.get("headers", ())
                      if k == b"x-request-id"), None)  # fmt: skip

        with request_scope(valid_id(given)) as request_id, observing(
            self.metrics.pipeline_observer
        ):
            async def noted_send(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    headers = [(k, v) for k, v in message.get("headers", ())
                               if k.lower() != b"x-request-id"]  # fmt: skip
                    headers.append((b"x-request-id", request_id.encode("latin-1")))
                    message = {**message, "headers": headers}
                await send(message)

            try:
                await self.app(scope, receive, noted_send)
            finally:
                self._record(scope, status, time.perf_counter() - started)

    def _record(self, scope: Scope, status: int, duration_s: float) -> None:
        route = route_template(scope)
        method = str(scope.get("method", "-"))
        if method not in _METHODS:  # a made-up method must not make a metric series
            method = "OTHER"
        self.metrics.observe_request(method, route, status, duration_s)
        if not self.log:
            return
        client = scope.get("client")
        address = f"{client[0]}:{client[1]}" if client else "-"
        question = scope.get(_QUESTION_SCOPE)
        if self.log_questions and isinstance(question, str):
            access_logger.info("%s %s %d %.1f ms key=%s client=%s question=%r", method, route,
                               status, duration_s * 1000, scope.get(KEY_NAME_SCOPE, "-"),
                               address, question[:_QUESTION_CHARS])  # fmt: skip
        else:
            access_logger.info("%s %s %d %.1f ms key=%s client=%s", method, route, status,
                               duration_s * 1000, scope.get(KEY_NAME_SCOPE, "-"),
                               address)  # fmt: skip
