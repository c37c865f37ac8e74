"""The single-writer lease rule, shared by every `DocRegistry` (seed 000 §5.6).

One run writes an index at a time: it takes the index's lease before its first read of the
registry, renews it by a heartbeat, and gives it up at the end. A lease that was not renewed
lapses, so a run that died never locks the index for good. Stores apply `next_lease` inside
one transaction (row lock or write lock), with their own clock.
"""

from __future__ import annotations

from unified_kg_rag.domain.models import Lease
from unified_kg_rag.util.errors import BuildInProgress, LeaseLostError

__all__ = ["next_lease", "renewed_lease"]


def next_lease(index: str, current: Lease | None, holder: str, now: float, ttl_s: float) -> Lease:
    """Return the lease ``holder`` gets at ``now``, or raise when another holder has it.

    Args:
        index: the index name (for the message).
        current: the stored lease, or None.
        holder: who asks.
        now: the store's time, UNIX seconds.
        ttl_s: how long the lease runs from ``now``, seconds.

    Returns:
        The new lease: ``acquired_at`` is kept when ``holder`` renews its own lease.

    Raises:
        ValueError: ``ttl_s`` is not positive or ``holder`` is empty.
        BuildInProgress: ``current`` belongs to another holder and has not lapsed.
    """
    if ttl_s <= 0:
        raise ValueError("ttl_s must be positive")
    if not holder:
        raise ValueError("holder must not be empty")
    if current is not None and current.holder != holder and current.expires_at > now:
        raise BuildInProgress(index, current.holder, current.expires_at - now)
    renewing = current is not None and current.holder == holder
    acquired = current.acquired_at if renewing and current is not None else now
    return Lease(holder=holder, acquired_at=acquired, expires_at=now + ttl_s)


def renewed_lease(
    index: str, current: Lease | None, holder: str, now: float, ttl_s: float
) -> Lease:
    """Return ``holder``'s lease renewed at ``now``, or raise when it is no longer theirs.

    A lease that lapsed but that nobody took is still its holder's to renew (nobody else can
    have written). One that was released, or taken by another run after it lapsed, is lost:
    the holder must stop before writing again (seed 000 §5.6, the write fence).

    Raises:
        LeaseLostError: ``current`` is None or belongs to another holder.
        ValueError: ``ttl_s`` is not positive.
    """
    if current is None or current.holder != holder:
        taken = f"it is held by {current.holder}" if current is not None else "it was released"
        raise LeaseLostError(f"index {index!r}: {holder} lost its write lease ({taken})")
    return next_lease(index, current, holder, now, ttl_s)
