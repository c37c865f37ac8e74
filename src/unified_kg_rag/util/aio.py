"""Async helpers: bounded concurrency over many items, closing an async iterator.

`map_bounded` follows STYLE.md §5: a fixed pool of workers (never one task per item for a
whole corpus), per-item errors collected and returned, cancellation propagated after
clean-up. `aclose_iterator` closes an iterator that may be an async generator.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Generic, TypeVar

__all__ = ["ItemResult", "aclose_iterator", "map_bounded"]

T = TypeVar("T")
R = TypeVar("R")


class ItemResult(Generic[T, R]):
    """The outcome of one item: its value, or the exception it raised."""

    __slots__ = ("error", "item", "value")

    def __init__(self, item: T, value: R | None, error: BaseException | None) -> None:
        self.item = item
        self.value = value
        self.error = error


async def map_bounded(
    items: Sequence[T],
    fn: Callable[[T], Awaitable[R]],
    *,
    concurrency: int,
) -> list[ItemResult[T, R]]:
    """Apply ``fn`` to every item with at most ``concurrency`` calls in flight.

    Args:
        items: the inputs, in order.
        fn: the async function applied to each item.
        concurrency: the number of worker tasks (>= 1).

    Returns:
        One `ItemResult` per item, in input order; an item whose call raised an ``Exception``
        carries it in ``error`` and the other items still run.

    Raises:
        asyncio.CancelledError: the caller was cancelled; workers are cancelled first.
    """
    results: list[ItemResult[T, R] | None] = [None] * len(items)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(items)):
        queue.put_nowait(i)

    async def worker() -> None:
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            try:
                results[i] = ItemResult(items[i], await fn(items[i]), None)
            except Exception as exc:  # collected per item, reported by the caller
                results[i] = ItemResult(items[i], None, exc)

    workers = [asyncio.create_task(worker()) for _ in range(max(1, min(concurrency, len(items))))]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    return [r for r in results if r is not None]


async def aclose_iterator(iterator: AsyncIterator[object]) -> None:
    """Close an async iterator that has ``aclose`` (an async generator); others are left."""
    close = getattr(iterator, "aclose", None)
    if close is not None:
        await close()
