"""Per-call deadlines of remote model calls: the longest one call may take in total.

An HTTP client's timeout (httpx, botocore: the providers' ``timeout_s``) bounds connecting
and each read, so a server that sends its reply one byte every two seconds never trips it and
one call can run for hours. Every remote model call (chat, streamed chat, embeddings, rerank)
therefore also has a *deadline* (the providers' ``deadline_s``), counted from the start of
the call:

- a call past its deadline fails with a transient `ModelError` naming the setting, so the
  retry layer tries again, with a fresh deadline per attempt;
- a stream past its deadline before its first piece fails the same way; one that already
  yielded text ends there and records the finish reason ``deadline``
  (`domain.llm.finish.record_stream_finish`), so the answer built on it is flagged cut.

Blocking SDKs (boto3) run in daemon threads (`util.threads`): the awaiting side returns at
the deadline and the thread finishes in the background.

A chat call made inside a query with a deadline (``query.deadline_s``, `domain.llm.deadline`)
takes at most the query's time left when that is shorter (``within_query``): past it the
call raises `QueryDeadlineError` (not transient: no retry can give the time back), and a
stream that already wrote text ends there, finish reason ``deadline``. Ending it here, at the
adapter, lets the layers above release what they held back (the reasoning filter's start).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from unified_kg_rag.domain.llm.deadline import QueryDeadline, current_query_deadline
from unified_kg_rag.domain.llm.finish import record_stream_finish
from unified_kg_rag.util.aio import aclose_iterator
from unified_kg_rag.util.errors import ModelError

__all__ = ["DEADLINE_FINISH", "call_within", "deadline_error", "stream_within"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

DEADLINE_FINISH = "deadline"
"""The finish reason of a stream ended by its deadline."""


def deadline_error(
    where: str, deadline_s: float, setting: str, error_type: type[ModelError] = ModelError
) -> ModelError:
    """Return the transient error of a call past its deadline.

    Args:
        where: what was called (``openai:gpt-4o-mini@http://...``, a URL).
        deadline_s: the deadline, seconds.
        setting: the setting that holds it (``llm.openai.deadline_s``).
        error_type: the `ModelError` subclass to build (`EmbeddingModelError` for embedders).
    """
    return error_type(
        f"{where}: the call did not finish within its deadline of {deadline_s:g} s "
        f"({setting}); the server is answering too slowly",
        transient=True,
    )


def _limit(deadline_s: float, within_query: bool) -> tuple[float, QueryDeadline | None]:
    """The seconds a call may take, and the query deadline when it is the one that binds."""
    query = current_query_deadline() if within_query else None
    if query is not None and query.remaining() < deadline_s:
        return query.remaining(), query
    return deadline_s, None


async def call_within(
    call: Awaitable[T],
    deadline_s: float,
    on_deadline: Callable[[], ModelError],
    *,
    within_query: bool = False,
) -> T:
    """Await ``call`` for at most ``deadline_s`` seconds (or the query's time left).

    Args:
        call: the awaitable (a coroutine: closed unawaited when no time is left).
        deadline_s: the call's own deadline, seconds.
        on_deadline: builds the error of a call past its own deadline.
        within_query: also bound by the current query's deadline when that is shorter.

    Raises:
        ModelError: the error ``on_deadline()`` builds, when the deadline passed (the call
            is cancelled).
        QueryDeadlineError: the query's deadline passed first (``within_query``).
        Whatever ``call`` raised.
    """
    limit, query = _limit(deadline_s, within_query)
    if query is not None and limit <= 0:
        close = getattr(call, "close", None)
        if callable(close):
            close()
        raise query.error()
    scope = asyncio.timeout(limit)
    try:
        async with scope:
            return await call
    except TimeoutError:
        if scope.expired():
            raise (query.error() if query is not None else on_deadline()) from None
        raise


async def stream_within(
    stream: AsyncIterator[str],
    deadline_s: float,
    on_deadline: Callable[[], ModelError],
    *,
    within_query: bool = False,
) -> AsyncIterator[str]:
    """Yield ``stream``'s pieces until it ends or ``deadline_s`` seconds have passed.

    Past the deadline before the first non-empty piece, raise ``on_deadline()``; after
    one, close the stream, record the finish reason ``deadline`` and stop. With
    ``within_query``, the current query's time left counts when shorter (its error is then
    `QueryDeadlineError`).

    Raises:
        ModelError: the deadline passed before any text (``on_deadline()``).
        QueryDeadlineError: the query's deadline passed first, before any text.
        Whatever ``stream`` raised.
    """
    limit, query = _limit(deadline_s, within_query)
    if query is not None:
        on_deadline = query.error
    until = asyncio.get_running_loop().time() + limit
    iterator = aiter(stream)
    wrote = False
    try:
        while True:
            scope = asyncio.timeout_at(until)
            try:
                async with scope:
                    piece = await anext(iterator)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if not scope.expired():
                    raise
                if not wrote:
                    raise on_deadline() from None
                error = on_deadline()
                logger.warning("%s; the reply ends here, incomplete", error)
                record_stream_finish(DEADLINE_FINISH)
                return
            wrote = wrote or bool(piece)
            yield piece
    finally:
        await aclose_iterator(iterator)
