"""Running index, delete and reset jobs in the background of a server process (no HTTP here).

`JobManager` starts a job as an asyncio task on the process's `App`, the same pipeline calls
``ukr index``, ``ukr index --reset`` and ``ukr delete`` make, and keeps its record
(`service.job_store`) up to date: state, progress counts (twice a second at most), the run's
report. One job writes an index at a time: a second one is refused with `JobConflictError`
naming the first (every worker sees the records), and one while a run outside these records
holds the index's write lease (a CLI, or another server on the same PostgreSQL database with
its own project directory) with `BuildInProgress`. A job takes the lease when it is accepted
(`job_holder` names it) and its run renews it, so of two servers asking at once one is refused.
Job records are those of the project directory: a server on another one does not know them.

Stopping: `JobManager.cancel` (any worker: the record carries the request, the running
worker polls it) stops a job the way Ctrl-C stops ``ukr index``: the pipeline is cancelled,
what it committed stays, and the job ends ``cancelled``. `JobManager.aclose` (the server
shutting down, SIGTERM) does the same and records ``interrupted`` with its inputs; the next
start logs each interrupted job once, with how to resume it: ``POST /v1/jobs/{id}/resume``
runs its inputs again as a new job (stored vectors are reused, nothing is embedded twice).
Resuming is explicit, not automatic: a server is often stopped because of a job (too large,
the wrong folder), and with several workers an automatic resume would race.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from unified_kg_rag.bootstrap import App
from unified_kg_rag.ingestion.report import DeleteReport, IndexReport
from unified_kg_rag.ingestion.uploads import allowed_path, remove_uploaded
from unified_kg_rag.service.job_store import (
    Job,
    JobError,
    JobInputs,
    JobKind,
    JobState,
    JobStore,
)
from unified_kg_rag.util.correlation import run_scope
from unified_kg_rag.util.errors import NotFoundError, StoreError, UkrError, UsageError
from unified_kg_rag.util.text import counted

if TYPE_CHECKING:
    from unified_kg_rag.ingestion.pipeline import IndexPipeline

__all__ = ["JobManager", "JobObserver", "JobProgressReporter", "job_holder"]

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

_FLUSH_S = 0.5
"""Longest a running job's record lags its progress, seconds (also its heartbeat)."""

_POLL_S = 0.25
"""How often a subscriber reads a job's record, seconds."""


class JobProgressReporter:
    """A `ports.ProgressReporter` counting a run's progress events into a `Job`."""

    def __init__(self, job: Job) -> None:
        self._job = job
        self.changed = True

    def start(self, task: str, total: int | None) -> None:
        """Set ``task``'s total (documents for ``index``, text units for ``embed``)."""
        progress = self._job.progress
        if task == "index":
            progress.documents_total = total or 0
        elif task == "embed":
            progress.units_total = total or 0
        progress.stage = task
        self.changed = True

    def advance(self, task: str, steps: int = 1, *, note: str | None = None) -> None:
        """Count ``steps`` more documents committed or units embedded."""
        del note
        if task == "index":
            self._job.progress.documents_done += steps
        elif task == "embed":
            self._job.progress.units_embedded += steps
        self.changed = True

    def finish(self, task: str) -> None:
        """Nothing to count: the totals are known."""

    def warn(self, message: str) -> None:
        """Count a failure (the report lists them at the end)."""
        del message
        self._job.progress.failures += 1
        self.changed = True


class JobObserver(Protocol):
    """Told of every job's progress and state (the service's metrics); called on the loop."""

    def job_progress(self, index: str, kind: str, done: int, total: int | None) -> None:
        """``done`` documents of ``total`` committed."""

    def job_state(self, index: str, kind: str, state: JobState) -> None:
        """The job is now in ``state``."""


