"""`RayChatModel`: a provider model whose calls run on Ray actors.

It stands where the provider's adapter stands in the wrapper stack
(`adapters.llm.middleware`): the driver keeps the response cache (in the index's record
store), retries, the concurrency bound and metering, and each call that reaches the provider
is sent to the actor with the fewest calls in flight. Each actor builds the same provider
from the same ``llm`` section (`adapters.ray.workers.ChatWorker`) and runs up to
``indexing.cluster_worker_calls`` calls at once. Extraction, gleaning, claims, summaries and
reports therefore run exactly as in a local run (same records, same failure judging, same
cache keys), with their HTTP requests made on the workers.

The API key is resolved on the driver and sent to the actors as a `SecretStr` (Ray pickles
it; it is never logged). Streams (queries, not indexing) run on the driver's own adapter.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from pydantic import SecretStr

from unified_kg_rag.adapters.llm.openai_client import resolve_api_key
from unified_kg_rag.config.llm import LLMConfig
from unified_kg_rag.domain.models import Completion, Message
from unified_kg_rag.ports import ChatModel

from .cluster import RayCluster
from .workers import ChatWorker

__all__ = ["RayChatModel", "worker_section"]


def worker_section(section: LLMConfig) -> LLMConfig:
    """Return ``section`` with the OpenAI API key resolved here (workers lack our environment).

    Other providers go as configured (Bedrock reads the worker's AWS credentials).
    """
    if section.kind != "openai":
        return section
    key = resolve_api_key(section.openai.api_key, section.openai.api_key_env)
    return section.model_copy(
        update={"openai": section.openai.model_copy(update={"api_key": SecretStr(key)})}
    )


class RayChatModel:
    """`ports.ChatModel` whose ``complete`` runs on ``cluster``'s actors.

    Args:
        cluster: the connected cluster.
        section: the model's ``llm`` section.
        local: the provider's adapter on the driver: ``model_id`` and ``stream``.
        calls_per_worker: calls an actor runs at once (``indexing.cluster_worker_calls``).
    """

    def __init__(
        self, cluster: RayCluster, section: LLMConfig, local: ChatModel, *, calls_per_worker: int
    ) -> None:
        self._cluster = cluster
        self._section = worker_section(section)
        self._local = local
        self._calls = calls_per_worker
        self._actors: list[Any] = []
        self._in_flight: list[int] = []
        self.calls_sent = 0
        """Calls sent to the actors so far (``complete``)."""

    @property
    def model_id(self) -> str:
        """The provider's model id (the cache and the extraction records key on it)."""
        return self._local.model_id

    def _pool(self) -> list[Any]:
        if not self._actors:  # I/O-bound: the actors reserve no CPU
            self._actors = self._cluster.pool(ChatWorker, self._section, cpus=0.0,
                                              concurrency=self._calls)  # fmt: skip
            self._in_flight = [0] * len(self._actors)
        return self._actors

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        json_schema: Mapping[str, object] | None = None,
    ) -> Completion:
        """Return the provider's reply, asked on the least-busy actor (`ports.ChatModel`).

        Raises:
            ModelError: the provider's error on the worker, or the worker died more than
                ``indexing.cluster_retries`` times.
        """
        actors = self._pool()
        pick = min(range(len(actors)), key=self._in_flight.__getitem__)
        options = {"max_tokens": max_tokens, "temperature": temperature,
                   "stop": None if stop is None else list(stop),
                   "json_schema": None if json_schema is None else dict(json_schema)}  # fmt: skip
        self._in_flight[pick] += 1
        self.calls_sent += 1
        try:
            reply: Completion = await self._cluster.call(
                actors[pick].complete, list(messages), options
            )
        finally:
            self._in_flight[pick] -= 1
        return reply

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> AsyncIterator[str]:
        """Stream on the driver's own adapter (indexing never streams)."""
        return self._local.stream(messages, max_tokens=max_tokens, temperature=temperature,
                                  stop=stop)  # fmt: skip

    async def worker_pids(self) -> list[int]:
        """The process ids of the actors (tests kill one)."""
        return [await self._cluster.call(a.pid) for a in self._pool()]
