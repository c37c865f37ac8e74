"""`OpenAIChatModel`: any OpenAI-compatible chat-completions endpoint, via the ``openai`` SDK.

Works with OpenAI, vLLM, llama.cpp ``llama-server``, Ollama's ``/v1`` and LM Studio.

The adapter makes exactly one HTTP request per call: no retries, no cache, no reasoning
stripping (the middleware stack of `adapters.llm.middleware` adds those). SDK errors become
`ModelError` (see `adapters.llm.openai_client`). ``timeout_s`` bounds connecting and each
read; ``deadline_s`` bounds the whole call (`adapters.deadlines`). The client is built (the SDK
imported, its chat resource loaded) before a call's deadline starts: that one-time setup can
take seconds on a loaded machine and is no part of the call.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from unified_kg_rag.adapters.deadlines import call_within, deadline_error, stream_within
from unified_kg_rag.adapters.llm.openai_client import (
    LoopBoundClient,
    make_async_client,
    resolve_api_key,
    translate_openai_error,
)
from unified_kg_rag.adapters.llm.openai_reply import (
    openai_finish_reason,
    read_completion,
    stream_choice,
)
from unified_kg_rag.config.models import OpenAIChatConfig
from unified_kg_rag.domain.llm.finish import STREAM_UNFINISHED, record_stream_finish
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.util.aio import aclose_iterator
from unified_kg_rag.util.errors import ModelError, ModelOutputError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIChatModel", "openai_finish_reason"]

logger = logging.getLogger(__name__)

_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]+")


class OpenAIChatModel:
    """A `ports.ChatModel` for an OpenAI-compatible ``/chat/completions`` endpoint.

    Args:
        config: the ``llm.openai`` section; the API key is resolved here (``api_key``, else
            the variable named by ``api_key_env``, else a dummy that local servers accept).

    Raises:
        ConfigurationError: the ``openai`` package is not installed (on first call).
    """

    def __init__(self, config: OpenAIChatConfig) -> None:
        self.config = config
        self._api_key = resolve_api_key(config.api_key, config.api_key_env)
        self._clients: LoopBoundClient[AsyncOpenAI] = LoopBoundClient(self._build_client)

    @property
    def model_id(self) -> str:
        """``openai:<model>@<base_url>``.

        Two servers serving one model name are two models, so their replies are cached apart.
        """
        return f"openai:{self.config.model}@{self.config.base_url.rstrip('/')}"

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Send one chat-completions request and return the first choice.

        ``max_tokens`` and ``temperature`` default to the config's values; ``json_schema``
        is sent as ``response_format={"type": "json_schema", ...}``.

        Raises:
            ModelError: the request failed (``transient`` for timeouts, 408/409/429/5xx, and
                a call past ``deadline_s``), or the body is no chat completion.
            ModelOutputError: the reply held no choice, or a field of the wrong shape
                (`adapters.llm.openai_reply`).
        """
        params = self._params(messages, max_tokens, temperature, stop)
        if json_schema is not None:
            params["response_format"] = _response_format(json_schema)
        client = self._clients.get()  # built before the deadline starts
        raw = await call_within(
            self._create(client, params, raw=True), self.config.deadline_s, self._deadline_error
        )
        return read_completion(raw.content, self.config.base_url)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Yield the reply's content deltas in order (``stream=True``; empty deltas skipped).

        The finish reason is recorded in the caller's `domain.llm.finish.stream_finish` scope
        (``deadline`` when ``deadline_s`` passed after the first delta: the reply ends there).
        A stream that wrote text and ended without a finish reason is delivered, recorded
        ``unfinished_stream`` (`domain.llm.finish.STREAM_UNFINISHED`: not complete);
        one that wrote nothing and gave no finish reason fails (transient).

        Raises:
            ModelError: the request or the stream failed, or ``deadline_s`` passed before
                the first delta (transient).
            ModelOutputError: a chunk holds a field of the wrong shape (named).
        """
        params = self._params(messages, max_tokens, temperature, stop)
        return self._stream(params)

    async def _stream(self, params: dict[str, Any]) -> AsyncIterator[str]:
        """Build the client, then stream within the deadline (the setup is not the call's)."""
        client = self._clients.get()
        pieces = stream_within(
            self._deltas(client, params), self.config.deadline_s, self._deadline_error,
            within_query=True,
        )  # fmt: skip
        try:
            async for piece in pieces:
                yield piece
        finally:
            await aclose_iterator(pieces)

    async def aclose(self) -> None:
        """Close this loop's HTTP client and its connections (seed 000 §8.2)."""
        await self._clients.aclose()

    def _build_client(self) -> AsyncOpenAI:
        """A client whose lazily loaded chat resource is loaded (imports, once per loop)."""
        client = make_async_client(self.config.base_url, self._api_key, self.config.timeout_s)
        _ = client.chat.completions
        return client

    async def _create(self, client: AsyncOpenAI, params: dict[str, Any], *, raw: bool = False
                      ) -> Any:
        """Send one request (``params`` as the SDK takes them), translating SDK errors.

        ``raw``: return the SDK's raw response (its ``content`` is the body's bytes), which
        `read_completion` reads and checks; else the SDK's object (a stream).
        """
        completions = client.chat.completions
        try:
            if raw:
                return await completions.with_raw_response.create(**params)
            return await completions.create(**params)
        except Exception as exc:
            raise self._translate(exc) from exc

    async def _deltas(self, client: AsyncOpenAI, params: dict[str, Any]) -> AsyncIterator[str]:
        """Stream one request; yield its content deltas, record its finish reason."""
        chunks = await self._create(client, {**params, "stream": True})
        finished = wrote = False
        try:
            async for chunk in chunks:
                choices = getattr(chunk, "choices", None) or []
                if not isinstance(choices, list):
                    raise ModelOutputError(f"{self.config.base_url} streamed a malformed chat "
                                           "completion chunk: `choices` is not a list")
                for choice in choices:
                    index, content, reason = stream_choice(choice, self.config.base_url)
                    if index != 0:
                        continue
                    if content:
                        wrote = True
                        yield content
                    if reason is not None:
                        finished = True
                        record_stream_finish(openai_finish_reason(reason))
            if not finished and not wrote:
                raise ModelError(
                    f"{self.model_id}: the stream ended before the model wrote anything "
                    "(no finish reason)",
                    transient=True,
                )
            if not finished:  # its text is delivered, flagged: the connection may have been cut
                logger.info("%s: the stream ended without a finish reason; the reply may be "
                            "cut", self.model_id)
                record_stream_finish(STREAM_UNFINISHED)
        except ModelError:
            raise
        except Exception as exc:
            raise self._translate(exc) from exc
        finally:
            await chunks.close()

    def _params(
        self,
        messages: Sequence[Message],
        max_tokens: int | None,
        temperature: float | None,
        stop: Sequence[str] | None,
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.config.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens if max_tokens is not None else self.config.max_tokens,
            "temperature": temperature if temperature is not None else self.config.temperature,
        }
        if stop:
            params["stop"] = list(stop)
        return params

    def _translate(self, exc: Exception) -> ModelError:
        return translate_openai_error(exc, base_url=self.config.base_url, error_type=ModelError)

    def _deadline_error(self) -> ModelError:
        return deadline_error(self.model_id, self.config.deadline_s, "llm.openai.deadline_s")


def _response_format(schema: Mapping[str, object]) -> dict[str, object]:
    """Build the ``response_format`` of a structured-output request from a JSON schema."""
    title = schema.get("title")
    name = _SCHEMA_NAME.sub("_", title)[:64] if isinstance(title, str) and title else "response"
    return {"type": "json_schema", "json_schema": {"name": name, "schema": dict(schema)}}
