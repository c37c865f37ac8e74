"""`MeteredChatModel`: records each chat call's usage in the open usage scopes.

The outermost middleware (order in `adapters.llm.middleware`), so it sees every call,
cache hits included.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence

from unified_kg_rag.adapters.llm.layer import ChatModelLayer
from unified_kg_rag.domain.llm.usage import record_usage
from unified_kg_rag.domain.models import Completion, Message, TokenUsage
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.ports import ChatModel, TokenCounter

__all__ = ["MeteredChatModel"]


class MeteredChatModel(ChatModelLayer):
    """Records `TokenUsage` of every call in the open usage scopes (`domain.llm.usage`).

    A cache hit counts as ``cache_hits=1`` (no call, no tokens); any other call, failed ones
    included, counts ``calls=1`` with its latency. Token counts are the provider's, estimated
    with ``counter`` (default `EstimateTokenCounter`) when it reports none.
    """

    def __init__(self, inner: ChatModel, counter: TokenCounter | None = None) -> None:
        super().__init__(inner)
        self._counter = counter or EstimateTokenCounter()

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Call the inner model and record the usage (see class docstring)."""
        started = time.perf_counter()
        result: Completion | None = None
        try:
            result = await self.inner.complete(
                messages,
                max_tokens=max_tokens,
                temperature=temperature,
                stop=stop,
                json_schema=json_schema,
            )
            return result
        finally:
            latency = time.perf_counter() - started
            if result is not None and result.cached:
                record_usage(TokenUsage(cache_hits=1, latency_s=latency))
            else:
                text = result.text if result is not None else ""
                record_usage(
                    TokenUsage(
                        calls=1,
                        input_tokens=(result.input_tokens if result else 0)
                        or self._prompt_tokens(messages),
                        output_tokens=(result.output_tokens if result else 0)
                        or self._counter.count(text),
                        latency_s=latency,
                    )
                )

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Pass the stream through; record one call with estimated tokens when it ends."""
        started = time.perf_counter()
        parts: list[str] = []
        try:
            async for chunk in self.inner.stream(
                messages, max_tokens=max_tokens, temperature=temperature, stop=stop
            ):
                parts.append(chunk)
                yield chunk
        finally:
            record_usage(
                TokenUsage(
                    calls=1,
                    input_tokens=self._prompt_tokens(messages),
                    output_tokens=self._counter.count("".join(parts)),
                    latency_s=time.perf_counter() - started,
                )
            )

    def _prompt_tokens(self, messages: Sequence[Message]) -> int:
        return sum(self._counter.count(m.content) for m in messages)
