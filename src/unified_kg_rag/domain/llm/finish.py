"""Finish reasons: whether a model's reply is complete, and the finish of a streamed reply.

A reply is *complete* only when the provider says the model stopped on its own
(``finish_reason == "stop"``; adapters map their providers' equivalents to it, e.g. Bedrock's
``end_turn`` and ``stop_sequence``). Anything else — ``length`` (the reply-length limit),
``content_filter`` (a provider's filter or guardrail), an unknown reason — means the text may
be cut: it is never cached, an index-time item that got it is asked again on the next run,
and an answer built from it is flagged (``answer_complete: false``).

A stream yields only text, so its finish reason travels beside it: the caller opens a
`stream_finish` scope, and the provider adapter calls `record_stream_finish` when the
provider reports one. The scope rides on `contextvars`, like the usage meter
(`domain.llm.usage`), so the middleware layers in between need not know about it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

__all__ = [
    "COMPLETE",
    "STREAM_UNFINISHED",
    "StreamFinish",
    "describe_finish",
    "record_stream_finish",
    "reply_complete",
    "stream_finish",
]

COMPLETE = "stop"
"""The one finish reason of a complete reply."""

STREAM_UNFINISHED = "unfinished_stream"
"""The finish reason recorded for a stream that wrote text and ended without one: a whole
reply without one arrived whole (read as ``stop``), but a stream's end is known only from its
finish reason, and a connection cut by a proxy ends it just as cleanly."""

_DESCRIPTIONS = {
    STREAM_UNFINISHED: "the stream ended without a finish reason, so it may be cut",
    "length": "cut at the reply-length limit",
    "content_filter": "cut by the provider's content filter",
    "deadline": "cut at the call's deadline",
}


def reply_complete(finish_reason: str | None) -> bool:
    """True when ``finish_reason`` says the model stopped on its own (``"stop"``)."""
    return finish_reason == COMPLETE


def describe_finish(finish_reason: str | None) -> str:
    """Return a short phrase for an incomplete reply, naming its finish reason.

    ``"length"`` → ``"cut at the reply-length limit (finish reason 'length')"``; an unknown
    reason reads ``"not finished (finish reason 'x')"``; None reads ``"not finished (no
    finish reason)"``.
    """
    if finish_reason is None:
        return "not finished (no finish reason)"
    what = _DESCRIPTIONS.get(finish_reason, "not finished")
    return f"{what} (finish reason {finish_reason!r})"


@dataclass
class StreamFinish:
    """The finish of one streamed reply, filled by the provider adapter.

    Attributes:
        finish_reason: the provider's finish reason (mapped as in `Completion`), or None
            when the stream ended without one.
    """

    finish_reason: str | None = None

    @property
    def complete(self) -> bool:
        """True when the stream ended with ``"stop"``."""
        return reply_complete(self.finish_reason)


_STREAM: contextvars.ContextVar[StreamFinish | None] = contextvars.ContextVar(
    "ukr_stream_finish", default=None
)


@contextmanager
def stream_finish(holder: StreamFinish | None = None) -> Iterator[StreamFinish]:
    """Open a scope whose streamed reply records its finish reason in the yielded holder.

    Open it around the iteration of one ``ChatModel.stream`` (the iteration must run in the
    task that opened the scope). A caller that yields between steps of the stream (an async
    generator) opens one scope per step with the same ``holder``, so no scope stays open
    across its own ``yield``.

    Args:
        holder: the holder to fill (None: a new one).
    """
    holder = holder if holder is not None else StreamFinish()
    token = _STREAM.set(holder)
    try:
        yield holder
    finally:
        _STREAM.reset(token)


def record_stream_finish(finish_reason: str | None) -> None:
    """Record the finish reason of the stream being read (no-op outside a scope)."""
    holder = _STREAM.get()
    if holder is not None:
        holder.finish_reason = finish_reason
