"""`cluster_models`: the embedder and chat models of an indexing run on a Ray cluster.

What the composition root (`bootstrap.App.index_pipeline`) calls when
``indexing.cluster`` is set: it connects (before the run writes anything), and returns the
`RayEmbedder` and role models whose provider calls run on the cluster's actors. Everything
else of the run (the pipeline, the write-ahead records, the lease, the stores) is the local
run's, unchanged, in this process: the single writer.
"""

from __future__ import annotations

from dataclasses import dataclass

from unified_kg_rag.adapters.llm.roles import build_role_models
from unified_kg_rag.config.llm import LLMConfig
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.llm.roles import RoleModels
from unified_kg_rag.ports import ChatModel, Embedder, RecordStore

from .chat import RayChatModel
from .cluster import RayCluster
from .embedder import RayEmbedder

__all__ = ["ClusterModels", "cluster_models"]


@dataclass
class ClusterModels:
    """The models of a run on a cluster, and the cluster (close it with ``aclose``)."""

    cluster: RayCluster
    embedder: RayEmbedder
    models: RoleModels[ChatModel]
    chats: list[RayChatModel]
    """The provider models placed on the cluster (one per distinct model)."""

    async def aclose(self) -> None:
        """Stop the run's actors and disconnect (when this run connected)."""
        await self.cluster.aclose()


def cluster_models(
    config: UkrConfig,
    local_embedder: Embedder,
    cache: RecordStore | None,
    opened: list[object],
) -> ClusterModels:
    """Connect to ``indexing.cluster`` and build the models whose work runs there.

    Args:
        config: the effective configuration (``indexing.cluster`` set).
        local_embedder: the configured embedder (its ``model_id`` and ``dimension``).
        cache: the response cache's store (stays on the driver), or None.
        opened: the app's opened models: the `ClusterModels` already there is returned;
            else the new one and the provider adapters built on the driver are appended
            (the app closes them).

    Raises:
        ConfigurationError: ray missing, a malformed address, or no cluster answers (one
            line naming ``--cluster`` / ``indexing.cluster``).
    """
    for held in opened:  # this app's runs share one connection and one set of actors
        if isinstance(held, ClusterModels):
            return held
    indexing = config.indexing
    if indexing.cluster is None:
        raise ValueError("indexing.cluster is not set")
    cluster = RayCluster.connect(
        indexing.cluster, workers=indexing.cluster_workers, retries=indexing.cluster_retries
    )

    chats: list[RayChatModel] = []

    def place(section: LLMConfig, raw: ChatModel) -> ChatModel:
        chats.append(RayChatModel(cluster, section, raw,
                                  calls_per_worker=indexing.cluster_worker_calls))  # fmt: skip
        return chats[-1]

    models = build_role_models(config.llm, cache, opened, place=place)
    embedder = RayEmbedder(cluster, config.embeddings, local_embedder)
    built = ClusterModels(cluster, embedder, models, chats)
    opened.append(built)  # the app closes it: actors stopped, connection closed
    return built
