"""Correlation ids: which request, query or index run a log record (or a span) belongs to.

Three `contextvars.ContextVar` hold the ids of the work in progress in the current task:

- ``request_id``: one HTTP request of the service (its ``X-Request-ID``, `request_scope`);
- ``query_id``: one query (`query_scope`; the chain opens one per question; inside a request
  it is the request's id, so a client's ``X-Request-ID`` names the query in the logs);
- ``run_id``: one index or delete run (`run_scope`; the service's jobs use the job id).

A task started inside a scope (``asyncio.create_task``, ``gather``) copies the ids, so every
record written on behalf of one query carries its id, and two concurrent queries (two tasks)
carry different ids. `CorrelationFilter` copies the ids onto each `logging.LogRecord`, where
the JSON log format (`util.log_format`) writes them. Nothing here does I/O.
"""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = [
    "CORRELATION_FIELDS",
    "CorrelationFilter",
    "as_query",
    "as_run",
    "current_ids",
    "new_id",
    "query_id",
    "query_scope",
    "request_scope",
    "run_id",
    "run_scope",
    "valid_id",
]

T = TypeVar("T")

CORRELATION_FIELDS = ("request_id", "query_id", "run_id")
"""The attribute names `CorrelationFilter` sets on a record (when the id is set)."""

_REQUEST: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "ukr_request_id", default=None
)
_QUERY: contextvars.ContextVar[str | None] = contextvars.ContextVar("ukr_query_id", default=None)
_RUN: contextvars.ContextVar[str | None] = contextvars.ContextVar("ukr_run_id", default=None)

_VALID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def new_id() -> str:
    """A fresh id: 32 lowercase hex digits (`uuid.uuid4().hex`)."""
    return uuid.uuid4().hex


def valid_id(value: str | None) -> str | None:
    """``value`` when it may name a request (1-128 of ``A-Z a-z 0-9 . _ : -``), else None.

    A client's ``X-Request-ID`` is echoed and logged: anything else (spaces, quotes,
    newlines, an overlong value) is replaced by a fresh id rather than written to a log line.
    """
    return value if value is not None and _VALID.fullmatch(value) else None


def query_id() -> str | None:
    """The id of the query in progress in this task (None outside any query)."""
    return _QUERY.get()


def run_id() -> str | None:
    """The id of the index run in progress in this task (None outside any run)."""
    return _RUN.get()


def current_ids() -> dict[str, str]:
    """The ids set in this task, by field name (`CORRELATION_FIELDS`; unset ones left out)."""
    values = (_REQUEST.get(), _QUERY.get(), _RUN.get())
    return {name: v for name, v in zip(CORRELATION_FIELDS, values, strict=True) if v}


@contextmanager
def _scope(var: contextvars.ContextVar[str | None], value: str) -> Iterator[str]:
    token = var.set(value)
    try:
        yield value
    finally:
        var.reset(token)


@contextmanager
def request_scope(request_id: str | None = None) -> Iterator[str]:
    """Name the HTTP request in progress; yields its id (``request_id``, else a `new_id`)."""
    with _scope(_REQUEST, request_id or new_id()) as value:
        yield value


@contextmanager
def query_scope(given: str | None = None) -> Iterator[str]:
    """Name the query in progress; yields its id.

    A scope opened inside another query keeps the outer id (the CLI opens one around the
    whole command, the chain another around the question: both name one query). Otherwise
    the id is ``given``, else the request's id, else a `new_id`.
    """
    outer = _QUERY.get()
    if outer is not None:
        yield outer
        return
    with _scope(_QUERY, given or _REQUEST.get() or new_id()) as value:
        yield value


@contextmanager
def run_scope(given: str | None = None) -> Iterator[str]:
    """Name the index run in progress; yields its id.

    A scope opened inside another run keeps the outer id (a delete that re-runs the index,
    the service's job around the pipeline). Otherwise the id is ``given``, else a `new_id`.
    """
    outer = _RUN.get()
    if outer is not None:
        yield outer
        return
    with _scope(_RUN, given or new_id()) as value:
        yield value


def as_query(main: Callable[[], Awaitable[T]]) -> Callable[[], Coroutine[Any, Any, T]]:
    """``main`` run inside a `query_scope`.

    For a command's coroutine: every record it logs, loading included, carries the query's id.
    """

    async def scoped() -> T:
        with query_scope():
            return await main()

    return scoped


def as_run(main: Callable[[], Awaitable[T]]) -> Callable[[], Coroutine[Any, Any, T]]:
    """``main`` run inside a `run_scope` (``ukr index``: one run id for the whole command)."""

    async def scoped() -> T:
        with run_scope():
            return await main()

    return scoped


class CorrelationFilter(logging.Filter):
    """Copies the ids set in the current task onto each record (``record.query_id`` ...).

    Attach it to a handler (it never drops a record). An id already on the record (passed
    in ``extra``) is kept.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        """Set the ids on ``record``; always True."""
        for name, value in current_ids().items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True
