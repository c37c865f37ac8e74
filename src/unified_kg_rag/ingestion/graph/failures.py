"""Whose failure is it: one item's, or the whole stage's (seed 000 §5.1 step 6).

The graph stages (extraction, description summaries, community reports) send one model call
per item. After the LLM wrapper's retries, a call that still fails is judged by a
`FailureJudge` shared by the stage's calls:

- an unreadable or cut reply (`ModelOutputError`), or an error raised while reading a reply,
  is the item's own;
- authentication, a setting the server refuses, a store error: the stage stops at once;
- a transient failure (timeout, HTTP 408/429/5xx, dropped connection) or a request the
  server rejects (HTTP 400/404/413/422) is the item's own while other calls are answered.
  When no call of the stage has been answered yet, or after ``max(3, concurrency)``
  transient failures in a row, the judge sends one small known-good request through the same
  chain, bypassing the response cache: answered, the failures are the items' own (recorded
  failed, the stage goes on); failed too, the server (or a setting) is at fault and the stage
  stops with that error, as before.

An item failed this way is asked again on the next run; failures on consecutive runs count
toward quarantine (`domain.index.attempts`). A stage that stops counts none.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import TypeVar

from unified_kg_rag.domain.llm.cache_control import refresh_cache
from unified_kg_rag.domain.models import Message
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.util.errors import ModelError, ModelOutputError, UkrError

__all__ = ["UNIT_ERROR_STATUS", "FailureJudge", "StageStoppedError", "is_unit_error", "read_reply"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

UNIT_ERROR_STATUS = frozenset({400, 404, 413, 422})
"""HTTP statuses of a request the server rejects for its content (the item's own, unless every
call gets them: then the known-good request decides)."""

PROBE_MESSAGES = (
    Message(role="user", content="Reply with the single word OK."),
)
"""The known-good request: short, answerable by any chat model."""

PROBE_MAX_TOKENS = 16


def is_unit_error(exc: BaseException) -> bool:
    """True when ``exc`` fails only the item being processed (bad reply, rejected request)."""
    if isinstance(exc, ModelOutputError):
        return True
    return (
        isinstance(exc, ModelError)
        and not exc.transient
        and exc.status_code in UNIT_ERROR_STATUS
    )


def read_reply(parse: Callable[[str], T], text: str, what: str) -> T:
    """Parse a model reply; an unexpected error while reading it is the reply's fault.

    A parser raises `ModelOutputError` for a reply it cannot read; any other exception it
    raises on some reply (a recursion limit on deeply nested JSON, an overflow) is turned into
    one, so that reply fails its item only instead of stopping the stage.

    Raises:
        ModelOutputError: the reply cannot be read.
    """
    try:
        return parse(text)
    except UkrError:
        raise
    except Exception as exc:
        logger.debug("reading a %s reply raised", what, exc_info=exc)
        raise ModelOutputError(
            f"{what} reply could not be read ({type(exc).__name__}: {exc})"
        ) from exc


class StageStoppedError(Exception):
    """Raised for an item not sent (or not judged) because its stage stopped."""


class FailureJudge:
    """Decides, for one stage run, whether a failed call is its item's own or the stage's.

    Args:
        chat: the wrapped chat model the stage calls (the probe goes through it too).
        concurrency: the stage's items in flight (the streak before a probe is at least this).
        stage: the stage's name, for messages.
    """

    def __init__(self, chat: ChatModel, *, concurrency: int, stage: str) -> None:
        self._chat = chat
        self._streak_limit = max(3, concurrency)
        self._stage = stage
        self._answered = 0
        self._streak = 0
        self._lock = asyncio.Lock()
        self.stop: BaseException | None = None
        self.probes = 0

    def answered(self) -> None:
        """Note a call of the stage that succeeded."""
        self._answered += 1
        self._streak = 0

    def halt(self, exc: BaseException) -> None:
        """Stop the stage with ``exc`` (a store failure while saving an item, say)."""
        if self.stop is None:
            self.stop = exc

    def check(self) -> None:
        """Raise `StageStoppedError` when the stage stopped (call before sending an item)."""
        if self.stop is not None:
            raise StageStoppedError(self._stage)

    def raise_if_stopped(self) -> None:
        """Raise the error that stopped the stage, if any."""
        if self.stop is not None:
            raise self.stop

    async def judge(self, exc: Exception) -> str:
        """Return the one-line reason of an item's own failure; stop the stage otherwise.

        Raises:
            StageStoppedError: ``exc`` is not the item's own (the stage's error is kept in
                ``stop``; `raise_if_stopped` raises it).
        """
        self.check()
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if isinstance(exc, ModelOutputError):
            return reason
        if isinstance(exc, ModelError):
            if exc.transient:
                self._streak += 1
            elif exc.status_code not in UNIT_ERROR_STATUS:
                self.halt(exc)  # authentication, a refused setting
                raise StageStoppedError(self._stage)
            if self._answered == 0 or self._streak >= self._streak_limit:
                await self._probe(exc)
            return reason
        if isinstance(exc, UkrError):  # a store, a configuration: never one item's
            self.halt(exc)
            raise StageStoppedError(self._stage)
        logger.warning("%s: unexpected %s on one item (failing that item only): %s",
                       self._stage, type(exc).__name__, reason, exc_info=exc)
        return f"{type(exc).__name__}: {reason}"

    async def _probe(self, exc: ModelError) -> None:
        """Send the known-good request; stop the stage when it fails too."""
        async with self._lock:
            self.check()
            if self._answered and self._streak < self._streak_limit:
                return  # another item's probe (or an answer) decided meanwhile
            self.probes += 1
            try:
                with refresh_cache(), contextlib.suppress(ModelOutputError):
                    # an unreadable reply is still an answer: the server is up
                    await self._chat.complete(PROBE_MESSAGES, max_tokens=PROBE_MAX_TOKENS)
            except Exception as probe_exc:
                self.halt(_stage_error(probe_exc, exc, self._stage))
                raise StageStoppedError(self._stage) from probe_exc
            logger.info("%s: a known-good request was answered after %s; the failures are "
                        "the items' own", self._stage, exc)
            self.answered()


def _stage_error(probe_exc: BaseException, first: ModelError, stage: str) -> BaseException:
    """The error that stops a stage: the probe's, saying why the stage stopped."""
    if not isinstance(probe_exc, ModelError):
        return probe_exc
    message = (f"{probe_exc} (the {stage} calls failed, and a known-good request failed too: "
               "the model server, not the items, is at fault)")
    error = ModelError(message, transient=probe_exc.transient, status_code=probe_exc.status_code)
    error.__cause__ = first
    return error
