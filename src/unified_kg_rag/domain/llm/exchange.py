"""What one chat-model call exchanges: the messages sent, the reply, and usage counts.

Split from `domain.models` (which re-exports every name), so the model layer's value types
live beside the rest of the LLM's pure parts.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Completion", "Message", "TokenUsage"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Message(_Model):
    """One chat message sent to a `ChatModel`."""

    role: str
    content: str


class TokenUsage(BaseModel):
    """Model usage within a scope: calls, tokens, cache hits and time spent.

    Attributes:
        calls: model calls made (cache hits excluded).
        cache_hits: calls answered from the response cache.
        input_tokens: prompt tokens reported by the provider (estimated when it reports none).
        output_tokens: completion tokens.
        embedded_texts: texts sent to the embedding model.
        latency_s: wall time spent waiting on models, seconds.
    """

    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    embedded_texts: int = 0
    latency_s: float = 0.0

    def add(self, other: TokenUsage) -> None:
        """Add ``other``'s counts to this one, in place."""
        self.calls += other.calls
        self.cache_hits += other.cache_hits
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.embedded_texts += other.embedded_texts
        self.latency_s += other.latency_s


class Completion(_Model):
    """A chat model's reply.

    Attributes:
        text: the reply with reasoning blocks removed.
        finish_reason: ``stop`` (complete), ``length``, ``content_filter`` ... as the provider
            reported it, mapped to OpenAI's names (`domain.llm.finish`).
        input_tokens: prompt tokens, when reported.
        output_tokens: completion tokens, when reported.
        cached: True when served from the response cache.
    """

    text: str
    finish_reason: str = "stop"
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False

    @property
    def complete(self) -> bool:
        """True when the model stopped on its own (``finish_reason == "stop"``).

        Any other reason (``length``, ``content_filter`` ...) means the text may be cut: it is
        never cached and never stored as a finished result.
        """
        return self.finish_reason == "stop"