class JobManager:
    """The jobs of one server process (see the module docstring).

    Args:
        app: the process's application.
        store: the project's job records.
        observer: told of each job's progress and state changes (metrics), if given.
    """

    def __init__(self, app: App, store: JobStore, observer: JobObserver | None = None) -> None:
        self._app = app
        self._store = store
        self._observer = observer
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._stopping = False

    async def _call(self, fn: Callable[..., _T], *args: object, **kwargs: object) -> _T:
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def announce_interrupted(self) -> list[Job]:
        """Log, once per job over all workers, each job a stop interrupted and how to resume."""
        jobs = await self._call(self._store.announce_interrupted)
        for job in jobs:
            logger.warning("job %s (%s, index %r) was interrupted when the server stopped "
                           "(%s); resume it with POST /v1/jobs/%s/resume", job.id, job.kind,
                           job.index, job.summary or "nothing kept", job.id)  # fmt: skip
        return jobs

    async def submit(
        self,
        kind: JobKind,
        index: str | None,
        inputs: JobInputs,
        *,
        prepare: Callable[[str], JobInputs] | None = None,
        resumed_from: str | None = None,
    ) -> Job:
        """Start a job; return its record (``queued``).

        Args:
            kind: ``index`` (``inputs.paths``), ``reset`` (``inputs.paths`` again, with
                ``--reset``) or ``delete`` (``inputs.targets``).
            index: the index (default: ``query.index``).
            inputs: what to do.
            prepare: called with the index name once the index is claimed and before the
                run starts, in a thread; returns the final inputs (an upload moves its files
                into place here). A failure there forgets the job.
            resumed_from: the interrupted job this one resumes.

        Raises:
            UsageError: the index name is invalid.
            JobConflictError: a job of this server already writes the index.
            BuildInProgress: a run outside the job records holds the index's lease (``ukr
                index``, a server with another project directory on the same database).
            StoreError: the job records or the store failed.
        """
        if self._stopping:
            raise UsageError("the server is stopping; start the job again after the restart")
        stores = self._app.index(index)
        job = Job(id=uuid.uuid4().hex[:12], kind=kind, index=stores.name, inputs=inputs,
                  resumed_from=resumed_from)  # fmt: skip
        await self._call(self._store.claim, job)
        try:
            # taken now, not when the run starts: a server with other job records asking in
            # between is refused with 409, not accepted and then failed by its run
            await stores.registry.acquire_lease(job_holder(job.id),
                                                self._app.config.indexing.lease_s)  # fmt: skip
        except BaseException:
            await self._call(self._store.forget, job.id)
            raise
        try:
            if prepare is not None:
                job.inputs = await self._call(prepare, stores.name)
            await self._call(self._store.save, job)
        except BaseException:
            await self._call(self._store.forget, job.id)
            await _release(self._app, job)
            raise
        with run_scope(job.id):  # the task copies it: the job's logs and spans name the job
            self._tasks[job.id] = asyncio.create_task(self._run(job), name=f"ukr-job-{job.id}")
        return job

    async def get(self, job_id: str) -> Job:
        """The job ``job_id``.

        Raises:
            NotFoundError: no such job.
        """
        job = await self._call(self._store.get, job_id)
        if job is None:
            raise NotFoundError(
                f"no job {job_id!r} on this server: job records are kept per project directory "
                "(.ukr/jobs.sqlite), so a job started by a server with another project "
                "directory is known only there",
                field="job_id")  # fmt: skip
        return job

    async def list_jobs(self, **filters: object) -> list[Job]:
        """Jobs, newest first (`JobStore.list_jobs` filters: ``index``, ``state``, ``limit``)."""
        return await self._call(self._store.list_jobs, **filters)

    async def cancel(self, job_id: str, *, wait_s: float = 30.0) -> Job:
        """Ask a job to stop like Ctrl-C; return its record (final when it ran here).

        A job that already ended is returned as it is. A job another worker runs ends within
        a second (its worker polls the request); its record is awaited up to ``wait_s``.

        Raises:
            NotFoundError: no such job.
        """
        job = await self.get(job_id)
        if not job.active:
            return job
        await self._call(self._store.request_cancel, job_id)
        task = self._tasks.get(job_id)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            # a task cancelled before its first step never ran `_run`'s release
            await _release(self._app, job)
        deadline = time.monotonic() + wait_s
        async for job in self.watch(job_id):  # another worker's job: until its record ends
            if not job.active or time.monotonic() > deadline:
                return job
        return await self.get(job_id)

    async def resume(self, job_id: str) -> Job:
        """Run an interrupted or cancelled job's inputs again, as a new job.

        Raises:
            NotFoundError: no such job.
            UsageError: the job did not stop half way, or was resumed already.
            JobConflictError, BuildInProgress: as `submit`.
        """
        old = await self.get(job_id)
        if old.state not in ("interrupted", "cancelled"):
            raise UsageError(f"job {job_id} is {old.state}: only an interrupted or cancelled "
                             "job can be resumed", field="job_id")  # fmt: skip
        if old.resumed_by:
            raise UsageError(f"job {job_id} was resumed already by job {old.resumed_by}",
                             field="job_id")  # fmt: skip
        await self._call(self._check_roots, old)
        new = await self.submit(old.kind, old.index, old.inputs, resumed_from=old.id)
        old.resumed_by = new.id
        await self._call(self._store.save, old)
        return new

    async def watch(self, job_id: str) -> AsyncIterator[Job]:
        """Yield the job now, then on every change of its record, last the ended job.

        Raises:
            NotFoundError: no such job.
        """
        last = ""
        while True:
            job = await self.get(job_id)
            body = job.model_dump_json()
            if body != last:
                last = body
                yield job
            if not job.active:
                return
            await asyncio.sleep(_POLL_S)

    async def aclose(self) -> None:
        """Stop this process's running jobs (recorded ``interrupted``); refuse new ones."""
        self._stopping = True
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # ------------------------------------------------------------------ the run

    async def _run(self, job: Job) -> None:
        progress = JobProgressReporter(job)
        # the pump writes the heartbeat and sees a cancel from the start: while connecting to
        # `indexing.cluster` too (in a thread, so the server answers meanwhile)
        pump = asyncio.create_task(self._pump(job, progress, asyncio.current_task()))
        pipeline: IndexPipeline | None = None  # None: it never started (connecting failed)
        try:
            await self._app.connect_cluster()
            pipeline = self._app.index_pipeline(job.index, progress=progress)
            pipeline.lease_holder = job_holder(job.id)  # the run renews the lease `submit` took
            job.state, job.started_at = "running", time.time()
            self._observe(job)
            await self._call(self._store.save, job)
            await self._call(self._check_roots, job)  # again: links change after a request
            if job.kind == "delete":
                deleted = await pipeline.delete(job.inputs.targets, confirm=job.inputs.confirm)
                await self._call(remove_uploaded, self._app.project_dir, deleted.deleted)
                self._ended(job, deleted)
            else:
                report = await pipeline.run(
                    [Path(p) for p in job.inputs.paths], confirm_deletions=job.inputs.confirm,
                    reset=job.kind == "reset",
                    retry_quarantined=job.inputs.retry_quarantined)  # fmt: skip
                self._ended(job, report)
        except asyncio.CancelledError:
            cancelled = await self._call(self._store.cancel_requested, job.id)
            job.state = "cancelled" if cancelled and not self._stopping else "interrupted"
            if pipeline is not None:
                job.summary = pipeline.kept.describe()
            raise
        except UkrError as error:
            job.state, job.error = "failed", _error(error)
        except Exception as error:  # a bug: logged here, not described to the client
            logger.exception("job %s failed", job.id)
            job.state = "failed"
            job.error = _error(error, "the job failed; see the server log")
        finally:
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
            job.finished_at = time.time()
            self._observe(job)
            # the run gave the lease up, unless it failed before it took it over
            await asyncio.shield(_release(self._app, job))
            await asyncio.shield(self._call(self._store.save, job))
            self._tasks.pop(job.id, None)

    def _ended(self, job: Job, report: IndexReport | DeleteReport) -> None:
        job.usage = report.usage
        if isinstance(report, DeleteReport):
            job.delete_report = report
            job.progress.failures = len(report.unknown)
            job.summary = (f"{counted(len(report.deleted), 'document')} deleted, "
                           f"{counted(report.text_units_removed, 'text unit')} removed, "
                           f"{counted(len(report.unknown), 'target')} unknown")  # fmt: skip
        else:
            job.index_report = report
            job.progress.failures = len(report.failed)
            retried = f"{report.documents_retried} retried, " if report.documents_retried else ""
            job.summary = (f"{counted(report.documents_found, 'document')} found: "
                           f"{report.documents_new} new, {report.documents_changed} changed, "
                           f"{report.documents_unchanged} unchanged, {retried}"
                           f"{len(report.failed)} failed; "
                           f"{counted(report.text_units_embedded, 'text unit')} "
                           "embedded")  # fmt: skip
        builds = (report.graph, report.summary_tree)
        stopped = [b.error for b in builds if b is not None and b.error]
        if report.exit_code == 1 and stopped:
            job.state, job.error = "failed", JobError(type="ModelError", message=stopped[0])
        else:
            job.state = "succeeded"

    async def _pump(self, job: Job, progress: JobProgressReporter,
                    run: asyncio.Task[None] | None) -> None:  # fmt: skip
        """Write the job's progress while it runs; cancel it once a cancel is requested.

        Until the run starts (while it connects to ``indexing.cluster``) it also renews the
        write lease `submit` took, every sixth of ``indexing.lease_s``; the run renews it
        from then on.
        """
        lease_s = self._app.config.indexing.lease_s
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(_FLUSH_S)
            if job.started_at is None and time.monotonic() - renewed >= lease_s / 6:
                renewed = time.monotonic()
                await self._renew(job, lease_s)
            if await self._call(self._store.cancel_requested, job.id):
                if run is not None:
                    run.cancel()
                return
            progress.changed = False
            self._observe(job)
            await self._call(self._store.save, job)

    async def _renew(self, job: Job, lease_s: float) -> None:
        try:
            await self._app.index(job.index).registry.renew_lease(job_holder(job.id), lease_s)
        except StoreError as exc:  # LeaseLostError too: the run says so again when it starts
            logger.warning("job %s: could not renew the write lease of index %r: %s",
                           job.id, job.index, exc)  # fmt: skip

    def _check_roots(self, job: Job) -> None:
        """Check a server-side path job's paths against ``service.allowed_roots`` again.

        Checked when the request came, and again when the job starts or is resumed: a link
        added meanwhile (even after a cancel) must not lead the run outside the roots.
        Uploads (in the project's uploads folder) and resets (admin) are not checked.

        Raises:
            UsageError: a path is no longer below the roots (as `allowed_path`).
        """
        if job.kind != "index" or job.inputs.uploads:
            return
        roots = self._app.config.service.allowed_roots
        for path in job.inputs.paths:
            allowed_path(path, roots, self._app.project_dir)

    def _observe(self, job: Job) -> None:
        if self._observer is not None:
            done, total = job.progress.documents_done, job.progress.documents_total
            self._observer.job_progress(job.index, job.kind, done, total or None)
            self._observer.job_state(job.index, job.kind, job.state)


def job_holder(job_id: str) -> str:
    """The write-lease holder name of job ``job_id``: ``host:pid:job-ID``.

    A server that is refused the lease (HTTP 409) names it, so the caller knows which
    machine and process runs the job that holds the index.
    """
    return f"{socket.gethostname()}:{os.getpid()}:job-{job_id}"


async def _release(app: App, job: Job) -> None:
    """Give up ``job``'s lease if it still holds it (a failed release only logs: it lapses)."""
    try:
        await app.index(job.index).registry.release_lease(job_holder(job.id))
    except StoreError as exc:
        logger.warning("job %s: could not release the write lease of index %r (it lapses "
                       "in indexing.lease_s): %s", job.id, job.index, exc)  # fmt: skip


def _error(error: BaseException, message: str | None = None) -> JobError:
    """The record of ``error``; an unexpected one is ``InternalError`` with ``message``."""
    if message is not None:
        return JobError(type="InternalError", message=message)
    return JobError(type=type(error).__name__, message=str(error))
