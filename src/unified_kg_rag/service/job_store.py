"""Index, delete and reset jobs as records, kept in ``PROJECT/.ukr/jobs.sqlite``.

A job record is what ``GET /v1/jobs/{id}`` returns (`Job`). The records live in a small
SQLite file of the project's state folder (stdlib ``sqlite3``, whatever the store backend),
so every worker process of one server sees every job, a cancel request reaches the worker
that runs it (`JobStore.request_cancel`), and an interrupted job is still listed after a
restart. Free of HTTP: the service's routes and any other entry point (an MCP server) use it
through `service.jobs.JobManager`.

Every method is blocking (a few milliseconds); callers run it in a thread.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from unified_kg_rag.config.load import state_dir
from unified_kg_rag.domain.models import TokenUsage
from unified_kg_rag.ingestion.report import DeleteReport, IndexReport
from unified_kg_rag.util.errors import JobConflictError, StoreError

__all__ = [
    "ACTIVE_STATES",
    "Job",
    "JobError",
    "JobInputs",
    "JobKind",
    "JobProgress",
    "JobState",
    "JobStore",
]

JobKind = Literal["index", "delete", "reset"]
JobState = Literal["queued", "running", "succeeded", "failed", "cancelled", "interrupted"]
ACTIVE_STATES: tuple[JobState, ...] = ("queued", "running")
"""States of a job that holds its index."""


class JobInputs(BaseModel):
    """What a job was asked to do: enough to run it again (``resume``).

    Attributes:
        paths: files and folders to index, absolute (uploaded files, a server-side path, the
            files of a reset).
        uploads: of which the names uploaded (kept in ``PROJECT/uploads/INDEX/``).
        targets: document ids, id prefixes or paths to delete (a delete job).
        confirm: delete even more than ``indexing.max_delete_share`` (``--yes``).
        retry_quarantined: try quarantined documents and text units again
            (``--retry-quarantined``).
    """

    paths: list[str] = Field(default_factory=list)
    uploads: list[str] = Field(default_factory=list)
    targets: list[str] = Field(default_factory=list)
    confirm: bool = False
    retry_quarantined: bool = False


class JobProgress(BaseModel):
    """How far a job got (the pipeline's progress events, counted).

    Attributes:
        documents_total: documents to index (those that failed leave the total).
        documents_done: documents committed.
        units_total: text units to embed, found so far.
        units_embedded: text units embedded and stored.
        failures: documents (or items) that failed.
        stage: the task last reported (``read``, ``index``, ``embed``, ``concepts`` ...).
    """

    documents_total: int = 0
    documents_done: int = 0
    units_total: int = 0
    units_embedded: int = 0
    failures: int = 0
    stage: str = ""


class JobError(BaseModel):
    """Why a job failed: the error kind and its one-line message."""

    type: str
    message: str


class Job(BaseModel):
    """One index, delete or reset job.

    Attributes:
        id: the job id (12 hex digits).
        kind: ``index``, ``delete`` or ``reset``.
        index: the index written.
        state: ``queued``, ``running``, ``succeeded`` (document failures are counted in
            ``progress.failures``), ``failed``, ``cancelled`` or ``interrupted`` (the server
            stopped; ``POST /v1/jobs/{id}/resume`` runs it again).
        inputs: what it was asked to do.
        progress: how far it got.
        usage: model spend of the run (calls, tokens), once it ended.
        created_at, started_at, finished_at: Unix seconds.
        error: why it failed.
        summary: one line saying what the run did (or kept, when stopped).
        index_report: the run's `IndexReport` (index and reset jobs).
        delete_report: the run's `DeleteReport` (delete jobs).
        resumed_from: the interrupted job this one resumes.
        resumed_by: the job that resumed this one.
    """

    id: str
    kind: JobKind
    index: str
    state: JobState = "queued"
    inputs: JobInputs = Field(default_factory=JobInputs)
    progress: JobProgress = Field(default_factory=JobProgress)
    usage: TokenUsage | None = None
    created_at: float = Field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None
    error: JobError | None = None
    summary: str = ""
    index_report: IndexReport | None = None
    delete_report: DeleteReport | None = None
    resumed_from: str | None = None
    resumed_by: str | None = None

    @property
    def active(self) -> bool:
        """The job holds its index (queued or running)."""
        return self.state in ACTIVE_STATES


_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    index_name TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at REAL NOT NULL,
    heartbeat_at REAL NOT NULL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    announced INTEGER NOT NULL DEFAULT 0,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_by_index ON jobs (index_name, state);
"""


class JobStore:
    """The job records of one project.

    Args:
        project_dir: the project directory (the file is ``.ukr/jobs.sqlite`` in it).
        stale_after_s: an active job whose worker has not written for this long, seconds,
            is taken for dead (its process was killed) and recorded ``interrupted``.
    """

    def __init__(self, project_dir: Path, *, stale_after_s: float = 15.0) -> None:
        self.path = state_dir(project_dir) / "jobs.sqlite"
        self.stale_after_s = stale_after_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.executescript(_SCHEMA)

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        try:
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: cannot open the job records: {exc}") from exc
        try:
            db.execute("PRAGMA journal_mode=WAL")
            yield db
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: job records: {exc}") from exc
        finally:
            db.close()

    def claim(self, job: Job) -> None:
        """Record ``job`` as the one writing its index.

        Raises:
            JobConflictError: another live job holds the index (names it).
        """
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                self._reap(db, job.index)
                row = db.execute(
                    "SELECT body FROM jobs WHERE index_name = ? AND state IN ('queued', "
                    "'running') ORDER BY created_at LIMIT 1", (job.index,)).fetchone()  # fmt: skip
                if row is not None:
                    other = Job.model_validate_json(row[0])
                    raise JobConflictError(job.index, other.id, other.kind)
                db.execute(
                    "INSERT INTO jobs (id, index_name, state, created_at, heartbeat_at, body) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (job.id, job.index, job.state, job.created_at, time.time(),
                     job.model_dump_json()),
                )  # fmt: skip
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def save(self, job: Job) -> None:
        """Write ``job``'s record (and its worker's heartbeat)."""
        with self._db() as db:
            db.execute("UPDATE jobs SET state = ?, heartbeat_at = ?, body = ? WHERE id = ?",
                       (job.state, time.time(), job.model_dump_json(), job.id))

    def forget(self, job_id: str) -> None:
        """Remove a job's record (a job refused before it started)."""
        with self._db() as db:
            db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))

    def get(self, job_id: str) -> Job | None:
        """The job ``job_id``, or None."""
        with self._db() as db:
            self._reap(db, None)
            row = db.execute("SELECT body FROM jobs WHERE id = ?", (job_id,)).fetchone()
        return None if row is None else Job.model_validate_json(row[0])

    def list_jobs(self, *, index: str | None = None, state: JobState | None = None,
             limit: int = 100) -> list[Job]:  # fmt: skip
        """Jobs, newest first, optionally of one index and one state."""
        where, args = [], []
        if index is not None:
            where.append("index_name = ?")
            args.append(index)
        if state is not None:
            where.append("state = ?")
            args.append(state)
        sql = "SELECT body FROM jobs" + (" WHERE " + " AND ".join(where) if where else "")
        with self._db() as db:
            self._reap(db, None)
            rows = db.execute(f"{sql} ORDER BY created_at DESC LIMIT ?",
                              (*args, limit)).fetchall()  # fmt: skip
        return [Job.model_validate_json(r[0]) for r in rows]

    def request_cancel(self, job_id: str) -> None:
        """Ask the worker running ``job_id`` to cancel it (it polls `cancel_requested`)."""
        with self._db() as db:
            db.execute("UPDATE jobs SET cancel_requested = 1 WHERE id = ?", (job_id,))

    def cancel_requested(self, job_id: str) -> bool:
        """True once `request_cancel` was called for ``job_id``."""
        with self._db() as db:
            row = db.execute("SELECT cancel_requested FROM jobs WHERE id = ?",
                             (job_id,)).fetchone()  # fmt: skip
        return bool(row and row[0])

    def announce_interrupted(self) -> list[Job]:
        """The interrupted jobs not announced yet, marked announced (one worker says each)."""
        with self._db() as db:
            db.execute("BEGIN IMMEDIATE")
            self._reap(db, None)
            rows = db.execute("SELECT body FROM jobs WHERE state = 'interrupted' AND announced = 0 "
                              "AND body NOT LIKE '%\"resumed_by\":\"%'").fetchall()  # fmt: skip
            db.execute("UPDATE jobs SET announced = 1 WHERE state = 'interrupted'")
            db.execute("COMMIT")
        return [Job.model_validate_json(r[0]) for r in rows]

    def _reap(self, db: sqlite3.Connection, index: str | None) -> None:
        """Record ``interrupted`` the active jobs whose worker died (no heartbeat)."""
        cutoff = time.time() - self.stale_after_s
        rows = db.execute(
            "SELECT body FROM jobs WHERE state IN ('queued', 'running') AND heartbeat_at < ?"
            + (" AND index_name = ?" if index is not None else ""),
            (cutoff, index) if index is not None else (cutoff,),
        ).fetchall()
        for (body,) in rows:
            job = Job.model_validate_json(body)
            job.state, job.finished_at = "interrupted", time.time()
            job.summary = job.summary or "its server process stopped without saying why"
            db.execute("UPDATE jobs SET state = ?, body = ? WHERE id = ?",
                       (job.state, job.model_dump_json(), job.id))
