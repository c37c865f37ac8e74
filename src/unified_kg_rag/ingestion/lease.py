"""Holding an index's single-writer lease for the length of a run (seed 000 §5.6).

`held_lease` takes the lease before the run's first registry read, renews it by a heartbeat
every sixth of its term, and gives it up when the run ends (also when it fails or is
interrupted, so the next run need not wait for it to lapse). It yields a `LeaseFence`, and
`fenced` wraps the run's store ports so that every write first checks it.

The fence fails once the lease is known lost (a renewal found it released or taken), and once
less than a third of the term is left since the last successful renewal was sent: a run that
was paused (SIGSTOP, a frozen VM, a long GC) or cut off from the store stops before its next
write, while its lease has not lapsed yet, instead of writing over the run that took the index
over. The heartbeat also cancels the run when a renewal finds the lease lost.

The error names the real cause first. A lease taken by another run raises `LeaseLostError`
saying who holds it. Renewals that failed because the store failed (a database that is down
reads ``PostgreSQL at ... is unreachable (connection refused)``) raise that store error's
kind, its message first, then what it meant for the lease. A write that finds the deadline
passed while a renewal is still waiting for the store waits for that renewal's outcome (at
most one term), so the cause is known before the run stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.models import (
    Collection,
    Community,
    CommunityReport,
    DocRecord,
    DocumentDelta,
    Entity,
    IndexRecord,
    Lease,
    Relationship,
    SearchHit,
    SearchMode,
    Subgraph,
)
from unified_kg_rag.ports import (
    DocRegistry,
    Filters,
    GraphStore,
    IndexStores,
    PreparesVectorSearch,
    RecordStore,
    SearchIndex,
)
from unified_kg_rag.util.errors import (
    LeaseLostError,
    StoreConnectionError,
    StoreError,
    StoreSchemaError,
    StoreTimeoutError,
)

__all__ = ["LeaseFence", "LeaseLostError", "fenced", "held_lease", "new_holder"]

logger = logging.getLogger(__name__)



def new_holder() -> str:
    """Return a holder name for this run: ``host:pid:run-id``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class LeaseFence:
    """What a run knows locally about its lease; `check` before every write.

    Args:
        index: the index name (for messages).
        holder: the run's holder name.
        ttl_s: the lease term, seconds.
    """

    def __init__(self, index: str, holder: str, ttl_s: float) -> None:
        self.index = index
        self.holder = holder
        self.ttl_s = ttl_s
        self.renewal_sent = time.monotonic()
        """When the last successful renewal was sent (monotonic seconds)."""
        self.lost: BaseException | None = None
        """Why the lease is lost for good: `LeaseLostError`, or the store error renewals met."""
        self.renewal_error: StoreError | None = None
        """The store error of the last renewal, when it failed (None after a success)."""
        self.renewal: asyncio.Future[None] | None = None
        """The renewal in flight, if any."""

    def check(self) -> None:
        """Raise unless the run may still write.

        Raises:
            LeaseLostError: the lease was found lost (another run holds it, or it was
                released), or less than a third of its term is left since the last successful
                renewal was sent and no renewal failed (the run was paused).
            StoreError: renewals failed because the store failed (its kind and message
                first: ``PostgreSQL at ... is unreachable (...)``) and the lease was not
                renewed for two thirds of its term.
        """
        if self.lost is not None:
            raise self.stopped(self.lost)
        since = time.monotonic() - self.renewal_sent
        if since <= self.ttl_s * 2 / 3:
            return
        if self.renewal_error is not None:
            raise self.stopped(self.renewal_error)
        raise LeaseLostError(
            f"index {self.index!r}: stopped, the write lease was last renewed {since:.0f} s "
            f"ago (term {self.ttl_s:g} s, indexing.lease_s); another run may own the index "
            "now. What was committed stays, the next run repairs the rest"
        )

    async def ready(self) -> None:
        """`check`, after waiting for a renewal in flight once the deadline has passed.

        A renewal that is still waiting for the store when the deadline passes is waited for
        (at most one term), so the error names its outcome (the store's error) instead of
        guessing.
        """
        renewal = self.renewal
        overdue = time.monotonic() - self.renewal_sent > self.ttl_s * 2 / 3
        if self.lost is None and overdue and renewal is not None and not renewal.done():
            await asyncio.wait({renewal}, timeout=self.ttl_s)
        self.check()

    def stopped(self, cause: BaseException) -> StoreError:
        """Return the error that stops the run because of ``cause``, the cause named first.

        Args:
            cause: a `LeaseLostError` (the lease is another run's, or was released), or the
                store error the renewals met.

        Returns:
            A `LeaseLostError` for a lost lease; for a store error, an error of its kind
            (`StoreConnectionError`, `StoreTimeoutError`...) whose message is the store's,
            then that the lease could not be renewed.
        """
        keep = " What was committed stays, the next run repairs the rest"
        if isinstance(cause, LeaseLostError):
            return LeaseLostError(
                f"index {self.index!r}: stopped because the write lease could not be renewed "
                f"({cause});{keep}"
            )
        since = time.monotonic() - self.renewal_sent
        kind = next((k for k in _STORE_KINDS if isinstance(cause, k)), StoreError)
        return kind(
            f"{cause}. Index {self.index!r}: stopped, its write lease could not be renewed "
            f"for {since:.0f} s (term {self.ttl_s:g} s, indexing.lease_s).{keep}"
        )


