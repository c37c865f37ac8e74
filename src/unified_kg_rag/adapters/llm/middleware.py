"""The one wrapper every chat-model call goes through: a stack of small middlewares.

Each middleware is itself a `ports.ChatModel` wrapping an inner one. `wrap_chat_model` builds
the stack in this order, outermost first::

    TracingChatModel                  an OpenTelemetry span per call (no-op without it)
    └── MeteredChatModel              usage per scope: calls, cache hits, tokens, latency
        └── QueryDeadlineChatModel    the query's time left (query.deadline_s), when in one
            └── CachingChatModel      RecordStore namespace ``llm_cache`` (complete only)
                └── RetryingChatModel transient ModelError: exponential backoff with jitter
                    └── BoundedChatModel  asyncio.Semaphore(max_concurrency)
                        └── ReasoningStrippingChatModel   <think>…</think> removed
                            └── UnicodeRepairingChatModel lone surrogates → U+FFFD
                                └── the provider's adapter (one HTTP request per call,
                                    within its own deadline_s)

Why this order: the span outermost covers the call as its caller waits for it; metering
next sees every call, including cache hits; the cache sits
outside retries so a hit costs no attempt; retries sit outside the concurrency bound so a
call waiting out its backoff holds no slot (graphrag-llm puts cache outside retry, retry
outside the rate limiter); the query's deadline sits outside them all, so backoff and slot
waits count against it and a call it cut is not retried; reasoning is stripped near the
adapter so the cache stores clean text, and text is repaired innermost, where it enters, so
no layer sees invalid Unicode.

Streams (`stream`) pass through metering (tokens estimated), retry (only before the first
chunk: a stream that failed midway cannot be replayed), the concurrency bound (the slot is
held until the stream ends or is closed) and reasoning stripping. Streams are not cached.
"""

from __future__ import annotations

from unified_kg_rag.adapters.llm.bounded import BoundedChatModel
from unified_kg_rag.adapters.llm.caching import CACHE_NAMESPACE, CachingChatModel, cache_key
from unified_kg_rag.adapters.llm.metering import MeteredChatModel
from unified_kg_rag.adapters.llm.query_deadline import QueryDeadlineChatModel
from unified_kg_rag.adapters.llm.reasoning import ReasoningStrippingChatModel
from unified_kg_rag.adapters.llm.retrying import RetryingChatModel
from unified_kg_rag.adapters.llm.tracing import TracingChatModel
from unified_kg_rag.adapters.llm.unicode_repair import UnicodeRepairingChatModel
from unified_kg_rag.config.models import LLMConfig
from unified_kg_rag.ports import ChatModel, RecordStore

__all__ = [
    "CACHE_NAMESPACE",
    "BoundedChatModel",
    "CachingChatModel",
    "MeteredChatModel",
    "QueryDeadlineChatModel",
    "ReasoningStrippingChatModel",
    "RetryingChatModel",
    "TracingChatModel",
    "UnicodeRepairingChatModel",
    "cache_key",
    "wrap_chat_model",
]


def wrap_chat_model(raw: ChatModel, config: LLMConfig, cache: RecordStore | None) -> ChatModel:
    """Wrap a provider's chat model in the middleware stack (order in the module docstring).

    Args:
        raw: the provider adapter (one request per call).
        config: the ``llm`` section: retries, backoff, concurrency, cache switch, the
            reasoning filter's hold-back on streams.
        cache: the store holding the response cache; None (or ``config.cache`` false)
            leaves the cache out.
    """
    model: ChatModel = ReasoningStrippingChatModel(
        UnicodeRepairingChatModel(raw), holdback_chars=config.reasoning_holdback_chars
    )
    model = BoundedChatModel(model, config.max_concurrency)
    model = RetryingChatModel(
        model,
        max_retries=config.max_retries,
        initial_s=config.retry_initial_s,
        max_s=config.retry_max_s,
    )
    if cache is not None and config.cache:
        model = CachingChatModel(model, cache)
    return TracingChatModel(MeteredChatModel(QueryDeadlineChatModel(model)))
