"""`HttpReranker`: a ``/rerank`` endpoint of the Cohere / Jina / TEI shape, through httpx.

Request bodies (``query.rerank.api_style``):

- ``cohere``: ``{"model", "query", "documents", "top_n"}`` (Cohere v1/v2, Jina, vLLM,
  Infinity); ``model`` is left out when none is configured;
- ``tei``: ``{"query", "texts"}`` (Hugging Face text-embeddings-inference);
- ``auto`` (default): the Cohere body; when the server rejects it with HTTP 400 or 422 (TEI
  answers 422 "missing field `texts`"), the TEI body, and the style that worked is kept for
  later calls. One body with both keys is not sent: Cohere refuses unknown fields.

Both response shapes are read whatever was sent: a list ``[{"index", "score"}]`` (TEI) or
``{"results": [{"index", "relevance_score"}]}`` (Cohere, Jina). Scores are the server's (TEI
and Cohere return relevance in [0, 1]). A text the response leaves out scores below every
returned one (the lowest returned score minus 1). Texts go in batches of ``max_batch``
(TEI refuses more than 32 per request by default), sent one after another.

Errors: HTTP 401/403 raise a fatal `ModelError` with ``status_code``; timeouts, dropped
connections, HTTP 408/409/429/5xx and a request past ``deadline_s`` (`adapters.deadlines`:
``timeout_s`` bounds connecting and each read, not a reply trickled a byte at a time) are
transient and retried with exponential backoff and jitter, at most ``max_retries`` times;
other HTTP errors and unreadable bodies fail at once. Every message is one line naming the
URL.

httpx is imported inside functions. Each `rerank` call opens its own client (closed before
it returns), so no connection outlives the event loop that opened it.
"""

from __future__ import annotations

import json
import logging
import math
import ssl
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from unified_kg_rag.adapters.deadlines import call_within, deadline_error
from unified_kg_rag.adapters.llm.backoff import backoff_wait
from unified_kg_rag.config.search import RerankConfig
from unified_kg_rag.domain.llm.usage import record_usage
from unified_kg_rag.domain.models import TokenUsage
from unified_kg_rag.util.errors import ConfigurationError, ModelError, ModelOutputError

if TYPE_CHECKING:
    import httpx

__all__ = ["ApiStyle", "HttpReranker", "parse_scores"]

logger = logging.getLogger(__name__)

ApiStyle = Literal["auto", "cohere", "tei"]
"""Request body sent to the endpoint (see the module docstring)."""

_TRANSIENT_STATUS = frozenset({408, 409, 429})
_STYLE_MISMATCH_STATUS = frozenset({400, 422})
_DETAIL_CHARS = 200


