"""Holding an index's single-writer lease for the length of a run (seed 000 §5.6).

`held_lease` takes the lease before the run's first registry read, renews it by a heartbeat
every sixth of its term, and gives it up when the run ends (also when it fails or is
interrupted, so the next run need not wait for it to lapse). If renewal fails the run is
stopped while it still holds the lease: at once when another run has taken the index over,
or once less than a third of the term is left since the last successful renewal when the
store cannot be reached.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator

from unified_kg_rag.ports import DocRegistry
from unified_kg_rag.util.errors import IndexBusyError, StoreError

__all__ = ["LeaseLostError", "held_lease", "new_holder"]

logger = logging.getLogger(__name__)


class LeaseLostError(StoreError):
    """The run could not renew its lease and was stopped before it could lapse."""


def new_holder() -> str:
    """Return a holder name for this run: ``host:pid:run-id``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@contextlib.asynccontextmanager
async def held_lease(
    registry: DocRegistry, index: str, *, ttl_s: float, holder: str | None = None
) -> AsyncIterator[str]:
    """Hold ``index``'s lease while the body runs; yield the holder name.

    Args:
        registry: the index's doc registry.
        index: the index name (for messages).
        ttl_s: the lease term, seconds; renewed every ``ttl_s / 6``.
        holder: the holder name (default: `new_holder`).

    Raises:
        IndexBusyError: another run holds the lease (raised before the body starts).
        LeaseLostError: renewal failed; the body was cancelled.
    """
    holder = holder or new_holder()
    await registry.acquire_lease(holder, ttl_s)
    body = asyncio.current_task()
    lost: list[BaseException] = []

    async def heartbeat() -> None:
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(ttl_s / 6)
            try:
                await registry.acquire_lease(holder, ttl_s)
                renewed = time.monotonic()
                continue
            except IndexBusyError as exc:
                lost.append(exc)
            except StoreError as exc:
                if time.monotonic() - renewed < ttl_s * 2 / 3:
                    logger.warning("index %r: lease renewal failed, will retry: %s", index, exc)
                    continue
                lost.append(exc)
            if body is not None:
                body.cancel()
            return

    beat = asyncio.create_task(heartbeat(), name=f"ukr-lease-{index}")
    try:
        yield holder
    except asyncio.CancelledError:
        if lost:
            raise LeaseLostError(
                f"index {index!r}: stopped because the write lease could not be renewed "
                f"({lost[0]}); what was committed stays, the next run repairs the rest"
            ) from lost[0]
        raise
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
        if not lost:
            try:
                await asyncio.shield(registry.release_lease(holder))
            except StoreError as exc:
                logger.warning("index %r: could not release the write lease (it lapses in "
                               "%.0f s): %s", index, ttl_s, exc)
