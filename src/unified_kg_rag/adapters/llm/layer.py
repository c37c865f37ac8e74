"""`ChatModelLayer`: the base of the chat-model middlewares (see `adapters.llm.middleware`)."""

from __future__ import annotations

from unified_kg_rag.ports import ChatModel
from unified_kg_rag.util.aio import aclose_iterator

__all__ = ["ChatModelLayer", "aclose_iterator"]


class ChatModelLayer:
    """Base of the middlewares: holds the inner `ChatModel` and forwards ``model_id``."""

    def __init__(self, inner: ChatModel) -> None:
        self.inner = inner

    @property
    def model_id(self) -> str:
        """The wrapped model's id."""
        return self.inner.model_id
