"""`AccessLog` on SQLite: retrieval counts per (index, collection, item) in ``access_counts``.

Counts are written through a connection of their own (its own thread, `SqliteDatabase`), so
a recorder waiting for another writer's lock (an index job in this or another process) never
holds up the backend's thread that serves queries; counts are read through the backend's
shared connection (WAL: a read never waits for a writer). Each `increment` is one
``BEGIN IMMEDIATE`` transaction of ``INSERT … ON CONFLICT DO UPDATE SET n = n + excluded.n``,
so writers in any number of threads or processes never lose an increment. The table's
delete trigger (migration ``0006_access_counts``) drops the count of a deleted search record.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence

from unified_kg_rag.adapters.search_common import checked_counts
from unified_kg_rag.adapters.sqlite.database import SqliteDatabase
from unified_kg_rag.domain.models import Collection

__all__ = ["SqliteAccessLog"]

_IDS = "(SELECT value FROM json_each(?))"


class SqliteAccessLog:
    """The retrieval counts of one index in a SQLite file.

    Args:
        reader: the backend's database (reads).
        writer: the database the counts are written through (its own connection).
        index: the index name every call is bound to.
    """

    def __init__(self, reader: SqliteDatabase, writer: SqliteDatabase, index: str) -> None:
        self._reader = reader
        self._writer = writer
        self._index = index

    async def increment(self, collection: Collection, counts: Mapping[str, int]) -> None:
        """Add each id's count in one write transaction (see `AccessLog.increment`).

        Raises:
            ValueError: a count is below 1.
            StoreConnectionError: closed, or locked past the busy timeout.
        """
        rows = checked_counts(counts)

        def job(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT INTO access_counts (index_name, collection, item_id, n) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (index_name, collection, item_id) "
                "DO UPDATE SET n = n + excluded.n",
                [(self._index, collection.value, i, n) for i, n in rows],
            )

        if rows:
            await self._writer.write(job)

    async def counts(self, collection: Collection, ids: Sequence[str]) -> dict[str, int]:
        """Return the recorded count of each of ``ids`` that has one."""

        def job(conn: sqlite3.Connection) -> dict[str, int]:
            rows = conn.execute(
                f"SELECT item_id, n FROM access_counts WHERE index_name = ? AND collection = ? "
                f"AND item_id IN {_IDS}",
                (self._index, collection.value, json.dumps(list(ids))),
            )
            return {str(i): int(n) for i, n in rows}

        return await self._reader.read(job) if ids else {}

    async def totals(self) -> dict[str, int]:
        """Return the total recorded per collection."""

        def job(conn: sqlite3.Connection) -> dict[str, int]:
            rows = conn.execute(
                "SELECT collection, SUM(n) FROM access_counts WHERE index_name = ? "
                "GROUP BY collection ORDER BY collection",
                (self._index,),
            )
            return {str(c): int(n) for c, n in rows}

        return await self._reader.read(job)

    async def reset(self) -> int:
        """Delete every count of the index; return how many items had one."""

        def job(conn: sqlite3.Connection) -> int:
            return conn.execute(
                "DELETE FROM access_counts WHERE index_name = ?", (self._index,)
            ).rowcount

        return await self._writer.write(job)
