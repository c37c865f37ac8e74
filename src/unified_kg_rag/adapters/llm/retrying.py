"""`RetryingChatModel`: retries transient model failures with backoff (tenacity).

Sits outside the concurrency bound, so a call waiting out its backoff holds no slot; order
in `adapters.llm.middleware`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from unified_kg_rag.adapters.llm.backoff import backoff_wait
from unified_kg_rag.adapters.llm.layer import ChatModelLayer, aclose_iterator
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.util.errors import ModelError

__all__ = ["RetryingChatModel"]

logger = logging.getLogger(__name__)


class RetryingChatModel(ChatModelLayer):
    """Retries calls that fail with a transient `ModelError` (timeouts, 408/429/5xx).

    Waits ``initial_s * 2**n`` plus up to ``initial_s`` of random jitter, at most ``max_s``,
    between attempts; gives up after ``max_retries`` retries and re-raises the last error.
    Fatal errors (authentication, bad request) raise at once.
    """

    def __init__(
        self, inner: ChatModel, *, max_retries: int, initial_s: float, max_s: float
    ) -> None:
        super().__init__(inner)
        self.max_retries = max_retries
        self.initial_s = initial_s
        self.max_s = max_s

    def _retrying(self) -> AsyncRetrying:
        return AsyncRetrying(
            retry=retry_if_exception(_is_transient),
            stop=stop_after_attempt(self.max_retries + 1),
            wait=backoff_wait(self.initial_s, self.max_s),
            before_sleep=self._log_retry,
            reraise=True,
        )

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        logger.info(
            "%s: attempt %d failed (%s); retrying in %.1fs",
            self.model_id,
            state.attempt_number,
            exc,
            state.upcoming_sleep,
        )

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Call the inner model, retrying transient failures."""
        async for attempt in self._retrying():
            with attempt:
                return await self.inner.complete(
                    messages,
                    max_tokens=max_tokens,
                    temperature=temperature,
                    stop=stop,
                    json_schema=json_schema,
                )
        raise RuntimeError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Stream from the inner model, retrying transient failures before the first chunk."""
        first: str | None = None
        iterator: AsyncIterator[str] | None = None
        async for attempt in self._retrying():
            with attempt:
                iterator = aiter(
                    self.inner.stream(
                        messages, max_tokens=max_tokens, temperature=temperature, stop=stop
                    )
                )
                try:
                    first = await anext(iterator)
                except StopAsyncIteration:
                    first = None
        if iterator is None or first is None:
            return
        try:
            yield first
            async for chunk in iterator:
                yield chunk
        finally:
            await aclose_iterator(iterator)


def _is_transient(exc: BaseException) -> bool:
    return isinstance(exc, ModelError) and exc.transient
