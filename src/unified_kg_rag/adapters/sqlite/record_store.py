"""`RecordStore` on SQLite: text values under (scope, namespace, key).

Holds the LLM response cache, extraction records and stage checkpoints. A scope is an index
name or ``_shared``; namespaces separate kinds of records within a scope.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence

from unified_kg_rag.adapters.sqlite.database import SqliteDatabase

__all__ = ["SqliteRecordStore"]

_KEYS = "(SELECT value FROM json_each(?))"


class SqliteRecordStore:
    """The records of one scope in a SQLite file.

    Args:
        db: the database of the backend.
        scope: the scope every call is bound to.
    """

    def __init__(self, db: SqliteDatabase, scope: str) -> None:
        self._db = db
        self._scope = scope

    async def get(self, namespace: str, key: str) -> str | None:
        """Return the value stored under ``key``, or None."""
        found = await self.get_many(namespace, [key])
        return found.get(key)

    async def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, str]:
        """Return the values of the keys that exist."""

        def job(conn: sqlite3.Connection) -> dict[str, str]:
            rows = conn.execute(
                f"SELECT key, value FROM records WHERE scope = ? AND namespace = ? "
                f"AND key IN {_KEYS}",
                (self._scope, namespace, json.dumps(list(keys))),
            )
            return {str(k): str(v) for k, v in rows}

        return await self._db.read(job)

    async def put(self, namespace: str, key: str, value: str) -> None:
        """Store ``value`` under ``key`` (replacing any earlier value)."""
        await self.put_many(namespace, {key: value})

    async def put_many(self, namespace: str, items: Mapping[str, str]) -> None:
        """Store several values in one transaction."""

        def job(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO records (scope, namespace, key, value) VALUES (?, ?, ?, ?)",
                [(self._scope, namespace, k, v) for k, v in items.items()],
            )

        if items:
            await self._db.write(job)

    async def delete(self, namespace: str, keys: Sequence[str]) -> int:
        """Delete keys; return how many existed."""

        def job(conn: sqlite3.Connection) -> int:
            return conn.execute(
                f"DELETE FROM records WHERE scope = ? AND namespace = ? AND key IN {_KEYS}",
                (self._scope, namespace, json.dumps(list(keys))),
            ).rowcount

        return await self._db.write(job)

    async def count(self, namespace: str) -> int:
        """Return the number of records in ``namespace``."""

        def job(conn: sqlite3.Connection) -> int:
            return int(conn.execute(
                "SELECT COUNT(*) FROM records WHERE scope = ? AND namespace = ?",
                (self._scope, namespace),
            ).fetchone()[0])

        return await self._db.read(job)

    async def keys(self, namespace: str) -> list[str]:
        """Return every key of ``namespace``, sorted by code point."""

        def job(conn: sqlite3.Connection) -> list[str]:
            return [str(row[0]) for row in conn.execute(
                "SELECT key FROM records WHERE scope = ? AND namespace = ? ORDER BY key",
                (self._scope, namespace),
            )]

        return await self._db.read(job)
