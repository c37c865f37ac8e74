"""`QueryDeadlineChatModel`: every call inside a query takes at most the query's time left.

Reads the deadline scope a query opens (`domain.llm.deadline`); outside one, calls pass
through. It sits outside the cache, the retries and the concurrency bound (order in
`adapters.llm.middleware`), so the time a call spends in backoff or waiting for a slot counts
too, and a call cut by the deadline is not retried.

The provider adapters bound their own request by the query's time left too
(`adapters.deadlines`, ``within_query``), and end a stream that already wrote text there, so
the layers in between release what they hold back. This layer gives a stream
`STREAM_GRACE_S` more, to let that happen first; it cuts only what is stuck above the adapter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence

from unified_kg_rag.adapters.deadlines import stream_within
from unified_kg_rag.adapters.llm.layer import ChatModelLayer
from unified_kg_rag.domain.llm.deadline import current_query_deadline, within_query_deadline
from unified_kg_rag.domain.models import Completion, Message

__all__ = ["STREAM_GRACE_S", "QueryDeadlineChatModel"]

STREAM_GRACE_S = 0.5
"""Seconds a stream may run past the query's deadline here (the adapter ends it on time)."""


class QueryDeadlineChatModel(ChatModelLayer):
    """Bounds each call by the current query's deadline (see the module docstring).

    ``complete`` past the deadline raises `QueryDeadlineError`; ``stream`` raises it when no
    text came yet, else ends the reply with the finish reason ``deadline``.
    """

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Call the inner model within the time the query has left."""
        return await within_query_deadline(
            self.inner.complete(
                messages, max_tokens=max_tokens, temperature=temperature, stop=stop,
                json_schema=json_schema,
            )
        )  # fmt: skip

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Stream from the inner model within the time the query has left."""
        inner = self.inner.stream(
            messages, max_tokens=max_tokens, temperature=temperature, stop=stop
        )
        deadline = current_query_deadline()
        if deadline is None:
            return inner
        return stream_within(inner, deadline.remaining() + STREAM_GRACE_S, deadline.error)
