"""The Ray actors: each builds its own model from the configuration it is given.

These classes are plain Python; `adapters.ray.cluster` turns them into Ray actors
(``ray.remote``) when it starts a pool, so importing this module needs no Ray. A worker
process imports ``unified_kg_rag`` (the package must be installed on every node, or shipped
with a ``runtime_env``: see the scale-out guide), builds the provider the driver's
configuration names through the same registries as a local run, and answers calls. Workers
hold no store: every result goes back to the driver, which writes it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.config.llm import LLMConfig
from unified_kg_rag.config.models import EmbeddingsConfig
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.ports import ChatModel, Embedder

__all__ = ["ChatWorker", "EmbedWorker"]


def _registries() -> None:
    """Register the built-in providers in this worker process (idempotent)."""
    from unified_kg_rag.adapters import builtins

    builtins.register_all()


class EmbedWorker:
    """One embedding model (``embeddings``) in a worker process, one batch at a time.

    Args:
        config: the driver's ``embeddings`` section.
    """

    def __init__(self, config: EmbeddingsConfig) -> None:
        from unified_kg_rag.adapters.registry import EMBEDDERS

        _registries()
        self._embedder: Embedder = EMBEDDERS.get(config.kind)(config)

    async def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Return ``ndarray[n, d] float32`` for ``texts`` (`ports.Embedder.embed_documents`)."""
        return await self._embedder.embed_documents(texts)

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        """Return ``ndarray[d] float32`` for a query (`ports.Embedder.embed_query`)."""
        return await self._embedder.embed_query(text)

    def pid(self) -> int:
        """This worker's process id (the tests kill it)."""
        return os.getpid()


class ChatWorker:
    """One chat-model provider (an ``llm`` section) in a worker process.

    The provider is the bare adapter (one request per call); the driver keeps the wrapper
    around it (`adapters.llm.middleware`: response cache in the store, retries, the
    concurrency bound, metering), so a reply is cached and counted exactly as in a local run.

    Args:
        section: the driver's ``llm`` section of this model, with the API key resolved by
            the driver (a `SecretStr`: never printed).
    """

    def __init__(self, section: LLMConfig) -> None:
        from unified_kg_rag.adapters.registry import CHAT_MODELS

        _registries()
        model = CHAT_MODELS.get(section.kind)(section)
        if model is None:
            raise ValueError("llm.kind none has no model to serve")
        self._model: ChatModel = model

    async def complete(
        self, messages: Sequence[Message], options: Mapping[str, object]
    ) -> Completion:
        """Return the provider's reply (`ports.ChatModel.complete`; ``options`` its keywords)."""
        return await self._model.complete(messages, **options)  # type: ignore[arg-type]

    def pid(self) -> int:
        """This worker's process id (the tests kill it)."""
        return os.getpid()
