"""`BedrockChatModel`: an Amazon Bedrock chat model through the Converse API (boto3).

One ``converse`` (or ``converse_stream``) request per call: botocore's own retries are off,
because the middleware stack of `adapters.llm.middleware` retries transient failures and
caches replies. boto3 calls block, so they run in daemon threads (`util.threads`); a stream
is read event by event in a thread, so deltas arrive in order and the reader never runs ahead
of the consumer. ``timeout_s`` bounds connecting and each read (botocore); ``deadline_s``
bounds the whole call (`adapters.deadlines`): at the deadline the awaiting side returns (a
stream's event stream is closed) and the thread, which cannot be killed, ends in the
background without holding up the event loop or the process's exit. The client is built
(boto3 imported, credentials resolved) before a call's deadline starts: that one-time setup
is no part of the call.

Messages: ``system`` messages become the request's ``system`` blocks; consecutive messages of
one role are sent as one message with several text blocks (Converse wants user and assistant
turns to alternate). ``json_schema`` is not sent: the prompts state their output format.

boto3 is imported at the first call (install the ``aws`` extra). API reference:
https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_Converse.html
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from functools import partial
from typing import Any

from unified_kg_rag.adapters.deadlines import call_within, deadline_error, stream_within
from unified_kg_rag.config.models import BedrockChatConfig
from unified_kg_rag.domain.llm.finish import STREAM_UNFINISHED, record_stream_finish
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.util.aio import aclose_iterator
from unified_kg_rag.util.errors import ConfigurationError, ModelError
from unified_kg_rag.util.threads import in_daemon_thread

__all__ = ["BedrockChatModel", "finish_reason", "translate_bedrock_error"]

logger = logging.getLogger(__name__)

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "content_filtered": "content_filter",
    "guardrail_intervened": "content_filter",
    "tool_use": "tool_calls",
}
_END = object()

_TRANSIENT_CODES = frozenset({
    "throttlingexception", "toomanyrequestsexception", "serviceunavailableexception",
    "internalserverexception", "internalfailure", "modeltimeoutexception",
    "modelnotreadyexception", "modelstreamerrorexception", "requesttimeout",
    "requesttimeoutexception",
})
_AUTH_CODES = frozenset({
    "accessdeniedexception", "unrecognizedclientexception", "expiredtokenexception",
    "invalidsignatureexception", "signaturedoesnotmatch", "incompletesignature",
    "missingauthenticationtokenexception", "invalidclienttokenid",
})
_CODE_STATUS = {"throttlingexception": 429, "serviceunavailableexception": 503,
                "internalserverexception": 500, "validationexception": 400,
                "modelstreamerrorexception": 424}


def finish_reason(stop_reason: str | None) -> str:
    """Map a Converse ``stopReason`` to the OpenAI-style finish reason of `Completion`.

    ``end_turn``/``stop_sequence`` → ``stop``, ``max_tokens`` → ``length``, guardrail and
    content filters → ``content_filter``; an unknown reason is passed through, None → ``stop``.
    """
    if not stop_reason:
        return "stop"
    return _FINISH_REASONS.get(stop_reason, stop_reason)


class BedrockChatModel:
    """A `ports.ChatModel` for Amazon Bedrock's Converse API.

    Args:
        config: the ``llm.bedrock`` section. Credentials come from ``profile`` or boto3's
            default chain (environment, shared files, instance role); nothing is read until
            the first call.

    Raises:
        ConfigurationError: boto3 is not installed, the profile does not exist or no region
            is configured (on first call).
    """

    def __init__(self, config: BedrockChatConfig) -> None:
        self.config = config
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def model_id(self) -> str:
        """``bedrock:<modelId>``."""
        return f"bedrock:{self.config.model_id}"

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Send one ``converse`` request and return the reply's text blocks joined.

        ``max_tokens`` and ``temperature`` default to the config's values; ``json_schema``
        is ignored (see the module docstring).

        Raises:
            ModelError: the request failed (``transient`` for throttling, 5xx, timeouts,
                dropped connections and a call past ``deadline_s``; not for access,
                credential and validation errors).
            ConfigurationError: boto3 is missing or the AWS profile/region is unusable.
        """
        params = self._params(messages, max_tokens, temperature, stop)
        await self._ready()
        response = await call_within(
            in_daemon_thread(partial(self._call, "converse", params)),
            self.config.deadline_s,
            self._deadline_error,
        )
        content = (response.get("output", {}).get("message") or {}).get("content") or []
        text = "".join(block["text"] for block in content if isinstance(block.get("text"), str))
        usage = response.get("usage") or {}
        return Completion(
            text=text,
            finish_reason=finish_reason(response.get("stopReason")),
            input_tokens=int(usage.get("inputTokens") or 0),
            output_tokens=int(usage.get("outputTokens") or 0),
        )

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Yield the reply's text deltas in order (``converse_stream``; empty deltas skipped).

        The ``messageStop`` event's reason is recorded in the caller's
        `domain.llm.finish.stream_finish` scope (``deadline`` when ``deadline_s`` passed
        after the first delta: the reply ends there).

        Raises:
            ModelError: the request or the stream failed (an exception event in the stream
                is translated like an HTTP error of the same code), or ``deadline_s`` passed
                before the first delta (transient).
            ConfigurationError: boto3 is missing or the AWS profile/region is unusable.
        """
        params = self._params(messages, max_tokens, temperature, stop)
        return self._stream(params)

    async def _stream(self, params: dict[str, Any]) -> AsyncIterator[str]:
        """Build the client, then stream within the deadline (the setup is not the call's)."""
        await self._ready()
        pieces = stream_within(
            self._deltas(params), self.config.deadline_s, self._deadline_error, within_query=True
        )
        try:
            async for piece in pieces:
                yield piece
        finally:
            await aclose_iterator(pieces)

    async def _ready(self) -> None:
        """Build the client in a thread (boto3's import, credentials) unless built already."""
        if self._client is None:
            await in_daemon_thread(self._get_client)

    async def _deltas(self, params: dict[str, Any]) -> AsyncIterator[str]:
        """Stream one request; yield its text deltas, record its stop reason."""
        response = await in_daemon_thread(partial(self._call, "converse_stream", params))
        events = response["stream"]
        iterator = iter(events)
        finished = False
        try:
            while True:
                event = await in_daemon_thread(partial(self._next_event, iterator))
                if event is _END:
                    if not finished:  # no messageStop: the reply may be cut
                        record_stream_finish(STREAM_UNFINISHED)
                    break
                stopped = event.get("messageStop")
                if isinstance(stopped, dict):
                    finished = True
                    record_stream_finish(finish_reason(stopped.get("stopReason")))
                delta = event.get("contentBlockDelta", {}).get("delta", {})
                text = delta.get("text")
                if text:
                    yield text
        finally:
            _release(events)

    # ------------------------------------------------------------------ internals

    def _params(
        self,
        messages: Sequence[Message],
        max_tokens: int | None,
        temperature: float | None,
        stop: Sequence[str] | None,
    ) -> dict[str, Any]:
        system = [{"text": m.content} for m in messages if m.role == "system" and m.content]
        turns: list[dict[str, Any]] = []
        for message in messages:
            if message.role == "system":
                continue
            role = "assistant" if message.role == "assistant" else "user"
            block = {"text": message.content or " "}  # Converse rejects empty text blocks
            if turns and turns[-1]["role"] == role:
                turns[-1]["content"].append(block)
            else:
                turns.append({"role": role, "content": [block]})
        inference: dict[str, Any] = {
            "maxTokens": max_tokens if max_tokens is not None else self.config.max_tokens,
            "temperature": temperature if temperature is not None else self.config.temperature,
        }
        if stop:
            inference["stopSequences"] = list(stop)
        params: dict[str, Any] = {
            "modelId": self.config.model_id,
            "messages": turns,
            "inferenceConfig": inference,
        }
        if system:
            params["system"] = system
        return params

    def _call(self, operation: str, params: dict[str, Any]) -> Any:
        """Run one boto3 operation (in a worker thread), translating its errors."""
        client = self._get_client()
        try:
            return getattr(client, operation)(**params)
        except Exception as exc:
            raise self._translate(exc) from exc

    def _next_event(self, iterator: Iterator[Any]) -> Any:
        """Read the next stream event (in a worker thread); `_END` after the last."""
        try:
            return next(iterator, _END)
        except Exception as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: Exception) -> ModelError | ConfigurationError:
        return translate_bedrock_error(exc, model_id=self.config.model_id)

    def _deadline_error(self) -> ModelError:
        return deadline_error(self.model_id, self.config.deadline_s, "llm.bedrock.deadline_s")

    def _get_client(self) -> Any:
        """Build the ``bedrock-runtime`` client once (boto3 clients are thread-safe)."""
        with self._lock:
            if self._client is None:
                self._client = _make_client(self.config)
            return self._client


