"""Recording access counts off the query's path: `AccessRecorder` (seed 002 "Access Count").

With ``query.access.record`` on, every retrieval adds 1 to the count of each item it returned
(a chain's packed sources, a staged pipeline's results). A query only puts the ids in an
in-memory queue (`AccessRecorder.record`: no I/O, no await, never raises); one background task
per recorder, the single writer, gathers them for ``flush_interval_s`` and writes each
collection's batch in one `AccessLog.increment` transaction. A write that fails (a database
locked past its busy timeout, an unreachable server, a closed store) is logged as one warning
per run of failures, never raised: its counts go back in the queue and are retried with a
growing wait (at most 30 s), so a locked database loses no count while this process lives.
Closing the recorder (`aclose`, from `App.aclose`) writes what is queued; counts that still
cannot be written then are dropped with a warning. The queue holds at most ``max_pending``
distinct items; past it, further items' counts are dropped with a warning.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import Counter
from collections.abc import Iterable, Sequence

from unified_kg_rag.domain.models import Collection, Source
from unified_kg_rag.ports import AccessLog

from .pipeline import PipelineRun

__all__ = ["KIND_COLLECTIONS", "AccessRecorder"]

logger = logging.getLogger(__name__)

KIND_COLLECTIONS: dict[str, Collection] = {
    "text_unit": Collection.TEXT_UNITS, "entity": Collection.ENTITIES,
    "relationship": Collection.RELATIONSHIPS, "report": Collection.REPORTS,
    "claim": Collection.CLAIMS, "summary": Collection.SUMMARY_NODES,
    "concept": Collection.CONCEPTS,
}  # fmt: skip
"""The collection holding the items of each source or candidate kind (other kinds, such as
``global``'s key points, are not items of the index and are not counted)."""

_MAX_RETRY_WAIT_S = 30.0


class AccessRecorder:
    """Queues retrieval counts of one index and writes them from one background task.

    Args:
        log: the index's access log.
        flush_interval_s: how long the writer gathers counts before writing, seconds (> 0).
        max_pending: most distinct items waiting to be written (≥ 1).
        index: the index name, for log messages.

    Raises:
        ValueError: ``flush_interval_s`` is not positive or ``max_pending`` is below 1.
    """

    def __init__(
        self, log: AccessLog, *, flush_interval_s: float = 0.5, max_pending: int = 100_000,
        index: str = "default",
    ) -> None:
        if not flush_interval_s > 0:
            raise ValueError(f"flush_interval_s must be positive, got {flush_interval_s}")
        if max_pending < 1:
            raise ValueError(f"max_pending must be >= 1, got {max_pending}")
        self.log = log
        self.index = index
        self._interval = flush_interval_s
        self._max_pending = max_pending
        self._pending: dict[Collection, Counter[str]] = {}
        self._lock = threading.Lock()  # record() and the writer may run on different threads
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._failing = False
        self._dropped = 0
        self._closed = False

    # ----------------------------------------------------------------- the query's side

    def record(self, collection: Collection, ids: Iterable[str]) -> None:
        """Add 1 to the queued count of each of ``ids`` (a repeated id adds once per time).

        Never raises and never waits; the writer is started on the running event loop (with
        none running, the counts wait for `flush`).
        """
        try:
            added = self._enqueue(collection, ids)
            if added and not self._closed:
                self._ensure_writer()
        except Exception as exc:  # recording must never fail a query
            logger.warning("access counts of index %s not recorded: %s", self.index, exc)

    def record_sources(self, sources: Sequence[Source]) -> None:
        """Count each source of an answer or retrieval whose kind is an index item."""
        by_collection: dict[Collection, list[str]] = {}
        for source in sources:
            collection = KIND_COLLECTIONS.get(source.kind)
            if collection is not None:
                by_collection.setdefault(collection, []).append(source.id)
        for collection, ids in by_collection.items():
            self.record(collection, ids)

    def observe(self, query: str, run: PipelineRun) -> None:
        """Count each result of a staged-pipeline run (`Pipeline` observer hook)."""
        by_collection: dict[Collection, list[str]] = {}
        for result in run.results:
            collection = KIND_COLLECTIONS.get(result.candidate.kind)
            if collection is not None:
                by_collection.setdefault(collection, []).append(result.candidate.id)
        for collection, ids in by_collection.items():
            self.record(collection, ids)

    @property
    def pending(self) -> int:
        """Counts queued and not yet written (the sum over items)."""
        with self._lock:
            return sum(sum(c.values()) for c in self._pending.values())

    def _enqueue(self, collection: Collection, ids: Iterable[str]) -> bool:
        dropped = 0
        added = False
        with self._lock:
            size = sum(len(c) for c in self._pending.values())
            bucket = self._pending.setdefault(collection, Counter())
            for item_id in ids:
                if item_id not in bucket:
                    if size >= self._max_pending:
                        dropped += 1
                        continue
                    size += 1
                bucket[item_id] += 1
                added = True
        if dropped:
            self._dropped += dropped
            logger.warning("access counts of index %s: %d item(s) dropped, %d already wait "
                           "to be written", self.index, dropped, self._max_pending)  # fmt: skip
        return added

    def _ensure_writer(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = self._task
        if task is not None and not task.done() and task.get_loop() is loop and self._wake:
            self._wake.set()
            return
        self._wake = asyncio.Event()
        self._wake.set()
        self._task = loop.create_task(self._run(self._wake), name=f"ukr-access-{self.index}")

    # ----------------------------------------------------------------- the writer

    async def _run(self, wake: asyncio.Event) -> None:
        """The single writer: wait for counts, gather them a while, write; retry on failure."""
        failures = 0
        try:
            while True:
                await wake.wait()
                wait = self._interval * (2 ** min(failures, 16))
                await asyncio.sleep(min(wait, max(_MAX_RETRY_WAIT_S, self._interval)))
                wake.clear()
                if await self.flush():
                    failures = 0
                else:
                    failures += 1
                    wake.set()
        except asyncio.CancelledError:
            await self.flush()  # the loop is ending (asyncio.run) or the recorder closes
            raise

    async def flush(self) -> bool:
        """Write every queued count now; return False when a write failed (logged).

        Counts of a failed write go back in the queue. Never raises.
        """
        with self._lock:
            batch, self._pending = self._pending, {}
        failed: dict[Collection, Counter[str]] = {}
        error: Exception | None = None
        items = list(batch.items())
        for at, (collection, counter) in enumerate(items):
            if error is None:
                try:
                    await self._increment(collection, counter)
                    continue
                except asyncio.CancelledError:  # keep the batches not written yet, then stop
                    self._requeue(dict(items[at + 1 :]))
                    raise
                except Exception as exc:  # logged once, counts kept
                    error = exc
            failed[collection] = counter
        if error is None:
            if self._failing:
                logger.info("access counts of index %s are written again", self.index)
            self._failing = False
            return True
        self._requeue(failed)
        if not self._failing:
            logger.warning("access counts of index %s not written (kept to retry): %s",
                           self.index, error)  # fmt: skip
        self._failing = True
        return False

    async def _increment(self, collection: Collection, counter: Counter[str]) -> None:
        """Write one batch; a cancelled caller still lets a write already started finish."""
        inner = asyncio.ensure_future(self.log.increment(collection, dict(counter)))
        try:
            await asyncio.shield(inner)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await inner  # committed or failed: either way not written twice
            if inner.cancelled() or inner.exception() is not None:
                self._requeue({collection: counter})
            raise

    def _requeue(self, batches: dict[Collection, Counter[str]]) -> None:
        """Put counts that were not written back in the queue."""
        with self._lock:
            for collection, counter in batches.items():
                self._pending.setdefault(collection, Counter()).update(counter)

    async def aclose(self) -> None:
        """Stop the writer and write what is queued; what cannot be written is dropped.

        Never raises; the lost counts are logged as one warning.
        """
        self._closed = True
        task, self._task = self._task, None
        if task is not None and not task.done() and task.get_loop() is asyncio.get_running_loop():
            task.cancel()  # the writer writes its queue as it stops
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if not await self.flush():
            lost = self.pending
            with self._lock:
                self._pending = {}
            logger.warning("access counts of index %s: %d count(s) could not be written and "
                           "are lost", self.index, lost)  # fmt: skip
