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
    answers other requests meanwhile, a cancelled caller (Ctrl-C, SIGTERM, a job's cancel)
    returns at once, and Ray leaves the process's SIGTERM handler alone (it replaces it only
    when ``ray.init`` runs on the main thread).

    One connection per app: while one is being made, later callers wait for that one (a
    `_Connecting` placeholder in ``opened``); the connection joins ``opened`` on the event
    loop's thread as soon as it is made, even when every caller has gone (the app closes
    it), so a cancel never leaks it nor shuts down a connection another run uses. Closing
    the app while it connects stops the thread at its next wait to try again.

    Args:
        config: the effective configuration (``indexing.cluster`` set).
        opened: the app's opened models; the `RayCluster` is appended (the app closes it).

    Raises:
        ConfigurationError: as `RayCluster.connect` (every waiting caller gets it).
        asyncio.CancelledError: the caller was cancelled (the connection goes on).
    """
    for held in opened:
        if isinstance(held, (ClusterModels, RayCluster)):
            return
        if isinstance(held, _Connecting):
            await asyncio.shield(held.done)
            return
    indexing = config.indexing
    if indexing.cluster is None:
        raise ValueError("indexing.cluster is not set")
    connecting = _Connecting(asyncio.get_running_loop(), opened)
    opened.append(connecting)
    address, workers, retries = indexing.cluster, indexing.cluster_workers, indexing.cluster_retries

    def connect() -> None:
        try:
            cluster = RayCluster.connect(address, workers=workers, retries=retries,
                                         cancelled=connecting.closed)  # fmt: skip
        except Exception as exc:  # every waiting caller gets it
            connecting.hand_over(None, exc)
        except BaseException as exc:  # CancelledError (the app closed), or worse: not raised
            connecting.hand_over(None, RuntimeError(f"connecting stopped: {exc!r}"))
        else:
            connecting.hand_over(cluster, None)

    threading.Thread(target=connect, name="ukr-ray-connect", daemon=True).start()
    await asyncio.shield(connecting.done)


class _Connecting:
    """The connection being made for one app (a placeholder in its ``opened`` list)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, opened: list[object]) -> None:
        self.loop = loop
        self.opened = opened
        self.done: asyncio.Future[None] = loop.create_future()
        self.closed = threading.Event()  # set by `aclose`: stop trying, close a late connection

    def hand_over(self, cluster: RayCluster | None, exc: Exception | None) -> None:
        """From the connecting thread: settle on the loop's thread (`_settle`).

        ``cluster`` takes this placeholder's place in ``opened`` and the callers wake, or
        they get ``exc``.
        """
        try:
            self.loop.call_soon_threadsafe(self._settle, cluster, exc)
        except RuntimeError:  # the loop has closed (the process is stopping)
            if cluster is not None:
                with contextlib.suppress(Exception):
                    cluster.close_now()

    def _settle(self, cluster: RayCluster | None, exc: Exception | None) -> None:
        if self in self.opened:  # not after the app closed (it empties the list)
            self.opened.remove(self)
        if cluster is None:  # callers wait on `done` through shield: it is never cancelled
            self.done.set_exception(exc or RuntimeError("no connection was made"))
            self.done.exception()  # retrieved: no "never retrieved" warning without waiters
        elif self.closed.is_set():  # the app closed meanwhile: nobody else will close it
            cluster.close_now()
            self.done.set_result(None)
        else:
            self.opened.append(cluster)
            self.done.set_result(None)

    async def aclose(self) -> None:
        """The app closes: stop the thread at its next wait; close what it makes later."""
        self.closed.set()


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
    cluster = next((held for held in opened if isinstance(held, RayCluster)), None)
    if cluster is not None:  # made by connect_cluster (one per app)
        opened.remove(cluster)  # the ClusterModels below owns (and closes) it
    else:
        cluster = RayCluster.connect(indexing.cluster, workers=indexing.cluster_workers,
                                     retries=indexing.cluster_retries)  # fmt: skip

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
