"""Shared plumbing of the OpenAI-compatible adapters (chat and embeddings).

Builds `openai.AsyncOpenAI` clients with the SDK's own retries off (retries belong to the LLM
wrapper and to the embedder, which know which errors are transient), resolves API keys, and
translates SDK exceptions into `ModelError` with ``transient`` and ``status_code`` set:

- timeouts, dropped connections, HTTP 408, 409, 429 and 5xx: transient;
- HTTP 401 and 403: fatal, "authentication failed for <base_url>";
- any other HTTP 4xx: fatal, with the server's message.

The ``openai`` package is imported inside functions, at first use.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Generic, TypeVar

from pydantic import SecretStr

from unified_kg_rag.util.errors import ConfigurationError, ModelError

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

__all__ = [
    "LoopBoundClient",
    "make_async_client",
    "make_sync_client",
    "resolve_api_key",
    "translate_openai_error",
]

logger = logging.getLogger(__name__)

NO_KEY = "not-needed"
"""The key sent when none is configured: local servers (vLLM, llama.cpp, Ollama) accept any."""

_TRANSIENT_STATUS = frozenset({408, 409, 429})
E = TypeVar("E", bound=ModelError)
C = TypeVar("C")


def resolve_api_key(api_key: SecretStr | None, api_key_env: str) -> str:
    """Return the configured key, else the value of the ``api_key_env`` variable, else a dummy.

    Called when an adapter is built (never at import), so the environment is read once.
    """
    if api_key is not None and api_key.get_secret_value():
        return api_key.get_secret_value()
    value = os.environ.get(api_key_env, "") if api_key_env else ""
    return value or NO_KEY


def _import_openai() -> None:
    try:
        import openai  # noqa: F401
    except ImportError as exc:
        raise ConfigurationError(
            "the `openai` package is not installed; install the `openai` extra "
            "(pip install 'unified-kg-rag[openai]')"
        ) from exc


def make_async_client(base_url: str, api_key: str, timeout_s: float) -> AsyncOpenAI:
    """Return an `AsyncOpenAI` client for ``base_url`` with SDK retries disabled.

    Raises:
        ConfigurationError: the ``openai`` package is not installed.
    """
    _import_openai()
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)


def make_sync_client(base_url: str, api_key: str, timeout_s: float) -> OpenAI:
    """Return a blocking `OpenAI` client (used only to probe a dimension from a property).

    Raises:
        ConfigurationError: the ``openai`` package is not installed.
    """
    _import_openai()
    from openai import OpenAI

    return OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)


class LoopBoundClient(Generic[C]):
    """Holds one async client per event loop.

    An httpx connection pool belongs to the loop that opened it; a library object that lives
    across ``asyncio.run`` calls (tests, notebooks) gets a fresh client in each new loop.

    Args:
        factory: builds a client; called in the loop that will use it.
    """

    def __init__(self, factory: Callable[[], C]) -> None:
        self._factory = factory
        self._client: C | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> C:
        """Return the client of the running loop, building it on first use there."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = self._factory()
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the client of the running loop (its connection pool); forget any other.

        A client opened in a loop that is gone cannot be closed from this one: it is dropped.
        """
        client, loop = self._client, self._loop
        self._client = self._loop = None
        if client is not None and loop is asyncio.get_running_loop():
            close = getattr(client, "close", None)
            if close is not None:
                await close()


def translate_openai_error(
    exc: BaseException, *, base_url: str, error_type: type[E]
) -> E:
    """Translate an ``openai`` SDK exception into a typed `ModelError`.

    Args:
        exc: the exception the SDK raised.
        base_url: the endpoint called, named in the message.
        error_type: the `ModelError` subclass to build (`EmbeddingModelError` for embedders).

    Returns:
        The error to raise (``raise translate_openai_error(e, ...) from e``).
    """
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return error_type(f"request to {base_url} timed out", transient=True)
    if isinstance(exc, openai.APIConnectionError):
        return error_type(f"cannot connect to {base_url}: {exc}", transient=True)
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        detail = _server_message(exc)
        if status in (401, 403):
            return error_type(
                f"authentication failed for {base_url} (HTTP {status}): {detail}; "
                "check the API key (`api_key` or the variable named by `api_key_env`)",
                transient=False,
                status_code=status,
            )
        transient = status in _TRANSIENT_STATUS or status >= 500
        return error_type(
            f"{base_url} answered HTTP {status}: {detail}", transient=transient, status_code=status
        )
    return error_type(f"call to {base_url} failed: {exc}", transient=False)


def _server_message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(exc, "message", exc))
