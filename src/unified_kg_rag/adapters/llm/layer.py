"""`ChatModelLayer`: the base of the chat-model middlewares (see `adapters.llm.middleware`)."""

from __future__ import annotations

from collections.abc import AsyncIterator

from unified_kg_rag.ports import ChatModel

__all__ = ["ChatModelLayer", "aclose_iterator"]


class ChatModelLayer:
    """Base of the middlewares: holds the inner `ChatModel` and forwards ``model_id``."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner

    @property
    def model_id(self) -> str:
        """The wrapped model's id."""
        return self.inner.model_id


async def aclose_iterator(iterator: AsyncIterator[str]) -> None:
    """Close an async iterator that has ``aclose`` (an async generator); others are left."""
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()
