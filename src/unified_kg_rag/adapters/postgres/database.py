"""One PostgreSQL database: an async connection pool on its own event loop, typed errors.

The pool (psycopg 3 ``AsyncConnectionPool``) lives on an event loop that runs in a dedicated
thread owned by this object. Callers on any event loop submit coroutines to it, so the
backend works the same from one long-lived loop (the CLI, a server) and from many short ones
(``asyncio.run`` per call in tests and notebooks), and a pool is never used from a loop it was
not created on. Cancelling the caller cancels the statement's coroutine.

On first use the database is checked and prepared: connect (authentication and network errors
surface here, with the server's message), make sure the ``vector`` extension exists, create or
migrate the catalog schema, then open the pool. An index schema is created and migrated the
first time a write touches the index in this process; reads of an index that does not exist
return nothing and create nothing.

psycopg errors are translated (`errors.translate`): unreachable server, failed
authentication, lost connection and exhausted pool raise `StoreConnectionError`, an
unreachable server named as such first (``PostgreSQL at ... is unreachable (connection
refused)``) even when a pool timeout or a dropped statement noticed it; a statement cancelled
by ``statement_timeout`` raises `StoreTimeoutError`; a schema newer than the code or a missing
pgvector raise `StoreSchemaError`; anything else `StoreError`. Every message names the server
(password masked), and so does the driver's exception kept as the cause.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
import re
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import psycopg
import psycopg.errors
from pgvector.psycopg import register_vector_async
from psycopg import AsyncConnection, sql
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from unified_kg_rag.adapters.postgres.errors import translate
from unified_kg_rag.adapters.postgres.migrations import (
    CATALOG_MIGRATIONS,
    INDEX_MIGRATIONS,
    PgMigration,
)
from unified_kg_rag.adapters.postgres.urls import masked_location, scrub, scrub_exception
from unified_kg_rag.config.models import PostgresConfig
from unified_kg_rag.util.errors import StoreConnectionError, StoreError, StoreSchemaError

__all__ = [
    "APPLICATION_NAME",
    "Conn",
    "PgDatabase",
    "index_schema_name",
]

logger = logging.getLogger(__name__)

_CLOSE_GRACE_S = 5.0
"""How long `PgDatabase.close` lets calls in flight finish before failing them, seconds."""

APPLICATION_NAME = "unified-kg-rag"
"""The ``application_name`` of every connection (visible in ``pg_stat_activity``)."""

T = TypeVar("T")
Conn = AsyncConnection[Any]
"""A pooled connection (autocommit off inside `PgDatabase` transactions)."""


def index_schema_name(catalog: str, index: str) -> str:
    """Return the schema that holds ``index``: ``<catalog>_<slug>_<hash8>``.

    The slug keeps the name readable in ``psql`` (lowercase, other characters ``_``, at most
    32 characters); the hash of the catalog and the exact name keeps distinct names distinct
    ("A" and "a", "x.y" and "x_y", two catalogs whose prefixes were cut alike). The prefix is
    cut so the result fits PostgreSQL's 63-byte identifier limit.
    """
    slug = re.sub(r"[^a-z0-9_]", "_", index.lower())[:32]
    digest = hashlib.sha256(f"{catalog}\x00{index}".encode()).hexdigest()[:8]
    prefix = f"{catalog}_{slug}"[: 63 - 9]
    return f"{prefix}_{digest}"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]


class PgDatabase:
    """The pool, loop thread and schemas of one PostgreSQL database.

    Args:
        url: libpq connection URL (or key=value string).
        config: the ``stores.postgres`` section.
    """

    def __init__(self, url: str, config: PostgresConfig) -> None:
        self._url = url
        self.config = config
        self.location = masked_location(url)
        self.catalog = config.schema_name
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._open_lock: asyncio.Lock | None = None
        self._closed = False
        self._vector_schema = "public"
        self._inflight: set[asyncio.Task[Any]] = set()
        """Calls running on the loop thread (so `close` can let them finish or fail them)."""
        self._schemas: dict[str, str] = {}
        """Index name -> schema, for indexes known to exist and be migrated (loop thread)."""

    # ----------------------------------------------------------------- public entry points

    async def read_index(
        self, index: str, fn: Callable[[Conn], Awaitable[T]], default: T
    ) -> T:
        """Run ``fn(conn)`` in a read transaction with ``search_path`` set to the index schema.

        Returns:
            What ``fn`` returns, or ``default`` when the index does not exist (nothing is
            created).

        Raises:
            StoreConnectionError, StoreTimeoutError, StoreSchemaError, StoreError: see module.
        """
        return await self._submit(
            lambda: self._in_index(index, fn, default, serialize=False, create=False)
        )

    async def write_index(
        self,
        index: str,
        fn: Callable[[Conn], Awaitable[T]],
        *,
        create: bool = True,
        default: T | None = None,
        serialize: bool = True,
    ) -> T:
        """Run ``fn(conn)`` in one write transaction on the index schema.

        The schema is created (and migrated) if needed; with ``create=False`` a missing index
        returns ``default`` instead (deletes from an index that does not exist). With
        ``serialize=False`` the transaction does not queue behind other writers (lease calls,
        which lock only their own row).

        Writers of one index are serialised by a transaction-scoped advisory lock on the
        index, so concurrent writers (other processes included) never deadlock on the BM25
        statistics; readers are never blocked (MVCC).

        Raises:
            StoreConnectionError, StoreTimeoutError, StoreSchemaError, StoreError: see module.
        """
        return await self._submit(
            lambda: self._in_index(index, fn, default, serialize=serialize, create=create)  # type: ignore[arg-type]
        )

    async def catalog_tx(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """Run ``fn(conn)`` in one transaction with ``search_path`` set to the catalog schema."""
        return await self._submit(lambda: self._in_catalog(fn))

    async def close(self) -> None:
        """Close the pool and stop the loop thread. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            future = asyncio.run_coroutine_threadsafe(self._close_pool(), loop)
            await asyncio.wrap_future(future)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            await asyncio.get_running_loop().run_in_executor(None, thread.join)
            loop.close()

    def close_sync(self) -> None:
        """Close from synchronous code (no running event loop in this thread). Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            asyncio.run_coroutine_threadsafe(self._close_pool(), loop).result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()

    @property
    def closed(self) -> bool:
        """True after `close`."""
        return self._closed

    # ----------------------------------------------------------------- loop thread

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._closed:
                raise StoreConnectionError(f"PostgreSQL {self.location}: the store is closed")
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="ukr-postgres", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    async def _submit(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        loop = self._ensure_loop()
        future = asyncio.run_coroutine_threadsafe(self._guarded(make), loop)
        return await asyncio.wrap_future(future)

    def _line(self, exc: BaseException) -> str:
        return scrub(_first_line(exc), self._url)

    async def _guarded(self, make: Callable[[], Coroutine[Any, Any, T]]) -> T:
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            return await make()
        except asyncio.CancelledError:
            if self._closed:
                raise StoreConnectionError(
                    f"PostgreSQL {self.location}: the store was closed while this call ran"
                ) from None
            raise
        except StoreError:
            raise
        except (psycopg.Error, PoolTimeout, OSError) as exc:
            scrub_exception(exc, self._url)  # a traceback (--verbose) prints the cause too
            raise await translate(exc, location=self.location, config=self.config,
                                  line=self._line, probe=self._probe) from exc
        finally:
            if task is not None:
                self._inflight.discard(task)

    async def _probe(self) -> BaseException | None:
        """Try one direct connection; return its error, or None when the server answered."""
        bound = max(2, math.ceil(self.config.connect_timeout_s)) + 1.0
        try:
            conn = await asyncio.wait_for(AsyncConnection.connect(
                self._url, autocommit=True, **self._connect_kwargs()), bound)
        except (psycopg.Error, OSError) as exc:  # TimeoutError is an OSError
            scrub_exception(exc, self._url)
            return exc
        await conn.close()
        return None

    async def _pool_ready(self) -> AsyncConnectionPool[Conn]:
        if self._pool is not None:
            return self._pool
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._pool is None:
                await self._prepare_database()
                pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
                    self._url,
                    min_size=self.config.pool_min_size,
                    max_size=self.config.pool_max_size,
                    kwargs=self._connect_kwargs(),
                    configure=self._configure,
                    check=AsyncConnectionPool.check_connection,
                    timeout=self.config.connect_timeout_s,
                    name="ukr",
                    open=False,
                )
                await pool.open(wait=self.config.pool_min_size > 0,
                                timeout=self.config.connect_timeout_s)
                self._pool = pool
        return self._pool

    def _connect_kwargs(self) -> dict[str, Any]:
        # libpq's connect_timeout is whole seconds, at least 2; the application name lets an
        # operator find these sessions in pg_stat_activity
        # TCP keepalives and a user timeout so a dead peer (failover, black-holed network) is
        # noticed within about a minute instead of never
        return {
            "connect_timeout": max(2, math.ceil(self.config.connect_timeout_s)),
            "application_name": APPLICATION_NAME,
            "keepalives": 1,
            "keepalives_idle": 30,
            "keepalives_interval": 10,
            "keepalives_count": 3,
            "tcp_user_timeout": 60_000,
        }

    async def _configure(self, conn: Conn) -> None:
        timeout_ms = int(self.config.statement_timeout_s * 1000)
        await conn.set_autocommit(True)
        await conn.execute("SELECT set_config('statement_timeout', %s, false)", (str(timeout_ms),))
        await conn.execute(
            sql.SQL("SET search_path TO {}").format(sql.Identifier(self._vector_schema))
        )
        await register_vector_async(conn)
        await conn.set_autocommit(False)

    async def _prepare_database(self) -> None:
        conn = await AsyncConnection.connect(self._url, autocommit=True, **self._connect_kwargs())
        async with conn:
            async with conn.transaction():
                await self._ensure_vector_extension(conn)
            async with conn.transaction():
                await self._migrate(conn, self.catalog, CATALOG_MIGRATIONS, kind="catalog")

    async def _ensure_vector_extension(self, conn: Conn) -> None:
        row = await (await conn.execute(
            "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
            "WHERE e.extname = 'vector'"
        )).fetchone()
        if row is None:
            # processes starting together on a fresh database create it once
            await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('ukr-vector', 0))")
            try:
                await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            except (psycopg.errors.InsufficientPrivilege, psycopg.errors.UndefinedFile,
                    psycopg.errors.FeatureNotSupported) as exc:
                raise StoreSchemaError(
                    f"PostgreSQL {self.location}: the pgvector extension is not installed and "
                    f"cannot be created here ({self._line(exc)}). Install pgvector on the "
                    "server and run `CREATE EXTENSION vector;` as a privileged user"
                ) from exc
            row = await (await conn.execute(
                "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n "
                "ON n.oid = e.extnamespace WHERE e.extname = 'vector'"
            )).fetchone()
        self._vector_schema = str(row[0]) if row else "public"

    async def _close_pool(self) -> None:
        # calls already running get a few seconds to finish; the rest fail with a store error
        running = [t for t in self._inflight if t is not asyncio.current_task()]
        if running:
            _, pending = await asyncio.wait(running, timeout=_CLOSE_GRACE_S)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending, timeout=_CLOSE_GRACE_S)
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    # ----------------------------------------------------------------- schemas

    async def _migrate(
        self, conn: Conn, schema: str, migrations: tuple[PgMigration, ...], *, kind: str
    ) -> list[str]:
        """Create ``schema`` if needed and apply its missing migrations (in a transaction).

        A schema that is already current is only read (no lock, no DDL), so a read-only role
        or a read replica can serve queries.
        """
        ident = sql.Identifier(schema)
        if await self._current(conn, schema, migrations, kind=kind):
            return []
        await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                           (f"ukr-migrate:{schema}",))
        await conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident))
        await conn.execute(sql.SQL("SET LOCAL search_path TO {}, {}").format(
            ident, sql.Identifier(self._vector_schema)))
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            'name text COLLATE "C" PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())'
        )
        rows = await (await conn.execute("SELECT name FROM schema_migrations")).fetchall()
        recorded = {str(r[0]) for r in rows}
        self._check_known(recorded, schema, migrations, kind=kind)
        applied: list[str] = []
        for migration in migrations:
            if migration.name in recorded:
                continue
            for statement in migration.statements:
                await conn.execute(statement.replace("{schema}", ident.as_string(conn)))
            await conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)",
                               (migration.name,))
            applied.append(migration.name)
        if applied:
            logger.info("applied %s migrations %s to %s schema %s", kind, ", ".join(applied),
                        self.location, schema)
        return applied

    async def _current(
        self, conn: Conn, schema: str, migrations: tuple[PgMigration, ...], *, kind: str
    ) -> bool:
        """Return True when ``schema`` records every migration; raise when it records more."""
        ledger = sql.Identifier(schema, "schema_migrations")
        row = await (await conn.execute(
            "SELECT to_regclass(%s)", (ledger.as_string(conn),))).fetchone()
        if row is None or row[0] is None:
            return False
        rows = await (await conn.execute(sql.SQL("SELECT name FROM {}").format(ledger))).fetchall()
        recorded = {str(r[0]) for r in rows}
        self._check_known(recorded, schema, migrations, kind=kind)
        return {m.name for m in migrations} <= recorded

    def _check_known(
        self, recorded: set[str], schema: str, migrations: tuple[PgMigration, ...], *, kind: str
    ) -> None:
        unknown = sorted(recorded - {m.name for m in migrations})
        if unknown:
            raise StoreSchemaError(
                f"PostgreSQL {self.location}: {kind} schema {schema!r} was written by a newer "
                f"version of unified-kg-rag (unknown schema migrations: {', '.join(unknown)}); "
                "upgrade unified-kg-rag to use it"
            )

    async def _index_schema(self, conn: Conn, index: str, *, create: bool) -> str | None:
        known = self._schemas.get(index)
        if known is not None:
            return known
        row = await (await conn.execute(
            sql.SQL("SELECT schema_name FROM {}.indexes WHERE name = %s").format(
                sql.Identifier(self.catalog)), (index,)
        )).fetchone()
        if row is None and not create:
            return None
        schema = str(row[0]) if row is not None else index_schema_name(self.catalog, index)
        await self._migrate(conn, schema, INDEX_MIGRATIONS, kind="index")
        if row is None:
            await conn.execute(
                sql.SQL("INSERT INTO {}.indexes (name, schema_name) VALUES (%s, %s) "
                        "ON CONFLICT (name) DO NOTHING").format(sql.Identifier(self.catalog)),
                (index, schema),
            )
        return schema

    # ----------------------------------------------------------------- transactions

    async def _in_index(
        self, index: str, fn: Callable[[Conn], Awaitable[T]], default: T, *, serialize: bool,
        create: bool,
    ) -> T:
        pool = await self._pool_ready()
        async with pool.connection() as conn, conn.transaction():
            schema = await self._index_schema(conn, index, create=create)
            if schema is None:
                return default
            await conn.execute(sql.SQL("SET LOCAL search_path TO {}, {}").format(
                sql.Identifier(schema), sql.Identifier(self._vector_schema)))
            if serialize:
                await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                                   (f"ukr-write:{schema}",))
            result = await fn(conn)
        self._schemas[index] = schema  # only once the transaction (and any DDL) committed
        return result

    async def _in_catalog(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        pool = await self._pool_ready()
        async with pool.connection() as conn, conn.transaction():
            await conn.execute(sql.SQL("SET LOCAL search_path TO {}, {}").format(
                sql.Identifier(self.catalog), sql.Identifier(self._vector_schema)))
            return await fn(conn)

