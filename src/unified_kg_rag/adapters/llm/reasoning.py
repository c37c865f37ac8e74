"""Removing reasoning blocks (``<think>…</think>``) from model replies, whole or streamed.

Reasoning models (DeepSeek-R1, Qwen3, QwQ served by vLLM, llama.cpp or Ollama) put their
chain of thought in the reply. Two forms occur:

- a block ``<think>…</think>`` (usually at the start; removed wherever it is);
- a lone closing ``</think>`` when the chat template opened the block in the prompt: the
  reply is reasoning up to that tag, so everything before it is dropped.

Rules, applied left to right (`ReasoningFilter` is the one implementation; `strip_reasoning`
runs it over a whole text):

1. leading whitespace is skipped; a reply opening with ``<think>`` starts in a block;
2. before any visible text is released, the first tag decides: ``</think>`` drops what came
   before it (lone close), ``<think>`` starts a block;
3. inside a block everything up to ``</think>`` is dropped; an unclosed block drops the rest;
4. a stray ``</think>`` after visible text is removed by itself;
5. the result is stripped of surrounding whitespace.

A stream must hold visible text back until rule 2 can decide: the filter holds at most
``holdback_chars`` characters (default 4,096) and then releases them; a lone ``</think>``
arriving later can no longer remove what was released (it is removed by itself, rule 4).

`ReasoningStrippingChatModel` applies the rules to a chat model's replies; it is the
innermost middleware (`adapters.llm.middleware`), so the cache stores clean text.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence

from unified_kg_rag.adapters.llm.layer import ChatModelLayer, aclose_iterator
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.ports import ChatModel

__all__ = ["ReasoningFilter", "ReasoningStrippingChatModel", "strip_reasoning"]

logger = logging.getLogger(__name__)

OPEN = "<think>"
CLOSE = "</think>"
DEFAULT_HOLDBACK_CHARS = 4096


def strip_reasoning(text: str) -> str:
    """Return ``text`` without reasoning blocks, stripped (rules in the module docstring).

    Examples: ``"<think>a</think> b"`` -> ``"b"``; ``"a </think> b"`` -> ``"b"``;
    ``"x <think>y</think> z"`` -> ``"x  z"``; ``"<think>unfinished"`` -> ``""``.
    """
    f = ReasoningFilter(holdback_chars=None)
    return f.feed(text) + f.finish()


class ReasoningFilter:
    """Incremental reasoning stripper: feed text deltas, get the visible text to emit.

    The concatenation of every ``feed`` result and ``finish()`` equals `strip_reasoning` of
    the whole text, unless a lone ``</think>`` comes after ``holdback_chars`` characters of
    visible text (see module docstring).

    Args:
        holdback_chars: visible characters held back while a lone closing tag may still come;
            None holds everything until ``finish`` (exact, for whole texts).
    """

    def __init__(self, holdback_chars: int | None = DEFAULT_HOLDBACK_CHARS) -> None:
        self._holdback = holdback_chars
        self._buf = ""
        self._state = "start"  # start (undecided) | think | body
        self._ws = ""  # whitespace held until visible text follows it
        self._emitted = False

    def feed(self, delta: str) -> str:
        """Add ``delta`` and return the visible text that is now certain ("" for none)."""
        self._buf += delta
        return self._drain(final=False)

    def finish(self) -> str:
        """Signal the end of the reply and return the visible text still held."""
        return self._drain(final=True)

    def _drain(self, *, final: bool) -> str:
        out: list[str] = []
        while True:
            if self._state == "think":
                i = self._buf.find(CLOSE)
                if i < 0:
                    self._buf = "" if final else self._buf[-(len(CLOSE) - 1) :]
                    break
                self._buf = self._buf[i + len(CLOSE) :]
                self._state = "body"
                continue
            if self._state == "start":
                if not self._decide(final):
                    break
                continue
            # body
            tag, i = _first_tag(self._buf)
            if tag == OPEN:
                out.append(self._visible(self._buf[:i]))
                self._buf = self._buf[i + len(OPEN) :]
                self._state = "think"
                continue
            if tag == CLOSE:
                logger.debug("removed a stray %s after visible text", CLOSE)
                out.append(self._visible(self._buf[:i]))
                self._buf = self._buf[i + len(CLOSE) :]
                continue
            keep = 0 if final else _partial_tag_len(self._buf)
            out.append(self._visible(self._buf[: len(self._buf) - keep]))
            self._buf = self._buf[len(self._buf) - keep :]
            break
        if final:
            self._ws = ""
        return "".join(out)

    def _decide(self, final: bool) -> bool:
        """In the undecided start state: move on (True) or wait for more text (False)."""
        rest = self._buf.lstrip()
        if rest.startswith(OPEN):
            self._buf = rest[len(OPEN) :]
            self._state = "think"
            return True
        if not final and OPEN.startswith(rest):
            return False  # blank so far, or a partial "<think"
        tag, i = _first_tag(self._buf)
        if tag == CLOSE:
            self._buf = self._buf[i + len(CLOSE) :]
            self._state = "body"
            return True
        if tag == OPEN or final:
            self._state = "body"
            return True
        if self._holdback is not None and len(self._buf) > self._holdback:
            self._state = "body"
            return True
        return False

    def _visible(self, text: str) -> str:
        """Return ``text`` to emit: the reply's leading whitespace dropped, trailing held.

        Trailing whitespace is emitted only once more visible text follows it.
        """
        if not self._emitted:
            text = text.lstrip()
            if not text:
                return ""
        body = text.rstrip()
        if not body:
            self._ws += text
            return ""
        emitted = self._ws + body
        self._ws = text[len(body) :]
        self._emitted = True
        return emitted


class ReasoningStrippingChatModel(ChatModelLayer):
    """Removes ``<think>…</think>`` reasoning (and a lone leading ``</think>``) from replies.

    Rules in `adapters.llm.reasoning`. Streams hold visible text back until it is known
    whether the reply is reasoning (at most ``holdback_chars`` characters).
    """

    def __init__(self, inner: ChatModel, *, holdback_chars: int = DEFAULT_HOLDBACK_CHARS) -> None:
        super().__init__(inner)
        self.holdback_chars = holdback_chars

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Call the inner model and strip reasoning from its text."""
        result = await self.inner.complete(
            messages,
            max_tokens=max_tokens,
            temperature=temperature,
            stop=stop,
            json_schema=json_schema,
        )
        text = strip_reasoning(result.text)
        return result if text == result.text else result.model_copy(update={"text": text})

    async def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Stream the inner model's reply with reasoning removed."""
        flt = ReasoningFilter(self.holdback_chars)
        iterator = aiter(
            self.inner.stream(messages, max_tokens=max_tokens, temperature=temperature, stop=stop)
        )
        try:
            async for chunk in iterator:
                visible = flt.feed(chunk)
                if visible:
                    yield visible
            tail = flt.finish()
            if tail:
                yield tail
        finally:
            await aclose_iterator(iterator)


def _first_tag(text: str) -> tuple[str | None, int]:
    """Return the first of ``<think>`` / ``</think>`` in ``text`` and its offset."""
    i = text.find(OPEN)
    j = text.find(CLOSE)
    if i < 0 and j < 0:
        return None, -1
    if j < 0 or (0 <= i < j):
        return OPEN, i
    return CLOSE, j


def _partial_tag_len(text: str) -> int:
    """Return the length of the longest suffix of ``text`` that may begin a tag."""
    lt = text.rfind("<", max(0, len(text) - len(CLOSE) + 1))
    if lt < 0:
        return 0
    tail = text[lt:]
    return len(tail) if OPEN.startswith(tail) or CLOSE.startswith(tail) else 0