def _release(events: Any) -> None:
    """Close an event stream without blocking the loop, even while a thread reads it.

    Closing takes the response's buffer lock, which a read blocked in a worker thread holds
    (a server trickling its reply): the socket is shut down first (urllib3's
    ``HTTPResponse.shutdown``, which wakes that read), then the stream is closed in a daemon
    thread.
    """
    shutdown = getattr(getattr(events, "_raw_stream", None), "shutdown", None)
    if callable(shutdown):
        with contextlib.suppress(Exception):  # already released, or an older urllib3
            shutdown()

    def close() -> None:
        with contextlib.suppress(Exception):
            events.close()

    threading.Thread(target=close, name="ukr-bedrock-close", daemon=True).start()


def _make_client(config: BedrockChatConfig) -> Any:
    try:
        import boto3  # type: ignore[import-untyped, unused-ignore]
        from botocore.config import Config  # type: ignore[import-untyped, unused-ignore]
    except ImportError as exc:
        raise ConfigurationError(
            "the `boto3` package is not installed; install the `aws` extra "
            "(pip install 'unified-kg-rag[aws]')",
            field="llm.kind",
        ) from exc
    try:
        session = boto3.session.Session(profile_name=config.profile, region_name=config.region)
        return session.client(
            "bedrock-runtime",
            endpoint_url=config.endpoint_url,
            config=Config(
                # total_max_attempts counts the first try: 1 means botocore never retries
                # (``max_attempts: 1`` would still allow one retry).
                retries={"total_max_attempts": 1, "mode": "standard"},
                connect_timeout=config.timeout_s,
                read_timeout=config.timeout_s,
            ),
        )
    except Exception as exc:
        raise translate_bedrock_error(exc, model_id=config.model_id) from exc


