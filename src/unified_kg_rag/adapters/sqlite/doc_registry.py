"""`DocRegistry` on SQLite: one record per (index, document), diffed by content hash.

The record is stored whole as JSON beside the columns queries filter and order on (source
scope, path, status). `diff` partitions with `domain.index.delta.diff_documents`, so every backend
partitions alike.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence

from unified_kg_rag.adapters.sqlite.database import SqliteDatabase
from unified_kg_rag.domain.index.delta import diff_documents
from unified_kg_rag.domain.index.write_lease import next_lease, renewed_lease
from unified_kg_rag.domain.models import DocRecord, DocumentDelta, Lease

__all__ = ["SqliteDocRegistry"]

_IDS = "(SELECT value FROM json_each(?))"


class SqliteDocRegistry:
    """The doc registry of one index name in a SQLite file.

    Args:
        db: the database of the backend.
        index: the index name every call is bound to.
    """

    def __init__(self, db: SqliteDatabase, index: str) -> None:
        self._db = db
        self._index = index

    async def get(self, document_ids: Sequence[str]) -> dict[str, DocRecord]:
        """Return the records of these documents that exist, keyed by id."""

        def job(conn: sqlite3.Connection) -> dict[str, DocRecord]:
            rows = conn.execute(
                f"SELECT document_id, data FROM doc_records WHERE index_name = ? "
                f"AND document_id IN {_IDS}",
                (self._index, json.dumps(list(document_ids))),
            )
            return {row[0]: DocRecord.model_validate_json(row[1]) for row in rows}

        return await self._db.read(job)

    async def list_records(self, source_scope: str | None = None) -> list[DocRecord]:
        """Return every record (of one source scope when given), ordered by path then id."""
        return await self._db.read(lambda conn: self._records(conn, source_scope))

    def _records(self, conn: sqlite3.Connection, source_scope: str | None) -> list[DocRecord]:
        rows = conn.execute(
            "SELECT data FROM doc_records WHERE index_name = ? "
            "AND (? IS NULL OR source_scope = ?) ORDER BY path, document_id",
            (self._index, source_scope, source_scope),
        )
        return [DocRecord.model_validate_json(row[0]) for row in rows]

    async def diff(self, source_scope: str, current: Mapping[str, str]) -> DocumentDelta:
        """Diff a scope's documents against the registry (`domain.index.delta.diff_documents`).

        Args:
            source_scope: the scope whose stored records are compared.
            current: ``document_id -> content_hash`` of the documents found now.
        """
        records = await self._db.read(lambda conn: self._records(conn, source_scope))
        return diff_documents(records, current)

    async def put(self, records: Sequence[DocRecord]) -> None:
        """Insert or replace records by document id."""

        def job(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO doc_records "
                "(index_name, document_id, source_scope, path, status, data) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(self._index, r.document_id, r.source_scope, r.path, r.status.value,
                  r.model_dump_json()) for r in records],
            )

        if records:
            await self._db.write(job)

    async def delete(self, document_ids: Sequence[str]) -> int:
        """Delete records; return how many existed."""

        def job(conn: sqlite3.Connection) -> int:
            return conn.execute(
                f"DELETE FROM doc_records WHERE index_name = ? AND document_id IN {_IDS}",
                (self._index, json.dumps(list(document_ids))),
            ).rowcount

        return await self._db.write(job)

    async def status_counts(self) -> dict[str, int]:
        """Return the number of documents per status (statuses with none are absent)."""

        def job(conn: sqlite3.Connection) -> dict[str, int]:
            rows = conn.execute(
                "SELECT status, COUNT(*) FROM doc_records WHERE index_name = ? "
                "GROUP BY status ORDER BY status",
                (self._index,),
            )
            return {str(status): int(n) for status, n in rows}

        return await self._db.read(job)

    # ----------------------------------------------------------------- single-writer lease

    async def acquire_lease(self, holder: str, ttl_s: float) -> Lease:
        """Take or renew the index's lease (`write_lease.next_lease`) in one write transaction.

        The clock is this machine's (SQLite is local). A SQLite write transaction is short,
        so the call waits at most for one batch commit of another process.

        Raises:
            BuildInProgress: another holder's lease has not lapsed.
            ValueError: ``ttl_s`` is not positive.
        """
        return await self._db.write(lambda conn: self._take(conn, holder, ttl_s, renew=False))

    async def renew_lease(self, holder: str, ttl_s: float) -> Lease:
        """Extend ``holder``'s lease (`write_lease.renewed_lease`) in one write transaction.

        Raises:
            LeaseLostError: ``holder`` no longer holds it.
        """
        return await self._db.write(lambda conn: self._take(conn, holder, ttl_s, renew=True))

    def _take(self, conn: sqlite3.Connection, holder: str, ttl_s: float, *, renew: bool) -> Lease:
        rule = renewed_lease if renew else next_lease
        lease = rule(self._index, self._lease(conn), holder, time.time(), ttl_s)
        conn.execute(
            "INSERT OR REPLACE INTO leases (index_name, holder, acquired_at, expires_at) "
            "VALUES (?, ?, ?, ?)",
            (self._index, lease.holder, lease.acquired_at, lease.expires_at),
        )
        return lease

    async def release_lease(self, holder: str) -> bool:
        """Give the lease up if ``holder`` holds it; return whether it did."""

        def job(conn: sqlite3.Connection) -> bool:
            return conn.execute(
                "DELETE FROM leases WHERE index_name = ? AND holder = ?", (self._index, holder)
            ).rowcount > 0

        return await self._db.write(job)

    async def get_lease(self) -> Lease | None:
        """Return the current lease (lapsed or not), if any."""
        return await self._db.read(self._lease)

    def _lease(self, conn: sqlite3.Connection) -> Lease | None:
        row = conn.execute(
            "SELECT holder, acquired_at, expires_at FROM leases WHERE index_name = ?",
            (self._index,),
        ).fetchone()
        if row is None:
            return None
        return Lease(holder=row[0], acquired_at=row[1], expires_at=row[2])
