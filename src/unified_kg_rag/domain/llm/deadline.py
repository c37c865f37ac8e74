"""The whole-query deadline (``query.deadline_s``): what is left of it, and calls bound by it.

A query opens a `query_deadline` scope; every model call made inside it (the follow-up
rewrite, the router, query processing, global map batches, DRIFT calls, the reranker, the
answer) may take at most the time left. A call still running when the deadline passes is
cancelled and raises `QueryDeadlineError` (a call started after it raises at once), which
each step treats like any non-fatal model failure: it falls back to its no-LLM rule or keeps
the partial results it has, so the query returns what it has instead of hanging on a slow
model. A stream that already wrote part of its answer ends there instead, finish reason
``deadline``. The scope rides on `contextvars`, like the usage meter (`domain.llm.usage`), so
the model wrapper need not be told about it, and tasks a step starts inherit it.

The query embedding is not bounded by it: every strategy and the extractive fallback need
it (its own per-call deadline applies).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from unified_kg_rag.util.errors import QueryDeadlineError

__all__ = [
    "QueryDeadline",
    "current_query_deadline",
    "note_deadline",
    "query_deadline",
    "within_query_deadline",
]

T = TypeVar("T")


@dataclass
class QueryDeadline:
    """The deadline of one query.

    Attributes:
        seconds: the whole query's budget (``query.deadline_s``), seconds.
        started: when the query started (`time.monotonic`), seconds.
        cut_calls: model calls cut short or refused because it had passed.
    """

    seconds: float
    started: float = field(default_factory=time.monotonic)
    cut_calls: int = 0

    def remaining(self) -> float:
        """Seconds left before the deadline (negative once past it)."""
        return self.started + self.seconds - time.monotonic()

    @property
    def passed(self) -> bool:
        """True once the deadline has passed."""
        return self.remaining() <= 0

    @property
    def hit(self) -> bool:
        """True when it cut or refused at least one call."""
        return self.cut_calls > 0

    def error(self) -> QueryDeadlineError:
        """Count one cut call and return the error that says so."""
        self.cut_calls += 1
        return QueryDeadlineError(
            f"the query's deadline (query.deadline_s = {self.seconds:g} s) passed before the "
            "model call finished",
            deadline_s=self.seconds,
        )


_DEADLINE: contextvars.ContextVar[QueryDeadline | None] = contextvars.ContextVar(
    "ukr_query_deadline", default=None
)


@contextmanager
def query_deadline(seconds: float | None) -> Iterator[QueryDeadline | None]:
    """Open the deadline scope of one query (None: no deadline; yields None)."""
    if seconds is None:
        yield None
        return
    holder = QueryDeadline(seconds)
    token = _DEADLINE.set(holder)
    try:
        yield holder
    finally:
        _DEADLINE.reset(token)


def current_query_deadline() -> QueryDeadline | None:
    """The deadline of the query being answered, or None."""
    return _DEADLINE.get()


async def within_query_deadline(call: Awaitable[T]) -> T:
    """Await ``call`` for at most the time left of the current query's deadline.

    Outside a deadline scope the call runs unbounded.

    Raises:
        QueryDeadlineError: the deadline passed before (the call is not awaited) or during
            the call (it is cancelled).
        Whatever ``call`` raised.
    """
    deadline = _DEADLINE.get()
    if deadline is None:
        return await call
    left = deadline.remaining()
    if left <= 0:
        _discard(call)
        raise deadline.error()
    scope = asyncio.timeout(left)
    try:
        async with scope:
            return await call
    except TimeoutError:
        if scope.expired():
            raise deadline.error() from None
        raise


def _discard(call: Awaitable[object]) -> None:
    """Close a coroutine that will never be awaited (no "never awaited" warning)."""
    close = getattr(call, "close", None)
    if callable(close):
        close()


def note_deadline(metadata: dict[str, object], deadline: QueryDeadline | None) -> None:
    """Record in a query's ``metadata`` whether its deadline passed before the answer was ready.

    Keys: ``deadline_hit`` always; ``deadline_s`` and ``deadline_cut_calls`` (model calls the
    deadline cut) when the query had a deadline.
    """
    if deadline is None:
        metadata["deadline_hit"] = False
        return
    metadata["deadline_s"] = deadline.seconds
    metadata["deadline_hit"] = deadline.hit or deadline.passed
    if deadline.cut_calls:
        metadata["deadline_cut_calls"] = deadline.cut_calls