class HttpReranker:
    """Implements `ports.Reranker` against a Cohere / Jina / TEI ``/rerank`` endpoint.

    Args:
        url: the endpoint, e.g. ``http://127.0.0.1:8080/rerank``.
        model: model name sent in the Cohere body ("" sends none).
        api_key: bearer token, or None to send no ``Authorization`` header.
        timeout_s: connect and read timeout of each request, seconds.
        deadline_s: longest one request may take in total, seconds.
        api_style: ``auto``, ``cohere`` or ``tei``.
        max_batch: most texts per request.
        max_retries: retries of a transient failure per request.
        retry_initial_s: first backoff delay, seconds (doubles per retry, plus jitter).
        retry_max_s: longest backoff delay, seconds.

    Raises:
        ConfigurationError: ``url`` is not an http(s) URL.
    """

    def __init__(
        self,
        url: str,
        *,
        model: str = "",
        api_key: str | None = None,
        timeout_s: float = 30.0,
        deadline_s: float = 60.0,
        api_style: ApiStyle = "auto",
        max_batch: int = 32,
        max_retries: int = 2,
        retry_initial_s: float = 0.5,
        retry_max_s: float = 4.0,
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"not an http(s) URL: {url!r}", field="query.rerank.url"
            )
        self.url = url
        self.model = model
        self.timeout_s = timeout_s
        self.deadline_s = deadline_s
        self.max_batch = max(1, max_batch)
        self.max_retries = max_retries
        self.retry_initial_s = retry_initial_s
        self.retry_max_s = retry_max_s
        self._api_key = api_key
        self._style: ApiStyle = api_style
        self._ssl_context: ssl.SSLContext | None = None

    @classmethod
    def from_config(cls, config: RerankConfig) -> HttpReranker:
        """Build the adapter from the ``query.rerank`` section.

        Raises:
            ConfigurationError: ``url`` is not set or not an http(s) URL.
        """
        if not config.url:
            raise ConfigurationError(
                "a rerank endpoint URL is required for kind `http`", field="query.rerank.url"
            )
        key = config.api_key.get_secret_value() if config.api_key is not None else None
        return cls(
            config.url,
            model=config.model,
            api_key=key or None,
            timeout_s=config.timeout_s,
            deadline_s=config.deadline_s,
            api_style=config.api_style,
            max_batch=config.max_batch,
        )

    @property
    def model_id(self) -> str:
        """``http:<model>@<url>`` (``http:<url>`` without a model name)."""
        return f"http:{self.model}@{self.url}" if self.model else f"http:{self.url}"

    @property
    def api_style(self) -> ApiStyle:
        """The body sent: the configured style, or the one ``auto`` settled on."""
        return self._style

    async def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        """Score each text against ``query`` at the endpoint.

        Args:
            query: the question.
            texts: ``n`` passages.

        Returns:
            ``n`` scores in input order; higher is more relevant. An empty ``texts`` gives
            ``[]`` without a request.

        Raises:
            ModelError: authentication failed (``status_code`` 401/403, not transient), a
                request still failed after its retries (``transient`` set), the server
                refused the request, or its reply cannot be read (`ModelOutputError`).
        """
        if not texts:
            return []
        import httpx

        started = time.perf_counter()
        scores: list[float] = []
        headers = {"Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        async with httpx.AsyncClient(
            timeout=self.timeout_s, headers=headers, verify=self._ssl()
        ) as client:
            for first in range(0, len(texts), self.max_batch):
                batch = list(texts[first : first + self.max_batch])
                scores.extend(await self._rerank_batch(client, query, batch))
        record_usage(TokenUsage(latency_s=time.perf_counter() - started))
        return scores

    # ------------------------------------------------------------------ internals

    async def _rerank_batch(
        self, client: httpx.AsyncClient, query: str, batch: list[str]
    ) -> list[float]:
        retrying = AsyncRetrying(
            retry=retry_if_exception(lambda e: isinstance(e, ModelError) and e.transient),
            stop=stop_after_attempt(self.max_retries + 1),
            wait=backoff_wait(self.retry_initial_s, self.retry_max_s),
            before_sleep=self._log_retry,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._negotiate(client, query, batch)
        raise RuntimeError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    async def _negotiate(
        self, client: httpx.AsyncClient, query: str, batch: list[str]
    ) -> list[float]:
        """Send one batch in the settled style; in ``auto``, find the style first."""
        if self._style != "auto":
            return await self._post(client, self._style, query, batch)
        try:
            scores = await self._post(client, "cohere", query, batch)
        except ModelError as cohere_exc:
            if cohere_exc.status_code not in _STYLE_MISMATCH_STATUS:
                raise
            try:
                scores = await self._post(client, "tei", query, batch)
            except ModelError as tei_exc:
                if tei_exc.status_code not in _STYLE_MISMATCH_STATUS:
                    raise
                prefix = f"{self.url} answered "
                raise ModelError(
                    f"{self.url} refused both the Cohere body "
                    f"({str(cohere_exc).removeprefix(prefix)}) and the TEI body "
                    f"({str(tei_exc).removeprefix(prefix)}); set query.rerank.api_style",
                    status_code=tei_exc.status_code,
                ) from tei_exc
            logger.info("%s: the Cohere body was refused; using the TEI body", self.url)
            self._style = "tei"
            return scores
        self._style = "cohere"
        return scores

    async def _post(
        self, client: httpx.AsyncClient, style: ApiStyle, query: str, batch: list[str]
    ) -> list[float]:
        import httpx

        body: dict[str, object]
        if style == "tei":
            body = {"query": query, "texts": batch}
        else:
            body = {"query": query, "documents": batch, "top_n": len(batch)}
            if self.model:
                body = {"model": self.model, **body}
        try:
            response = await call_within(
                client.post(self.url, json=body),
                self.deadline_s,
                lambda: deadline_error(self.url, self.deadline_s, "query.rerank.deadline_s"),
            )
        except httpx.TimeoutException as exc:
            raise ModelError(
                f"rerank request to {self.url} timed out after {self.timeout_s:g} s",
                transient=True,
            ) from exc
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            raise ModelError(
                f"cannot reach {self.url}: {_one_line(str(exc)) or type(exc).__name__}",
                transient=True,
            ) from exc
        except httpx.HTTPError as exc:
            raise ModelError(f"rerank request to {self.url} failed: {exc}") from exc
        if response.status_code != 200:
            raise self._status_error(response)
        try:
            payload = json.loads(response.content)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ModelOutputError(
                f"{self.url} answered with a body that is not JSON: "
                f"{_one_line(response.text)!r}"
            ) from exc
        return parse_scores(payload, len(batch), source=self.url)

    def _status_error(self, response: httpx.Response) -> ModelError:
        status = response.status_code
        detail = _server_detail(response)
        if status in (401, 403):
            return ModelError(
                f"authentication failed for {self.url} (HTTP {status}): {detail}; check "
                "query.rerank.api_key",
                status_code=status,
            )
        transient = status in _TRANSIENT_STATUS or status >= 500
        return ModelError(
            f"{self.url} answered HTTP {status}: {detail}",
            transient=transient,
            status_code=status,
        )

    def _ssl(self) -> ssl.SSLContext:
        """One verified TLS context for all clients (building one reads the CA bundle)."""
        if self._ssl_context is None:
            import httpx

            self._ssl_context = httpx.create_ssl_context()
        return self._ssl_context

    def _log_retry(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        logger.info(
            "%s: attempt %d failed (%s); retrying in %.1fs",
            self.url,
            state.attempt_number,
            exc,
            state.upcoming_sleep,
        )


def parse_scores(payload: object, n: int, *, source: str) -> list[float]:
    """Read one score per text from a rerank reply of the TEI or the Cohere / Jina shape.

    Args:
        payload: the decoded JSON: ``[{"index": i, "score": s}, ...]`` (TEI) or
            ``{"results": [{"index": i, "relevance_score": s}, ...]}`` (Cohere, Jina);
            either score key is accepted in either shape.
        n: how many texts were sent.
        source: the endpoint, named in errors.

    Returns:
        ``n`` scores in input order. A text the reply leaves out gets the lowest returned
        score minus 1, so it ranks after every scored text.

    Raises:
        ModelOutputError: the reply has neither shape, an item has no integer ``index`` in
            ``[0, n)`` or no finite numeric score, or it scores no text at all.
    """
    items = payload.get("results") if isinstance(payload, dict) else payload
    if not isinstance(items, list):
        raise ModelOutputError(
            f"{source} answered neither a list of {{index, score}} (TEI) nor "
            f"{{results: [...]}} (Cohere/Jina): {_one_line(json.dumps(payload))!r}"
        )
    found: dict[int, float] = {}
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get("relevance_score", item.get("score")) if isinstance(item, dict) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n:
            raise ModelOutputError(
                f"{source} answered an item without a valid index for {n} texts: "
                f"{_one_line(json.dumps(item))!r}"
            )
        if not isinstance(score, int | float) or isinstance(score, bool) or not math.isfinite(
            score
        ):
            raise ModelOutputError(
                f"{source} answered an item without a finite score: "
                f"{_one_line(json.dumps(item))!r}"
            )
        found.setdefault(index, float(score))
    if n and not found:
        raise ModelOutputError(f"{source} answered no scores for {n} texts")
    if len(found) < n:
        logger.debug("%s scored %d of %d texts; the rest rank last", source, len(found), n)
    floor = min(found.values(), default=0.0) - 1.0
    return [found.get(i, floor) for i in range(n)]


def _server_detail(response: httpx.Response) -> str:
    """The server's error message, from the usual JSON keys or the raw text; one line."""
    try:
        body = json.loads(response.content)
    except (ValueError, UnicodeDecodeError):
        return _one_line(response.text) or response.reason_phrase
    if isinstance(body, dict):
        for key in ("message", "error", "detail"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("message")
            if isinstance(value, str) and value.strip():
                return _one_line(value)
    return _one_line(json.dumps(body))


def _one_line(text: str) -> str:
    """Collapse whitespace and cut to `_DETAIL_CHARS` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _DETAIL_CHARS else flat[: _DETAIL_CHARS - 1] + "…"