def translate_bedrock_error(
    exc: BaseException, *, model_id: str
) -> ModelError | ConfigurationError:
    """Translate a boto3/botocore exception into the project's error tree.

    - throttling, 408/429/5xx, model timeouts, timeouts and dropped connections: transient
      `ModelError`;
    - access denied, unknown/expired credentials, bad signatures (HTTP 401/403) and missing
      credentials: non-transient `ModelError`, "authentication failed for bedrock ...";
    - ``ValidationException`` and any other 4xx: non-transient `ModelError` with the message;
    - an unknown profile or no region: `ConfigurationError` naming the field.

    Args:
        exc: what boto3 raised (``ClientError`` and its ``EventStreamError`` included).
        model_id: the Bedrock model id called, named in the message.

    Returns:
        The error to raise (``raise translate_bedrock_error(e, ...) from e``).
    """
    from botocore import exceptions as bce  # type: ignore[import-untyped, unused-ignore]

    where = f"bedrock model {model_id}"
    if isinstance(exc, bce.ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code") or "Unknown")
        message = str(error.get("Message") or exc)
        key = code.lower()
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if isinstance(exc, bce.EventStreamError) or not isinstance(status, int):
            status = _CODE_STATUS.get(key, status if isinstance(status, int) else None)
        if key in _AUTH_CODES or status in (401, 403):
            return ModelError(
                f"authentication failed for {where} ({code}): {message}; check the AWS "
                "credentials (`llm.bedrock.profile`, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, "
                "AWS_SESSION_TOKEN) and the model access granted to them",
                transient=False,
                status_code=status,
            )
        transient = key in _TRANSIENT_CODES or (
            status is not None and (status in (408, 429) or status >= 500)
        )
        return ModelError(
            f"{where} failed ({code}, HTTP {status}): {message}",
            transient=transient,
            status_code=status,
        )
    if isinstance(exc, bce.ConnectionError | bce.HTTPClientError):
        return ModelError(f"cannot reach {where}: {exc}", transient=True)
    if isinstance(exc, bce.NoCredentialsError | bce.PartialCredentialsError
                  | bce.CredentialRetrievalError):
        return ModelError(
            f"authentication failed for {where}: {exc}; configure AWS credentials "
            "(`llm.bedrock.profile` or the AWS_* environment variables)",
            transient=False,
        )
    if isinstance(exc, bce.ProfileNotFound):
        return ConfigurationError(str(exc), field="llm.bedrock.profile")
    if isinstance(exc, bce.NoRegionError):
        return ConfigurationError(
            "no AWS region: set `llm.bedrock.region` or AWS_REGION", field="llm.bedrock.region"
        )
    return ModelError(f"call to {where} failed: {exc}", transient=False)
