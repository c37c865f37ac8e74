"""`RayEmbedder`: an `Embedder` whose batches run on Ray actors, each holding its own model.

Selected by `adapters.ray.compose` when ``indexing.cluster`` is set, in place of the
configured embedder, so every caller of the `Embedder` port (text units in
`ingestion.embed_steps`, graph items in `ingestion.graph.write`) sends its texts to the
cluster without knowing it. A call's texts are sorted by length (longest first, as
the local model batches them) and cut into slices of at most ``embeddings.batch_size`` texts
and at most a ``1/workers`` share; idle actors take the next slice (a pull queue, so a slow
node takes fewer); the rows come back in input order. Each actor builds the configured
provider (`adapters.ray.workers.EmbedWorker`), so the vectors are the local model's (equal to
float tolerance: a slice pads with other texts than a local batch would).

``model_id`` and ``dimension`` are the local embedder's (read from the model's files on the
driver, no weights loaded), so an index built on the cluster is the same index.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.config.models import EmbeddingsConfig
from unified_kg_rag.domain.llm.usage import record_usage
from unified_kg_rag.domain.models import TokenUsage
from unified_kg_rag.ports import Embedder
from unified_kg_rag.util.errors import EmbeddingModelError

from .cluster import RayCluster
from .workers import EmbedWorker

__all__ = ["RayEmbedder"]


class RayEmbedder:
    """Embeds on ``cluster``'s actors (`ports.Embedder`).

    Args:
        cluster: the connected cluster.
        config: the ``embeddings`` section (sent to every actor).
        local: the configured embedder on the driver: its ``model_id`` and ``dimension``.
    """

    def __init__(self, cluster: RayCluster, config: EmbeddingsConfig, local: Embedder) -> None:
        self._cluster = cluster
        self._config = config
        self._local = local
        self._actors: list[Any] = []
        self.texts_sent = 0
        """Texts sent to the actors so far (``embed_documents``)."""

    @property
    def model_id(self) -> str:
        """The configured embedder's model id."""
        return self._local.model_id

    @property
    def dimension(self) -> int:
        """The configured embedder's dimension ``d``."""
        return self._local.dimension

    def _pool(self) -> list[Any]:
        """The actors, started on first use: each reserves its share of the cluster's CPUs."""
        if not self._actors:
            cpus = self._cluster.cpus_per_worker()
            self._actors = self._cluster.pool(EmbedWorker, self._config, cpus=cpus,
                                              concurrency=1)  # fmt: skip
        return self._actors

    async def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` on the cluster; ``ndarray[n, d] float32`` in input order.

        Raises:
            EmbeddingModelError: the model failed on a worker, or a worker died more than
                ``indexing.cluster_retries`` times.
        """
        started = time.perf_counter()
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        actors = self._pool()
        self.texts_sent += len(texts)
        size = max(1, min(self._config.batch_size, math.ceil(len(texts) / len(actors))))
        # longest first, as the local model batches: similar lengths pad less
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        slices = [order[first : first + size] for first in range(0, len(order), size)]
        queue = iter(slices)

        async def drain(actor: Any) -> None:
            for rows in queue:  # the shared iterator hands each slice out once
                part = [texts[i] for i in rows]
                out[rows] = await self._cluster.call(actor.embed, part, error=EmbeddingModelError)

        await asyncio.gather(*(drain(a) for a in actors))
        record_usage(TokenUsage(embedded_texts=sum(1 for t in texts if t.strip()),
                                latency_s=time.perf_counter() - started))  # fmt: skip
        return out

    async def embed_query(self, text: str) -> NDArray[np.float32]:
        """Embed a query on one actor; ``ndarray[d] float32``."""
        actor = self._pool()[0]
        row: NDArray[np.float32] = await self._cluster.call(
            actor.embed_query, text, error=EmbeddingModelError
        )
        return row

    async def worker_pids(self) -> list[int]:
        """The process ids of the actors (tests kill one)."""
        return [await self._cluster.call(a.pid) for a in self._pool()]
