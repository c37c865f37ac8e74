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
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar, cast

from unified_kg_rag.ports import DocRegistry, GraphStore, IndexStores, RecordStore, SearchIndex
from unified_kg_rag.util.errors import LeaseLostError, StoreError

__all__ = ["LeaseFence", "LeaseLostError", "fenced", "held_lease", "new_holder"]

logger = logging.getLogger(__name__)

P = TypeVar("P")

_WRITES = frozenset({
    "bind_embedding", "upsert", "delete", "upsert_entities", "upsert_relationships",
    "delete_entities", "delete_relationships", "upsert_communities", "delete_communities",
    "upsert_reports", "put", "put_many",
})
"""Port methods that write (checked by the fence); every other method passes through."""


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

    def check(self) -> None:
        """Raise unless the run may still write.

        Raises:
            LeaseLostError: the lease was found lost, or less than a third of its term is left
                since the last successful renewal was sent.
        """
        if self.lost is not None:
            raise LeaseLostError(
                f"index {self.index!r}: stopped, the write lease was lost ({self.lost}); what "
                "was committed stays, the next run repairs the rest"
            )
        since = time.monotonic() - self.renewal_sent
        if since > self.ttl_s * 2 / 3:
            raise LeaseLostError(
                f"index {self.index!r}: stopped, the write lease was last renewed {since:.0f} s "
                f"ago (term {self.ttl_s:g} s, indexing.lease_s); another run may own the index "
                "now. What was committed stays, the next run repairs the rest"
            )


class _Fenced:
    """A port whose write methods check a `LeaseFence` before running."""

    def __init__(self, port: object, fence: LeaseFence) -> None:
        self._port = port
        self._fence = fence

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._port, name)
        if name not in _WRITES:
            return attribute
        method = cast(Callable[..., Awaitable[Any]], attribute)

        async def checked(*args: Any, **kwargs: Any) -> Any:
            self._fence.check()
            return await method(*args, **kwargs)

        return checked


def fenced(stores: IndexStores, fence: LeaseFence) -> IndexStores:
    """Return ``stores`` with every write method checking ``fence`` first."""
    return IndexStores(
        name=stores.name,
        search=cast(SearchIndex, _Fenced(stores.search, fence)),
        graph=cast(GraphStore, _Fenced(stores.graph, fence)),
        registry=cast(DocRegistry, _Fenced(stores.registry, fence)),
        records=cast(RecordStore, _Fenced(stores.records, fence)),
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
        LeaseLostError: the lease was lost; the body was cancelled or its write refused.
    """
    holder = holder or new_holder()
    sent = time.monotonic()
    await registry.acquire_lease(holder, ttl_s)
    fence = LeaseFence(index, holder, ttl_s)
    fence.renewal_sent = sent
    body = asyncio.current_task()

    async def heartbeat() -> None:
        while True:
            await asyncio.sleep(ttl_s / 6)
            sent = time.monotonic()
            try:
                await registry.renew_lease(holder, ttl_s)
                fence.renewal_sent = sent
                continue
            except LeaseLostError as exc:
                fence.lost = exc
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
            raise LeaseLostError(
                f"index {index!r}: stopped because the write lease could not be renewed "
                f"({fence.lost}); what was committed stays, the next run repairs the rest"
            ) from fence.lost
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
