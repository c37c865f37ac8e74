"""`ScriptedChatModel`: a deterministic chat model for tests and demos (DESIGN.md §6).

Replies come from `ScriptedLLMConfig`: the first rule whose ``match`` text occurs in the last
user message answers, else ``default_reply``. No randomness, no I/O; it counts its calls so a
test can assert how many model calls a pipeline made (a cache hit makes none).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence

from unified_kg_rag.config.models import ScriptedLLMConfig
from unified_kg_rag.domain.llm.finish import record_stream_finish
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.util.hashing import sha256_json

__all__ = ["ScriptedChatModel"]

_STREAM_CHUNKS = 3


class ScriptedChatModel:
    """Canned replies keyed by prompt content (implements `ports.ChatModel`).

    Args:
        config: the ``llm.scripted`` section.

    Attributes:
        calls: how many ``complete`` and ``stream`` calls were made.
        prompts: the last user message of each call, in order.
    """

    def __init__(self, config: ScriptedLLMConfig) -> None:
        self.config = config
        self.calls = 0
        self.prompts: list[str] = []
        self._counter = EstimateTokenCounter()
        self._id = "scripted:" + sha256_json(config.model_dump(mode="json"))[:8]

    @property
    def model_id(self) -> str:
        """``scripted:<hash of the rules>`` (new rules never hit an old cache entry)."""
        return self._id

    def reply_for(self, messages: Sequence[Message]) -> str:
        """Return the reply the rules give for ``messages`` (without counting a call)."""
        prompt = next((m.content for m in reversed(messages) if m.role == "user"), "")
        for rule in self.config.replies:
            if rule.match in prompt:
                return rule.reply
        return self.config.default_reply

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Return the scripted reply.

        A reply longer than ``max_tokens`` (estimated tokens) is cut and reported with
        ``finish_reason="length"``; ``stop`` cuts at the first stop sequence. Token counts are
        left at 0 (the metering middleware estimates them).
        """
        self._record(messages)
        return self._answer(messages, max_tokens, stop)

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Yield the scripted reply in up to three chunks (cut at token boundaries)."""
        self._record(messages)
        answer = self._answer(messages, max_tokens, stop)
        text = answer.text
        spans = self._counter.token_spans(text)
        step = max(1, -(-len(spans) // _STREAM_CHUNKS))
        cuts = [spans[i][0] for i in range(step, len(spans), step)]
        start = 0
        for cut in [*cuts, len(text)]:
            if cut > start:
                yield text[start:cut]
            start = cut
        record_stream_finish(answer.finish_reason)

    def _answer(
        self, messages: Sequence[Message], max_tokens: int | None, stop: Sequence[str] | None
    ) -> Completion:
        text = self.reply_for(messages)
        finish = "stop"
        for s in stop or ():
            if s and s in text:
                text = text[: text.index(s)]
        if max_tokens is not None and self._counter.count(text) > max_tokens:
            text = self._counter.truncate(text, max_tokens)
            finish = "length"
        return Completion(text=text, finish_reason=finish)

    def _record(self, messages: Sequence[Message]) -> None:
        self.calls += 1
        self.prompts.append(next((m.content for m in reversed(messages) if m.role == "user"), ""))