_STORE_KINDS: tuple[type[StoreError], ...] = (
    StoreConnectionError, StoreTimeoutError, StoreSchemaError,
)
"""Store error kinds a stopped run keeps (the cause's kind is what a caller acts on)."""


class _FencedSearchIndex:
    """A `SearchIndex` whose write methods wait on a `LeaseFence` first (reads pass through)."""

    def __init__(self, port: SearchIndex, fence: LeaseFence) -> None:
        self._port = port
        self._fence = fence

    async def bind_embedding(self, model_id: str, dimension: int) -> None:
        await self._fence.ready()
        await self._port.bind_embedding(model_id, dimension)

    async def embedding(self) -> tuple[str, int] | None:
        return await self._port.embedding()

    async def upsert(
        self,
        collection: Collection,
        records: Sequence[IndexRecord],
        vectors: NDArray[np.float32] | None = None,
    ) -> None:
        await self._fence.ready()
        await self._port.upsert(collection, records, vectors)

    async def delete(self, collection: Collection, ids: Sequence[str]) -> int:
        await self._fence.ready()
        return await self._port.delete(collection, ids)

    async def get(self, collection: Collection, ids: Sequence[str]) -> list[IndexRecord]:
        return await self._port.get(collection, ids)

    async def existing_ids(self, collection: Collection, ids: Sequence[str]) -> set[str]:
        return await self._port.existing_ids(collection, ids)

    async def vectors(
        self, collection: Collection, ids: Sequence[str]
    ) -> tuple[list[str], NDArray[np.float32]]:
        return await self._port.vectors(collection, ids)

    async def ids(self, collection: Collection) -> list[str]:
        return await self._port.ids(collection)

    async def search(
        self,
        collection: Collection,
        *,
        query_text: str | None = None,
        query_vector: NDArray[np.float32] | None = None,
        mode: SearchMode = SearchMode.HYBRID,
        filters: Filters | None = None,
        k: int = 10,
        candidate_k: int | None = None,
        lexical_weight: float = 1.0,
        vector_weight: float = 1.0,
        rrf_k: int = 60,
    ) -> list[SearchHit]:
        return await self._port.search(
            collection, query_text=query_text, query_vector=query_vector, mode=mode,
            filters=filters, k=k, candidate_k=candidate_k, lexical_weight=lexical_weight,
            vector_weight=vector_weight, rrf_k=rrf_k,
        )

    async def count(self, collection: Collection) -> int:
        return await self._port.count(collection)

    async def prepare_vector_search(self) -> list[str]:
        """Pass through to the port when it keeps an approximate index (it writes: fenced)."""
        if not isinstance(self._port, PreparesVectorSearch):
            return []
        await self._fence.ready()
        return await self._port.prepare_vector_search()



