"""`SqliteBackend`: the store ports of every index in one SQLite file (the default backend).

The backend owns one `SqliteDatabase` (one connection on one thread); the ports it hands out
are light views bound to an index name (or a record scope) and share that database, so every
write through any of them is visible to all. Nothing is opened until the first call, and the
file is created by the first write.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import TracebackType

from unified_kg_rag.adapters.sqlite.access_log import SqliteAccessLog
from unified_kg_rag.adapters.sqlite.ann import AnnIndexes
from unified_kg_rag.adapters.sqlite.database import SqliteDatabase
from unified_kg_rag.adapters.sqlite.doc_registry import SqliteDocRegistry
from unified_kg_rag.adapters.sqlite.graph_store import SqliteGraphStore
from unified_kg_rag.adapters.sqlite.record_store import SqliteRecordStore
from unified_kg_rag.adapters.sqlite.search_index import SqliteSearchIndex
from unified_kg_rag.config.models import SqliteConfig

__all__ = ["SqliteBackend"]


class SqliteBackend:
    """A `StoreBackend` on one SQLite database file (WAL mode).

    Args:
        path: the database file; it and its parent directory are created on the first write.
        config: the ``stores.sqlite`` section (``busy_timeout_s`` and ``ann`` are used;
            ``path`` is not, the caller resolves it).

    Use as ``async with SqliteBackend(path) as backend: ...`` or call `aclose`.
    """

    def __init__(self, path: Path, config: SqliteConfig | None = None) -> None:
        config = config or SqliteConfig()
        self._db = SqliteDatabase(Path(path), busy_timeout_s=config.busy_timeout_s)
        self._access_db = SqliteDatabase(Path(path), busy_timeout_s=config.busy_timeout_s)
        """The access counts' own connection (`SqliteAccessLog`); opened on its first write."""
        self._ann = AnnIndexes(Path(path), config.ann)
        """The HNSW indexes of large collections, shared by every search-index view."""

    @property
    def location(self) -> str:
        """The database file path."""
        return str(self._db.path)

    def search_index(self, index: str) -> SqliteSearchIndex:
        """Return the search index of ``index``."""
        return SqliteSearchIndex(self._db, index, self._ann)

    def graph_store(self, index: str) -> SqliteGraphStore:
        """Return the graph store of ``index``."""
        return SqliteGraphStore(self._db, index)

    def doc_registry(self, index: str) -> SqliteDocRegistry:
        """Return the doc registry of ``index``."""
        return SqliteDocRegistry(self._db, index)

    def record_store(self, scope: str) -> SqliteRecordStore:
        """Return the record store of ``scope`` (an index name, or ``_shared``)."""
        return SqliteRecordStore(self._db, scope)

    def access_log(self, index: str) -> SqliteAccessLog:
        """Return the retrieval counts of ``index`` (written through their own connection)."""
        return SqliteAccessLog(self._db, self._access_db, index)

    async def list_indexes(self) -> list[str]:
        """Return the names of indexes holding any doc-registry or search record, sorted.

        Creates nothing: a database file that does not exist yet holds no index.

        Raises:
            StoreConnectionError: the backend is closed or the file cannot be opened.
        """

        def job(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute(
                "SELECT DISTINCT index_name FROM doc_records UNION "
                "SELECT DISTINCT index_name FROM search_records ORDER BY 1"
            )
            return [str(row[0]) for row in rows]

        return await self._db.read(job)

    async def aclose(self) -> None:
        """Close the connection and stop the database thread. Idempotent.

        Any later call on this backend or its ports raises `StoreConnectionError`.
        """
        await self._access_db.close()
        await self._db.close()

    async def __aenter__(self) -> SqliteBackend:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
