"""`BoundedChatModel`: at most ``max_concurrency`` chat calls in flight (asyncio.Semaphore).

Unlike a busy-waiting limiter, a call that raises or is cancelled frees its slot at once
(``async with``); order in `adapters.llm.middleware`.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence

from unified_kg_rag.adapters.llm.layer import ChatModelLayer, aclose_iterator
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.ports import ChatModel

__all__ = ["BoundedChatModel"]


class BoundedChatModel(ChatModelLayer):
    """Lets at most ``max_concurrency`` calls into the inner model at once.

    A call that raises (or is cancelled) frees its slot; a stream holds its slot until it
    ends or is closed. One semaphore per event loop.
    """

    def __init__(self, inner: ChatModel, max_concurrency: int) -> None:
        super().__init__(inner)
        self.max_concurrency = max(1, max_concurrency)
        self._semaphores: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        sem = self._semaphores.get(loop)
        if sem is None:
            sem = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
        return sem

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Wait for a slot, then call the inner model."""
        async with self._semaphore():
            return await self.inner.complete(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                stop=stop,
                json_schema=json_schema,
            )

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Wait for a slot and hold it while streaming."""
        async with self._semaphore():
            iterator = aiter(
                self.inner.stream(
                    messages, max_tokens=max_tokens, temperature=temperature, stop=stop
                )
            )
            try:
                async for chunk in iterator:
                    yield chunk
            finally:
                await aclose_iterator(iterator)