class _FencedGraphStore:
    """A `GraphStore` whose write methods wait on a `LeaseFence` first (reads pass through)."""

    def __init__(self, port: GraphStore, fence: LeaseFence) -> None:
        self._port = port
        self._fence = fence

    async def upsert_entities(self, entities: Sequence[Entity]) -> None:
        await self._fence.ready()
        await self._port.upsert_entities(entities)

    async def upsert_relationships(self, relationships: Sequence[Relationship]) -> None:
        await self._fence.ready()
        await self._port.upsert_relationships(relationships)

    async def delete_entities(self, ids: Sequence[str]) -> int:
        await self._fence.ready()
        return await self._port.delete_entities(ids)

    async def delete_relationships(self, ids: Sequence[str]) -> int:
        await self._fence.ready()
        return await self._port.delete_relationships(ids)

    async def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        return await self._port.get_entities(ids)

    async def get_relationships(self, ids: Sequence[str]) -> list[Relationship]:
        return await self._port.get_relationships(ids)

    async def neighbourhood(
        self,
        seed_ids: Sequence[str],
        *,
        hops: int,
        max_entities: int,
    ) -> Subgraph:
        return await self._port.neighbourhood(seed_ids, hops=hops, max_entities=max_entities)

    async def edges_within(self, entity_ids: Sequence[str]) -> list[Relationship]:
        return await self._port.edges_within(entity_ids)

    async def citing(self, text_unit_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        return await self._port.citing(text_unit_ids)

    async def upsert_communities(self, communities: Sequence[Community]) -> None:
        await self._fence.ready()
        await self._port.upsert_communities(communities)

    async def get_communities(self, level: int | None = None) -> list[Community]:
        return await self._port.get_communities(level)

    async def communities_of(self, entity_ids: Sequence[str]) -> list[Community]:
        return await self._port.communities_of(entity_ids)

    async def delete_communities(self, ids: Sequence[str]) -> int:
        await self._fence.ready()
        return await self._port.delete_communities(ids)

    async def upsert_reports(self, reports: Sequence[CommunityReport]) -> None:
        await self._fence.ready()
        await self._port.upsert_reports(reports)

    async def get_reports(self, community_ids: Sequence[str]) -> list[CommunityReport]:
        return await self._port.get_reports(community_ids)

    async def counts(self) -> dict[str, int]:
        return await self._port.counts()



class _FencedDocRegistry:
    """A `DocRegistry` whose write methods wait on a `LeaseFence` first (reads pass through)."""

    def __init__(self, port: DocRegistry, fence: LeaseFence) -> None:
        self._port = port
        self._fence = fence

    async def get(self, document_ids: Sequence[str]) -> dict[str, DocRecord]:
        return await self._port.get(document_ids)

    async def list_records(self, source_scope: str | None = None) -> list[DocRecord]:
        return await self._port.list_records(source_scope)

    async def diff(self, source_scope: str, current: Mapping[str, str]) -> DocumentDelta:
        return await self._port.diff(source_scope, current)

    async def put(self, records: Sequence[DocRecord]) -> None:
        await self._fence.ready()
        await self._port.put(records)

    async def delete(self, document_ids: Sequence[str]) -> int:
        await self._fence.ready()
        return await self._port.delete(document_ids)

    async def status_counts(self) -> dict[str, int]:
        return await self._port.status_counts()

    async def acquire_lease(self, holder: str, ttl_s: float) -> Lease:
        return await self._port.acquire_lease(holder, ttl_s)

    async def renew_lease(self, holder: str, ttl_s: float) -> Lease:
        return await self._port.renew_lease(holder, ttl_s)

    async def release_lease(self, holder: str) -> bool:
        return await self._port.release_lease(holder)

    async def get_lease(self) -> Lease | None:
        return await self._port.get_lease()



class _FencedRecordStore:
    """A `RecordStore` whose write methods wait on a `LeaseFence` first (reads pass through)."""

    def __init__(self, port: RecordStore, fence: LeaseFence) -> None:
        self._port = port
        self._fence = fence

    async def get(self, namespace: str, key: str) -> str | None:
        return await self._port.get(namespace, key)

    async def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, str]:
        return await self._port.get_many(namespace, keys)

    async def put(self, namespace: str, key: str, value: str) -> None:
        await self._fence.ready()
        await self._port.put(namespace, key, value)

    async def put_many(self, namespace: str, items: Mapping[str, str]) -> None:
        await self._fence.ready()
        await self._port.put_many(namespace, items)

    async def delete(self, namespace: str, keys: Sequence[str]) -> int:
        await self._fence.ready()
        return await self._port.delete(namespace, keys)

    async def count(self, namespace: str) -> int:
        return await self._port.count(namespace)

    async def keys(self, namespace: str) -> list[str]:
        return await self._port.keys(namespace)


