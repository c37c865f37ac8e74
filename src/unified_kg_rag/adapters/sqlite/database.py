"""One SQLite database file, used from one dedicated thread, with typed errors.

All sqlite3 work of a backend runs on a single worker thread (a one-thread executor) through
one connection created there, so the connection is never shared across threads and calls are
serialised. Writes run in ``BEGIN IMMEDIATE`` transactions; reads in deferred ones, so each call
sees one snapshot. The file (and its parent directory) is created by the first write: reads
of a file that does not exist yet run against an empty in-memory database with the same
schema, so read-only commands create nothing.

sqlite3 errors are translated: a locked, busy or unopenable database raises
`StoreConnectionError`, anything else `StoreError`; both name the file.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from unified_kg_rag.adapters.sqlite.migrations import apply_migrations
from unified_kg_rag.adapters.sqlite.vector_cache import VectorCache
from unified_kg_rag.util.errors import StoreConnectionError, StoreError

__all__ = ["SqliteDatabase"]

logger = logging.getLogger(__name__)

T = TypeVar("T")

_CONNECTION_FAILURES = ("locked", "busy", "unable to open", "cannot open", "disk i/o error")


class SqliteDatabase:
    """The connection and worker thread of one database file.

    Args:
        path: the database file; created with its parent directory on the first write.
        busy_timeout_s: how long a statement waits for another writer's lock, seconds.
    """

    def __init__(self, path: Path, *, busy_timeout_s: float = 30.0) -> None:
        self.path = path
        self._busy_timeout_s = busy_timeout_s
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ukr-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._empty: sqlite3.Connection | None = None
        self._closed = False
        self.vectors = VectorCache()
        """Vector matrices of this file's collections (database thread only)."""

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` on the database thread in a read transaction.

        Raises:
            StoreConnectionError: the store is closed, locked or cannot be opened.
            StoreError: a statement failed.
        """
        return await self._submit(lambda: self._transaction(fn, write=False))

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` on the database thread in one write transaction.

        The transaction commits when ``fn`` returns and rolls back when it raises.

        Raises:
            StoreConnectionError: the store is closed, locked past the busy timeout, or the
                file cannot be created.
            StoreError: a statement failed.
        """
        return await self._submit(lambda: self._transaction(fn, write=True))

    async def close(self) -> None:
        """Close the connection and stop the thread. Idempotent."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self._close_connections)
        finally:
            self._executor.shutdown(wait=False)

    @property
    def closed(self) -> bool:
        """True after `close`."""
        return self._closed

    # ----------------------------------------------------------------- database thread

    async def _submit(self, job: Callable[[], T]) -> T:
        if self._closed:
            raise StoreConnectionError(f"SQLite database {self.path} is closed")
        loop = asyncio.get_running_loop()
        try:
            # in the caller's context (as asyncio.to_thread): its log records keep the
            # query or run id (util.correlation)
            context = contextvars.copy_context()
            return await loop.run_in_executor(self._executor, context.run, job)
        except RuntimeError as exc:
            if self._closed:  # the executor was shut down while this call was queued
                raise StoreConnectionError(f"SQLite database {self.path} is closed") from exc
            raise

    def _transaction(self, fn: Callable[[sqlite3.Connection], T], *, write: bool) -> T:
        try:
            conn = self._connection(create=write)
        except sqlite3.Error as exc:
            raise self._translate(exc) from exc
        try:
            conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            result = fn(conn)
            conn.execute("COMMIT")
            return result
        except BaseException as exc:
            if conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise self._translate(exc) from exc
            raise

    def _connection(self, *, create: bool) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        if not create and not self.path.exists():
            if self._empty is None:
                self._empty = self._connect(":memory:", memory=True)
            return self._empty
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreConnectionError(
                f"SQLite database {self.path}: cannot create its directory: {exc}"
            ) from exc
        conn = self._connect(str(self.path), memory=False)
        self._conn = conn
        if self._empty is not None:
            self._empty.close()
            self._empty = None
        self.vectors.clear()
        return conn

    def _connect(self, target: str, *, memory: bool) -> sqlite3.Connection:
        conn = sqlite3.connect(
            target, timeout=self._busy_timeout_s, isolation_level=None, check_same_thread=True
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_s * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            if not memory:
                mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    logger.warning("SQLite database %s: journal mode is %s", self.path, mode)
                conn.execute("PRAGMA synchronous = NORMAL")
            apply_migrations(conn, location=str(self.path))
        except BaseException:
            conn.close()
            raise
        return conn

    def _close_connections(self) -> None:
        for conn in (self._conn, self._empty):
            if conn is not None:
                conn.close()
        self._conn = self._empty = None
        self.vectors.clear()

    def _translate(self, exc: sqlite3.Error) -> StoreError:
        message = f"SQLite database {self.path}: {exc}"
        text = str(exc).lower()
        if isinstance(exc, sqlite3.OperationalError) and any(
            marker in text for marker in _CONNECTION_FAILURES
        ):
            return StoreConnectionError(message)
        return StoreError(message)
