"""`cluster_models`: the embedder and chat models of an indexing run on a Ray cluster.

What the composition root (`bootstrap.App.index_pipeline`) calls when
``indexing.cluster`` is set: it connects (before the run writes anything; the CLI and the
service connect first, off the event loop, with `connect_cluster`), and returns the
`RayEmbedder` and role models whose provider calls run on the cluster's actors. Everything
else of the run (the pipeline, the write-ahead records, the lease, the stores) is the local
run's, unchanged, in this process: the single writer.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass

from unified_kg_rag.adapters.llm.roles import build_role_models
from unified_kg_rag.config.llm import LLMConfig
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.llm.roles import RoleModels
from unified_kg_rag.ports import ChatModel, Embedder, RecordStore

from .chat import RayChatModel
from .cluster import RayCluster
from .embedder import RayEmbedder

__all__ = ["ClusterModels", "cluster_models", "connect_cluster"]


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


async def connect_cluster(config: UkrConfig, opened: list[object]) -> None:
    """Connect to ``indexing.cluster`` from a worker thread; `cluster_models` then uses it.

    Connecting takes seconds (a refused attempt about 30 s). On a thread of its own (a daemon
    thread: a process that stops does not wait for it) the event loop goes on: ``ukr serve``
    answers other requests meanwhile, a cancelled run (Ctrl-C, SIGTERM, a job's cancel)
    returns at once, and Ray leaves the process's SIGTERM handler alone (it replaces it only
    when ``ray.init`` runs on the main thread). Nothing happens when ``opened`` holds a
    connection already.

    Args:
        config: the effective configuration (``indexing.cluster`` set).
        opened: the app's opened models; the `RayCluster` is appended (the app closes it).

    Raises:
        ConfigurationError: as `RayCluster.connect`.
        asyncio.CancelledError: the caller was cancelled (the thread stops at its next wait
            to try again; a connection it completes later is closed).
    """
    if any(isinstance(held, (ClusterModels, RayCluster)) for held in opened):
        return
    indexing = config.indexing
    if indexing.cluster is None:
        raise ValueError("indexing.cluster is not set")
    address, workers, retries = indexing.cluster, indexing.cluster_workers, indexing.cluster_retries
    loop = asyncio.get_running_loop()
    done: asyncio.Future[RayCluster] = loop.create_future()
    cancelled = threading.Event()

    def connect() -> None:
        try:
            cluster = RayCluster.connect(address, workers=workers, retries=retries,
                                         cancelled=cancelled)  # fmt: skip
        except BaseException as exc:  # handed to the awaiting task
            _hand_over(loop, done, None, exc)
        else:
            _hand_over(loop, done, cluster, None)

    threading.Thread(target=connect, name="ukr-ray-connect", daemon=True).start()
    try:
        opened.append(await done)
    except asyncio.CancelledError:
        cancelled.set()
        raise


def _hand_over(loop: asyncio.AbstractEventLoop, done: asyncio.Future[RayCluster],
               cluster: RayCluster | None, exc: BaseException | None) -> None:  # fmt: skip
    """Settle ``done`` on its loop (from the connecting thread); close a late connection."""

    def settle() -> None:
        if done.cancelled():  # the caller gave up: nobody will close this connection
            if cluster is not None:
                _CLOSING.add(closing := asyncio.ensure_future(cluster.aclose()))
                closing.add_done_callback(_CLOSING.discard)
        elif cluster is not None:
            done.set_result(cluster)
        else:
            done.set_exception(exc if exc is not None else RuntimeError("no connection"))

    try:
        loop.call_soon_threadsafe(settle)
    except RuntimeError:  # the loop has closed (the process is stopping)
        if cluster is not None:
            with contextlib.suppress(Exception):
                cluster.close_now()


_CLOSING: set[asyncio.Task[None]] = set()


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
    connected = [held for held in opened if isinstance(held, RayCluster)]  # connect_cluster
    for held in connected:
        opened.remove(held)  # the ClusterModels below owns (and closes) it
    cluster = connected[0] if connected else RayCluster.connect(
        indexing.cluster, workers=indexing.cluster_workers, retries=indexing.cluster_retries
    )  # fmt: skip

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
