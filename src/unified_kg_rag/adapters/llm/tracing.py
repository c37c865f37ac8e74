"""`TracingChatModel`: one OpenTelemetry span per chat-model call (`util.telemetry`).

The outermost middleware (order in `adapters.llm.middleware`), so its span covers the whole
call as the caller sees it: cache lookup, retries and their backoff, the wait for a slot.
Spans: ``ukr.llm.complete`` and ``ukr.llm.stream``, with the OpenTelemetry GenAI attribute
names: ``gen_ai.operation.name`` (``chat``), ``gen_ai.request.model`` (the model id),
``gen_ai.request.max_tokens``, ``gen_ai.usage.input_tokens`` and
``gen_ai.usage.output_tokens`` when the provider reported them, ``gen_ai.response.finish_reasons``,
``ukr.llm.cached`` (served from the response cache); on failure ``error.type`` and
``http.response.status_code`` when the provider answered with one. A no-op without
``opentelemetry``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence

from unified_kg_rag.adapters.llm.layer import ChatModelLayer
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.util.telemetry import note_model_error, span

__all__ = ["TracingChatModel"]


class TracingChatModel(ChatModelLayer):
    """Wraps each call in a span (module docstring); calls and errors pass unchanged."""

    def _name(self) -> str:
        """The model's id for the span (a stand-in model without one is named by its class)."""
        try:
            return self.model_id
        except AttributeError:
            return type(self.inner).__name__

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Call the inner model inside a ``ukr.llm.complete`` span."""
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": self._name(),
                      "gen_ai.request.max_tokens": max_tokens}  # fmt: skip
        with span("ukr.llm.complete", attributes) as current:
            try:
                result = await self.inner.complete(
                    messages, max_tokens=max_tokens, temperature=temperature, stop=stop,
                    json_schema=json_schema,
                )  # fmt: skip
            except Exception as exc:
                note_model_error(current, exc)
                raise
            current.set_attribute("ukr.llm.cached", result.cached)
            current.set_attribute("gen_ai.response.finish_reasons", [result.finish_reason])
            if result.input_tokens:
                current.set_attribute("gen_ai.usage.input_tokens", result.input_tokens)
            if result.output_tokens:
                current.set_attribute("gen_ai.usage.output_tokens", result.output_tokens)
            return result

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Pass the stream through inside a ``ukr.llm.stream`` span (``ukr.llm.chunks``)."""
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": self._name(),
                      "gen_ai.request.max_tokens": max_tokens}  # fmt: skip
        with span("ukr.llm.stream", attributes) as current:
            chunks = 0
            try:
                async for chunk in self.inner.stream(
                    messages, max_tokens=max_tokens, temperature=temperature, stop=stop
                ):
                    chunks += 1
                    yield chunk
            except Exception as exc:
                note_model_error(current, exc)
                raise
            finally:
                current.set_attribute("ukr.llm.chunks", chunks)
