"""`CachingChatModel`: the LLM response cache, in a `RecordStore` namespace.

Sits outside the retries (a hit costs no attempt) and inside metering (a hit is metered as a
cache hit); order in `adapters.llm.middleware`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence

from pydantic import ValidationError

from unified_kg_rag.adapters.llm.layer import ChatModelLayer
from unified_kg_rag.domain.llm.cache_control import cache_refresh_requested, reply_acceptable
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.ports import ChatModel, RecordStore
from unified_kg_rag.util.hashing import sha256_json

__all__ = ["CACHE_NAMESPACE", "CachingChatModel", "cache_key"]

logger = logging.getLogger(__name__)

CACHE_NAMESPACE = "llm_cache"
"""RecordStore namespace of cached completions."""


def cache_key(
    model_id: str,
    messages: Sequence[Message],
    *,
    max_tokens: int | None,
    temperature: float | None,
    stop: Sequence[str] | None,
    json_schema: Mapping[str, object] | None,
) -> str:
    """Return the cache key of a call: SHA-256 of the stable JSON of model and parameters."""
    return sha256_json(
        {
            "model": model_id,
            "messages": [[m.role, m.content] for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
            "stop": list(stop) if stop is not None else None,
            "json_schema": dict(json_schema) if json_schema is not None else None,
        }
    )


class CachingChatModel(ChatModelLayer):
    """Serves repeated ``complete`` calls from a `RecordStore` (namespace ``llm_cache``).

    The key is `cache_key` (model id, messages, max_tokens, temperature, stop, json_schema);
    the value is the `Completion` as JSON. Replies that are not complete (any finish reason
    but ``stop``: the length limit, a content filter ...) and empty replies are never stored,
    and a stored one that is not complete is asked again. A hit returns ``cached=True``.
    Inside a `refresh_cache` scope the cache is not read (the model is asked again) but the
    new reply is stored; inside an `accept_replies` scope only replies its validator accepts
    are stored or served. Store
    errors propagate (a broken store is never read as a miss); an unreadable entry is a miss.
    """

    def __init__(
        self, inner: ChatModel, store: RecordStore, *, namespace: str = CACHE_NAMESPACE
    ) -> None:
        super().__init__(inner)
        self._store = store
        self._namespace = namespace

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Return the cached reply, or call the inner model and cache its reply."""
        key = cache_key(
            self.model_id,
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            json_schema=json_schema,
        )
        stored = None if cache_refresh_requested() else await self._store.get(self._namespace, key)
        if stored is not None:
            try:
                hit = Completion.model_validate_json(stored)
            except ValidationError:
                logger.warning("ignoring an unreadable %s entry %s", self._namespace, key[:12])
            else:
                # an incomplete reply stored by an older version is asked again
                if hit.complete and reply_acceptable(hit.text):
                    return hit.model_copy(update={"cached": True})
                logger.debug("cached reply %s rejected by the caller; asking again", key[:12])
        result = await self.inner.complete(
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            json_schema=json_schema,
        )
        if result.complete and result.text.strip() and reply_acceptable(result.text):
            await self._store.put(self._namespace, key, result.model_dump_json())
        return result

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Streams are not cached: pass through."""
        return self.inner.stream(
            messages, max_tokens=max_tokens, temperature=temperature, stop=stop
        )
