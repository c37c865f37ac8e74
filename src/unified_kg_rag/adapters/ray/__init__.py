"""Distributed indexing on Ray (extra ``ray``): model work on a cluster, one writer here.

- `cluster.RayCluster`: connect (``indexing.cluster``), start actor pools, retry dead workers;
- `embedder.RayEmbedder`: the `Embedder` port on actors that each hold the local model;
- `chat.RayChatModel`: provider calls (extraction, gleaning, summaries, reports) on actors;
- `workers`: the actor classes (plain classes: no Ray needed to import them);
- `compose.cluster_models`, `compose.connect_cluster`: what the composition root calls.

Nothing here imports ``ray`` at import time.
"""

from __future__ import annotations

from unified_kg_rag.adapters.ray.compose import ClusterModels, cluster_models, connect_cluster

__all__ = ["ClusterModels", "cluster_models", "connect_cluster"]