def fenced(stores: IndexStores, fence: LeaseFence) -> IndexStores:
    """Return ``stores`` with every write method waiting on ``fence`` first.

    Each port is wrapped by a typed class that spells out every method of its protocol, so
    a checker sees the wrappers satisfy the ports and a reader can follow each call; a
    method added to a port protocol must be added here too (mypy fails until it is).
    """
    return IndexStores(
        name=stores.name,
        search=_FencedSearchIndex(stores.search, fence),
        graph=_FencedGraphStore(stores.graph, fence),
        registry=_FencedDocRegistry(stores.registry, fence),
        records=_FencedRecordStore(stores.records, fence),
    )


@contextlib.asynccontextmanager
async def held_lease(
    registry: DocRegistry, index: str, *, ttl_s: float, holder: str | None = None
) -> AsyncIterator[LeaseFence]:
    """Hold ``index``'s lease while the body runs; yield its `LeaseFence`.

    Args:
        registry: the index's doc registry.
        index: the index name (for messages).
        ttl_s: the lease term, seconds; renewed every ``ttl_s / 6``.
        holder: the holder name (default: `new_holder`).

    Raises:
        BuildInProgress: another run holds the lease (raised before the body starts).
        LeaseLostError: the lease was lost (released, or taken by another run); the body was
            cancelled or its write refused.
        StoreError: renewals failed because the store did (an unreachable server raises
            `StoreConnectionError`), for two thirds of the term; the body was cancelled or its
            write refused. The store's message comes first (`LeaseFence.stopped`).
    """
    holder = holder or new_holder()
    sent = time.monotonic()
    await registry.acquire_lease(holder, ttl_s)
    fence = LeaseFence(index, holder, ttl_s)
    fence.renewal_sent = sent
    body = asyncio.current_task()

    async def renew() -> None:
        sent = time.monotonic()
        try:
            await registry.renew_lease(holder, ttl_s)
        except LeaseLostError as exc:
            fence.lost = exc
            raise
        except StoreError as exc:
            fence.renewal_error = exc
            raise
        fence.renewal_sent, fence.renewal_error = sent, None

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(ttl_s / 6)
            fence.renewal = asyncio.ensure_future(renew())
            try:
                await fence.renewal
                continue
            except LeaseLostError:
                pass
            except StoreError as exc:
                if time.monotonic() - fence.renewal_sent < ttl_s * 2 / 3:
                    logger.warning("index %r: lease renewal failed, will retry: %s", index, exc)
                    continue
                fence.lost = exc
            if body is not None:
                body.cancel()
            return

    beat = asyncio.create_task(heartbeat(), name=f"ukr-lease-{index}")
    try:
        yield fence
    except asyncio.CancelledError:
        if fence.lost is not None:
            raise fence.stopped(fence.lost) from fence.lost
        raise
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
        if fence.lost is None:
            try:
                await asyncio.shield(registry.release_lease(holder))
            except StoreError as exc:
                logger.warning("index %r: could not release the write lease (it lapses in "
                               "%.0f s): %s", index, ttl_s, exc)
