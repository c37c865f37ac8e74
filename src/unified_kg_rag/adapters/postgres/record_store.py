"""`RecordStore` on PostgreSQL: text values under (scope, namespace, key).

Values are stored as UTF-8 bytes (``bytea``), so any Python text round-trips, NUL included
(PostgreSQL's text type refuses NUL). A scope that is an index name lives in that index's
schema (``records``), so it goes with the index; a scope starting with ``_`` (``_shared``: the
LLM response cache), which no index name can, lives in the catalog schema's ``records`` table
under its scope.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

from unified_kg_rag.adapters.postgres.database import Conn, PgDatabase

__all__ = ["PgRecordStore"]

T = TypeVar("T")


class PgRecordStore:
    """The records of one scope on a PostgreSQL database.

    Args:
        db: the database of the backend.
        scope: an index name, or a name starting with ``_`` for records shared by indexes.
    """

    def __init__(self, db: PgDatabase, scope: str) -> None:
        self._db = db
        self._scope = scope
        self._shared = scope.startswith("_")
        # (table, extra condition, extra params): the catalog table is keyed by scope too
        self._where = "scope = %s AND " if self._shared else ""
        self._args: tuple[str, ...] = (scope,) if self._shared else ()

    async def _read(self, fn: Callable[[Conn], Awaitable[T]], default: T) -> T:
        if self._shared:
            return await self._db.catalog_tx(fn)
        return await self._db.read_index(self._scope, fn, default)

    async def _write(self, fn: Callable[[Conn], Awaitable[T]], *, create: bool,
                     default: T) -> T:
        if self._shared:
            return await self._db.catalog_tx(fn)
        return await self._db.write_index(self._scope, fn, create=create, default=default)

    async def get(self, namespace: str, key: str) -> str | None:
        """Return the value stored under ``key``, or None."""
        found = await self.get_many(namespace, [key])
        return found.get(key)

    async def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, str]:
        """Return the values of the keys that exist."""

        async def job(conn: Conn) -> dict[str, str]:
            rows = await (await conn.execute(
                f"SELECT key, value FROM records WHERE {self._where}namespace = %s "
                "AND key = ANY(%s)", (*self._args, namespace, list(keys)))).fetchall()
            return {str(k): bytes(v).decode("utf-8", "surrogatepass") for k, v in rows}

        return await self._read(job, {})

    async def put(self, namespace: str, key: str, value: str) -> None:
        """Store ``value`` under ``key`` (replacing any earlier value)."""
        await self.put_many(namespace, {key: value})

    async def put_many(self, namespace: str, items: Mapping[str, str]) -> None:
        """Store several values in one transaction (as UTF-8 bytes: any text round-trips)."""
        if not items:
            return
        keys = list(items)
        values = [items[k].encode("utf-8", "surrogatepass") for k in keys]
        columns = "scope, namespace, key, value" if self._shared else "namespace, key, value"
        selected = "%s, %s, k, v" if self._shared else "%s, k, v"
        conflict = "scope, namespace, key" if self._shared else "namespace, key"

        async def job(conn: Conn) -> None:
            await conn.execute(
                f"INSERT INTO records ({columns}) SELECT {selected} "
                "FROM unnest(%s::text[], %s::bytea[]) AS i(k, v) "
                f"ON CONFLICT ({conflict}) DO UPDATE SET value = excluded.value",
                (*self._args, namespace, keys, values))

        await self._write(job, create=True, default=None)

    async def delete(self, namespace: str, keys: Sequence[str]) -> int:
        """Delete keys; return how many existed."""

        async def job(conn: Conn) -> int:
            cur = await conn.execute(
                f"DELETE FROM records WHERE {self._where}namespace = %s AND key = ANY(%s)",
                (*self._args, namespace, list(keys)))
            return cur.rowcount

        return await self._write(job, create=False, default=0)

    async def count(self, namespace: str) -> int:
        """Return the number of records in ``namespace``."""

        async def job(conn: Conn) -> int:
            row = await (await conn.execute(
                f"SELECT count(*) FROM records WHERE {self._where}namespace = %s",
                (*self._args, namespace))).fetchone()
            return int(row[0]) if row else 0

        return await self._read(job, 0)

    async def keys(self, namespace: str) -> list[str]:
        """Return every key of ``namespace``, sorted by code point (keys use the "C" collation)."""

        async def job(conn: Conn) -> list[str]:
            rows = await (await conn.execute(
                f"SELECT key FROM records WHERE {self._where}namespace = %s ORDER BY key",
                (*self._args, namespace))).fetchall()
            return [str(r[0]) for r in rows]

        return await self._read(job, [])
