"""`UnicodeRepairingChatModel`: every reply's text made valid Unicode where it enters.

A reply decoded from JSON may hold lone UTF-16 surrogates (a JSON escape of U+D83D alone): such
a string cannot be encoded as UTF-8, so one bad reply would fail the store write, the token
count or the terminal output of a whole run. This layer wraps the provider's adapter directly
(innermost, `adapters.llm.middleware`): surrogate pairs are joined into their character and a
lone half becomes U+FFFD (`domain.text.analysis.repair_unicode`). In a stream, a high
surrogate that ends a delta waits for the next delta, which may start with its low half.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence

from unified_kg_rag.adapters.llm.layer import ChatModelLayer, aclose_iterator
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.domain.text.analysis import repair_unicode

__all__ = ["UnicodeRepairingChatModel"]


class UnicodeRepairingChatModel(ChatModelLayer):
    """Repairs the text of every reply, whole or streamed (see the module docstring)."""

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Call the inner model; return its reply with the text repaired."""
        result = await self.inner.complete(
            messages, max_tokens=max_tokens, temperature=temperature, stop=stop,
            json_schema=json_schema,
        )  # fmt: skip
        text = repair_unicode(result.text)
        return result if text is result.text else result.model_copy(update={"text": text})

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Yield the inner model's deltas repaired (a trailing high surrogate waits)."""
        iterator = aiter(
            self.inner.stream(messages, max_tokens=max_tokens, temperature=temperature, stop=stop)
        )
        held = ""
        try:
            async for delta in iterator:
                text = held + delta
                held = ""
                if text and "\ud800" <= text[-1] <= "\udbff":
                    text, held = text[:-1], text[-1]
                if text:
                    yield repair_unicode(text)
            if held:
                yield repair_unicode(held)
        finally:
            await aclose_iterator(iterator)
