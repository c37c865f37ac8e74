"""`PostgresBackend`: the store ports of every index on one PostgreSQL + pgvector database.

The backend owns one `PgDatabase` (a connection pool on its own event-loop thread); the ports
it hands out are light views bound to an index name (or a record scope) and share it. Nothing
connects until the first call; the first call checks the server, creates the ``vector``
extension when allowed, and migrates the catalog schema (see `migrations`).
"""

from __future__ import annotations

from types import TracebackType

from psycopg import sql

from unified_kg_rag.adapters.postgres.access_log import PgAccessLog
from unified_kg_rag.adapters.postgres.database import Conn, PgDatabase
from unified_kg_rag.adapters.postgres.doc_registry import PgDocRegistry
from unified_kg_rag.adapters.postgres.graph_store import PgGraphStore
from unified_kg_rag.adapters.postgres.record_store import PgRecordStore
from unified_kg_rag.adapters.postgres.search_index import PgSearchIndex
from unified_kg_rag.config.models import PostgresConfig

__all__ = ["PostgresBackend"]


class PostgresBackend:
    """A `StoreBackend` on a PostgreSQL database with the pgvector extension.

    Args:
        url: libpq connection URL, e.g. ``postgresql://user:pw@host:5432/db?sslmode=require``.
        config: the ``stores.postgres`` section (its ``url`` is not read; pass it here).

    Use as ``async with PostgresBackend(url) as backend: ...``, or call `aclose` (or `close`
    from synchronous code) to close the pool.
    """

    def __init__(self, url: str, config: PostgresConfig | None = None) -> None:
        self._db = PgDatabase(url, config or PostgresConfig())

    @property
    def location(self) -> str:
        """The server and database, as ``postgresql://user@host:port/db`` (no password)."""
        return self._db.location

    @property
    def database(self) -> PgDatabase:
        """The shared database object (pool, schemas); for tests and benchmarks."""
        return self._db

    def search_index(self, index: str) -> PgSearchIndex:
        """Return the search index of ``index``."""
        return PgSearchIndex(self._db, index)

    def graph_store(self, index: str) -> PgGraphStore:
        """Return the graph store of ``index``."""
        return PgGraphStore(self._db, index)

    def doc_registry(self, index: str) -> PgDocRegistry:
        """Return the doc registry of ``index``."""
        return PgDocRegistry(self._db, index)

    def record_store(self, scope: str) -> PgRecordStore:
        """Return the record store of ``scope`` (an index name, or ``_shared``)."""
        return PgRecordStore(self._db, scope)

    def access_log(self, index: str) -> PgAccessLog:
        """Return the retrieval counts of ``index``."""
        return PgAccessLog(self._db, index)

    async def list_indexes(self) -> list[str]:
        """Return the names of indexes holding any doc-registry or search record, sorted.

        Raises:
            StoreConnectionError: the server cannot be reached or the backend is closed.
        """

        async def job(conn: Conn) -> list[str]:
            rows = await (await conn.execute(
                "SELECT name, schema_name FROM indexes ORDER BY name")).fetchall()
            if not rows:
                return []
            probes = [
                sql.SQL("SELECT {name} WHERE EXISTS (SELECT 1 FROM {s}.doc_records) "
                        "OR EXISTS (SELECT 1 FROM {s}.search_records)").format(
                    name=sql.Literal(str(name)), s=sql.Identifier(str(schema)))
                for name, schema in rows
            ]
            found = await (await conn.execute(sql.SQL(" UNION ALL ").join(probes))).fetchall()
            return sorted(str(r[0]) for r in found)

        return await self._db.catalog_tx(job)

    async def aclose(self) -> None:
        """Close the pool and stop its thread. Idempotent.

        Any later call on this backend or its ports raises `StoreConnectionError`.
        """
        await self._db.close()

    def close(self) -> None:
        """Close the pool from synchronous code (no event loop running here). Idempotent."""
        self._db.close_sync()

    async def __aenter__(self) -> PostgresBackend:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
