"""`OpenAIEmbedder`: any OpenAI-compatible ``/embeddings`` endpoint, via the ``openai`` SDK.

Works with OpenAI, vLLM, TEI, llama.cpp, Ollama's ``/v1`` and LM Studio.

Texts go in batches of ``max_batch``; vectors come back re-ordered by the response's
``index`` and L2-normalised (servers do not all normalise). Blank texts are not sent (the API
rejects empty input) and give zero rows. The SDK's retries are off; this adapter retries
transient failures (timeouts, dropped connections, HTTP 408/409/429/5xx, a request past
``deadline_s``) with exponential backoff and jitter, and fails at once on authentication
errors. ``timeout_s`` bounds connecting and each read; ``deadline_s`` bounds each whole
request (`adapters.deadlines`), the blocking dimension probe's too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from tenacity import (
    AsyncRetrying,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
)

from unified_kg_rag.adapters.deadlines import call_within, deadline_error
from unified_kg_rag.adapters.llm.backoff import backoff_wait
from unified_kg_rag.adapters.llm.openai_client import (
    LoopBoundClient,
    make_async_client,
    make_sync_client,
    resolve_api_key,
    translate_openai_error,
)
from unified_kg_rag.config.models import OpenAIEmbeddingsConfig
from unified_kg_rag.domain.llm.usage import record_usage
from unified_kg_rag.domain.models import TokenUsage
from unified_kg_rag.util.errors import EmbeddingModelError, ModelError
from unified_kg_rag.util.telemetry import AttributeValue, note_model_error, span
from unified_kg_rag.util.threads import wait_in_daemon_thread

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["PROBE_TEXT", "OpenAIEmbedder"]

logger = logging.getLogger(__name__)

PROBE_TEXT = "dimension probe"
"""Embedded once when ``dimension`` is read before any embedding and is not configured."""


class OpenAIEmbedder:
    """Implements `ports.Embedder` against an OpenAI-compatible ``/embeddings`` endpoint.

    Args:
        config: the ``embeddings.openai`` section; the API key is resolved here.
        max_retries: retries of a transient failure per request.
        retry_initial_s: first backoff delay, seconds (doubles per retry, plus jitter).
        retry_max_s: longest backoff delay, seconds.
    """

    def __init__(
        self,
        config: OpenAIEmbeddingsConfig,
        *,
        max_retries: int = 4,
        retry_initial_s: float = 1.0,
        retry_max_s: float = 30.0,
    ) -> None:
        self.config = config
        self.max_retries = max_retries
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        self._api_key = resolve_api_key(config.api_key, config.api_key_env)
        self._clients: LoopBoundClient[AsyncOpenAI] = LoopBoundClient(self._build_client)
        self._dimension: int | None = config.dimension

    @property
    def model_id(self) -> str:
        """``openai:<model>`` plus ``@<dimension>`` when a dimension is requested."""
        suffix = f"@{self.config.dimension}" if self.config.dimension else ""
        return f"openai:{self.config.model}{suffix}"

    @property
    def dimension(self) -> int:
        """The vector dimension: configured, learned from the first call, or probed.

        Probing makes one blocking request (embedding ``"dimension probe"``).

        Raises:
            EmbeddingModelError: the probe failed.
        """
        if self._dimension is None:
            self._dimension = self._probe_dimension()
        return self._dimension

    async def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed passages in batches of ``max_batch``.

        Args:
            texts: ``n`` strings; blank ones are not sent and give zero rows.

        Returns:
            ``ndarray[n, d] float32``, rows L2-normalised, in input order.

        Raises:
            EmbeddingModelError: a request failed after its retries, authentication failed,
                or the server returned vectors of inconsistent size or count.
        """
        started = time.perf_counter()
        wanted = [i for i, t in enumerate(texts) if t.strip()]
        rows: list[NDArray[np.float32]] = []
        step = self.config.max_batch
        for first in range(0, len(wanted), step):
            batch = [texts[i] for i in wanted[first : first + step]]
            rows.append(await self._embed_batch(batch))
        dim = rows[0].shape[1] if rows else self.dimension
        out = np.zeros((len(texts), dim), dtype=np.float32)
        if rows:
            out[wanted] = np.concatenate(rows, axis=0)
        record_usage(
            TokenUsage(embedded_texts=len(wanted), latency_s=time.perf_counter() - started)
        )
        return out

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed a query. Returns ``ndarray[d] float32``, L2-normalised."""
        row: NDArray[np.float32] = (await self.embed_documents([text]))[0]
        return row

    async def _embed_batch(self, batch: list[str]) -> NDArray[np.float32]:
        retrying = AsyncRetrying(**self._retry_policy())
        async for attempt in retrying:
            with attempt:
                client = self._clients.get()  # built before the deadline starts
                response = await call_within(
                    self._create(client, batch), self.config.deadline_s, self._deadline_error
                )
                vectors: NDArray[np.float32] = self._vectors(response, len(batch))
                return vectors
        raise RuntimeError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    def _build_client(self) -> AsyncOpenAI:
        """A client whose lazily loaded embeddings resource is loaded (imports, once per loop)."""
        client = make_async_client(self.config.base_url, self._api_key, self.config.timeout_s)
        _ = client.embeddings
        return client

    async def _create(self, client: AsyncOpenAI, batch: list[str]) -> Any:
        """Send one request, translating SDK errors, in a ``ukr.embed`` span.

        Span attributes: ``gen_ai.operation.name`` (``embeddings``), ``gen_ai.request.model``,
        ``ukr.embed.texts``, ``gen_ai.usage.input_tokens`` when the server reports usage; on
        failure ``error.type`` and ``http.response.status_code``.
        """
        attributes: dict[str, AttributeValue | None] = {"gen_ai.operation.name": "embeddings",
                      "gen_ai.request.model": self.model_id, "ukr.embed.texts": len(batch)}
        with span("ukr.embed", attributes) as current:
            try:
                response = await client.embeddings.create(**self._params(batch))
            except Exception as exc:
                error = self._translate(exc)
                note_model_error(current, error)
                raise error from exc
            tokens = getattr(getattr(response, "usage", None), "prompt_tokens", None)
            if isinstance(tokens, int):
                current.set_attribute("gen_ai.usage.input_tokens", tokens)
            return response

    def _probe_dimension(self) -> int:
        client = make_sync_client(self.config.base_url, self._api_key, self.config.timeout_s)
        _ = client.embeddings  # loaded before the deadline starts

        def request() -> Any:
            try:
                return client.embeddings.create(**self._params([PROBE_TEXT]))
            except Exception as exc:
                raise self._translate(exc) from exc

        try:
            for attempt in Retrying(**self._retry_policy()):
                with attempt:
                    response = wait_in_daemon_thread(
                        request, self.config.deadline_s, self._deadline_error
                    )
                    return int(self._vectors(response, 1).shape[1])
        finally:
            client.close()
        raise RuntimeError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    def _params(self, batch: list[str]) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.config.model,
            "input": batch,
            "encoding_format": "float",
        }
        if self.config.dimension is not None:
            params["dimensions"] = self.config.dimension
        return params

    def _vectors(self, response: Any, expected: int) -> NDArray[np.float32]:
        """Check a reply and return its vectors in input order, L2-normalised.

        Raises:
            EmbeddingModelError: the reply is no list of embeddings (an HTML page with status
                200), their count, indexes or sizes are wrong, or a value is NaN, infinite or
                beyond float32 (each names the endpoint; no numpy warning is printed).
        """
        where = self.config.base_url
        data = getattr(response, "data", None)
        if not isinstance(data, list):
            raise EmbeddingModelError(f"{where} did not answer with embeddings (is it an "
                                      "OpenAI-compatible API base URL?)")  # fmt: skip
        if any(not isinstance(getattr(d, "index", None), int) for d in data):
            raise EmbeddingModelError(f"{where} returned embeddings without an integer `index`")
        data = sorted(data, key=lambda item: int(item.index))
        if len(data) != expected or [d.index for d in data] != list(range(expected)):
            raise EmbeddingModelError(
                f"{where} returned {len(data)} embeddings for {expected} inputs"
            )
        try:
            with np.errstate(all="ignore"):  # checked below, never printed
                vectors = np.asarray([d.embedding for d in data], dtype=np.float32)
        except (ValueError, TypeError) as exc:
            raise EmbeddingModelError(
                f"{where} returned embeddings that are not lists of numbers of one size"
            ) from exc
        if vectors.ndim != 2 or vectors.shape[1] == 0:
            raise EmbeddingModelError(f"{where} returned empty embeddings")
        if not np.isfinite(vectors).all():
            raise EmbeddingModelError(f"{where} returned embeddings holding NaN or infinite "
                                      "values (or values beyond float32)")  # fmt: skip
        if self._dimension is None:
            self._dimension = int(vectors.shape[1])
        elif vectors.shape[1] != self._dimension:
            raise EmbeddingModelError(
                f"{self.model_id} returned {vectors.shape[1]}-dimensional vectors, "
                f"expected {self._dimension}"
            )
        norms = np.linalg.norm(vectors.astype(np.float64), axis=1, keepdims=True)
        np.divide(vectors, norms, out=vectors, where=norms > 0, casting="unsafe")
        return vectors

    def _retry_policy(self) -> dict[str, Any]:
        return {
            "retry": retry_if_exception(
                lambda e: isinstance(e, EmbeddingModelError) and e.transient
            ),
            "stop": stop_after_attempt(self.max_retries + 1),
            "wait": backoff_wait(self.retry_initial_s, self.retry_max_s),
            "reraise": True,
        }

    def _deadline_error(self) -> ModelError:
        return deadline_error(
            f"{self.model_id}@{self.config.base_url}", self.config.deadline_s,
            "embeddings.openai.deadline_s", EmbeddingModelError,
        )  # fmt: skip

    def _translate(self, exc: Exception) -> EmbeddingModelError:
        return translate_openai_error(
            exc, base_url=self.config.base_url, error_type=EmbeddingModelError
        )
