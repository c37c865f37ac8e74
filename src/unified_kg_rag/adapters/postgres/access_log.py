"""`AccessLog` on PostgreSQL: retrieval counts in the index schema's ``access_counts``.

An increment is one transaction of ``INSERT … SELECT FROM unnest(...) ON CONFLICT DO UPDATE
SET n = access_counts.n + excluded.n`` over the batch sorted by id (concurrent batches lock
rows in one order: no deadlock), so no increment is lost however many processes record. It
does not take the index's writer advisory lock (``serialize=False``): recording never waits
for an index job, and an index job never waits for recording. An index that does not exist
records nothing. The schema's delete trigger (migration ``0003_access_counts``) drops the
counts of deleted search records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from unified_kg_rag.adapters.postgres.database import Conn, PgDatabase
from unified_kg_rag.adapters.search_common import checked_counts
from unified_kg_rag.domain.models import Collection

__all__ = ["PgAccessLog"]


class PgAccessLog:
    """The retrieval counts of one index on a PostgreSQL database.

    Args:
        db: the database of the backend.
        index: the index name every call is bound to.
    """

    def __init__(self, db: PgDatabase, index: str) -> None:
        self._db = db
        self._index = index

    async def increment(self, collection: Collection, counts: Mapping[str, int]) -> None:
        """Add each id's count in one transaction (see `AccessLog.increment`).

        Raises:
            ValueError: a count is below 1.
            StoreConnectionError: the server cannot be reached or the backend is closed.
        """
        rows = checked_counts(counts)
        if not rows:
            return

        async def job(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO access_counts (collection, item_id, n) "
                "SELECT %s, i, n FROM unnest(%s::text[], %s::bigint[]) AS u(i, n) "
                "ON CONFLICT (collection, item_id) DO UPDATE SET n = access_counts.n + excluded.n",
                (collection.value, [i for i, _ in rows], [n for _, n in rows]))

        await self._db.write_index(self._index, job, create=False, serialize=False)

    async def counts(self, collection: Collection, ids: Sequence[str]) -> dict[str, int]:
        """Return the recorded count of each of ``ids`` that has one."""

        async def job(conn: Conn) -> dict[str, int]:
            rows = await (await conn.execute(
                "SELECT item_id, n FROM access_counts WHERE collection = %s AND item_id = ANY(%s)",
                (collection.value, list(ids)))).fetchall()
            return {str(i): int(n) for i, n in rows}

        return await self._db.read_index(self._index, job, {}) if ids else {}

    async def totals(self) -> dict[str, int]:
        """Return the total recorded per collection."""

        async def job(conn: Conn) -> dict[str, int]:
            rows = await (await conn.execute(
                "SELECT collection, sum(n) FROM access_counts GROUP BY collection "
                "ORDER BY collection")).fetchall()
            return {str(c): int(n) for c, n in rows}

        return await self._db.read_index(self._index, job, {})

    async def reset(self) -> int:
        """Delete every count of the index; return how many items had one."""

        async def job(conn: Conn) -> int:
            return (await conn.execute("DELETE FROM access_counts")).rowcount

        return await self._db.write_index(self._index, job, create=False, default=0,
                                          serialize=False)  # fmt: skip
