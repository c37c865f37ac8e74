"""`DocRegistry` on PostgreSQL: one row per document of the index, diffed by content hash.

The record is stored whole as JSON beside the columns queries filter and order on (source
scope, path, status). `diff` partitions with `domain.index.delta.diff_documents`, so every backend
partitions alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from unified_kg_rag.adapters.postgres.database import Conn, PgDatabase
from unified_kg_rag.domain.index.delta import diff_documents
from unified_kg_rag.domain.index.write_lease import next_lease, renewed_lease
from unified_kg_rag.domain.models import DocRecord, DocumentDelta, Lease
from unified_kg_rag.util.errors import StoreError

__all__ = ["PgDocRegistry"]


class PgDocRegistry:
    """The doc registry of one index name on a PostgreSQL database.

    Args:
        db: the database of the backend.
        index: the index name every call is bound to.
    """

    def __init__(self, db: PgDatabase, index: str) -> None:
        self._db = db
        self._index = index

    async def get(self, document_ids: Sequence[str]) -> dict[str, DocRecord]:
        """Return the records of these documents that exist, keyed by id."""

        async def job(conn: Conn) -> dict[str, DocRecord]:
            rows = await (await conn.execute(
                "SELECT document_id, data FROM doc_records WHERE document_id = ANY(%s)",
                (list(document_ids),))).fetchall()
            return {str(r[0]): DocRecord.model_validate_json(r[1]) for r in rows}

        return await self._db.read_index(self._index, job, {})

    async def list_records(self, source_scope: str | None = None) -> list[DocRecord]:
        """Return every record (of one source scope when given), ordered by path then id."""

        async def job(conn: Conn) -> list[DocRecord]:
            rows = await (await conn.execute(
                "SELECT data FROM doc_records WHERE %(scope)s::text IS NULL "
                "OR source_scope = %(scope)s ORDER BY path, document_id",
                {"scope": source_scope})).fetchall()
            return [DocRecord.model_validate_json(r[0]) for r in rows]

        return await self._db.read_index(self._index, job, [])

    async def diff(self, source_scope: str, current: Mapping[str, str]) -> DocumentDelta:
        """Diff a scope's documents against the registry (`domain.index.delta.diff_documents`).

        Args:
            source_scope: the scope whose stored records are compared.
            current: ``document_id -> content_hash`` of the documents found now.
        """
        return diff_documents(await self.list_records(source_scope), current)

    async def put(self, records: Sequence[DocRecord]) -> None:
        """Insert or replace records by document id (the last of repeated ids wins)."""
        if not records:
            return
        latest = list({r.document_id: r for r in records}.values())

        async def job(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO doc_records (document_id, source_scope, path, status, data) "
                "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[], "
                "%s::text[]) ON CONFLICT (document_id) DO UPDATE SET "
                "source_scope = excluded.source_scope, path = excluded.path, "
                "status = excluded.status, data = excluded.data",
                ([r.document_id for r in latest], [r.source_scope for r in latest],
                 [r.path for r in latest], [r.status.value for r in latest],
                 [r.model_dump_json() for r in latest]))

        await self._db.write_index(self._index, job)

    async def delete(self, document_ids: Sequence[str]) -> int:
        """Delete records; return how many existed."""

        async def job(conn: Conn) -> int:
            cur = await conn.execute("DELETE FROM doc_records WHERE document_id = ANY(%s)",
                                     (list(document_ids),))
            return cur.rowcount

        return await self._db.write_index(self._index, job, create=False, default=0)

    async def status_counts(self) -> dict[str, int]:
        """Return the number of documents per status (statuses with none are absent)."""

        async def job(conn: Conn) -> dict[str, int]:
            rows = await (await conn.execute(
                "SELECT status, count(*) FROM doc_records GROUP BY status ORDER BY status"
            )).fetchall()
            return {str(status): int(n) for status, n in rows}

        return await self._db.read_index(self._index, job, {})

    # ----------------------------------------------------------------- single-writer lease

    async def acquire_lease(self, holder: str, ttl_s: float) -> Lease:
        """Take or renew the index's lease (`domain.index.write_lease.next_lease`).

        One transaction: the lease row is locked ``FOR UPDATE`` (so two runs asking at once
        are decided one after the other) and timed by the server's clock (so machines with
        skewed clocks agree). It does not queue behind the holder's data writes, so a second
        run fails at once.

        Raises:
            BuildInProgress: another holder's lease has not lapsed.
            ValueError: ``ttl_s`` is not positive.
        """
        return await self._db.write_index(
            self._index, lambda conn: self._take(conn, holder, ttl_s, renew=False),
            serialize=False)

    async def renew_lease(self, holder: str, ttl_s: float) -> Lease:
        """Extend ``holder``'s lease (`write_lease.renewed_lease`), row locked, server time.

        Raises:
            LeaseLostError: ``holder`` no longer holds it.
        """
        return await self._db.write_index(
            self._index, lambda conn: self._take(conn, holder, ttl_s, renew=True),
            serialize=False)

    async def _take(self, conn: Conn, holder: str, ttl_s: float, *, renew: bool) -> Lease:
        await conn.execute(
            "INSERT INTO lease (holder, acquired_at, expires_at) VALUES ('', 0, 0) "
            "ON CONFLICT (singleton) DO NOTHING")
        row = await (await conn.execute(
            "SELECT holder, acquired_at, expires_at, "
            "extract(epoch FROM clock_timestamp())::float8 FROM lease FOR UPDATE"
        )).fetchone()
        if row is None:  # pragma: no cover - the row was inserted above
            raise StoreError(f"index {self._index!r}: the lease row is missing")
        current = Lease(holder=row[0], acquired_at=row[1], expires_at=row[2]) if row[0] \
            else None
        rule = renewed_lease if renew else next_lease
        lease = rule(self._index, current, holder, float(row[3]), ttl_s)
        await conn.execute(
            "UPDATE lease SET holder = %s, acquired_at = %s, expires_at = %s",
            (lease.holder, lease.acquired_at, lease.expires_at))
        return lease

    async def release_lease(self, holder: str) -> bool:
        """Give the lease up if ``holder`` holds it; return whether it did."""

        async def job(conn: Conn) -> bool:
            cur = await conn.execute("DELETE FROM lease WHERE holder = %s", (holder,))
            return cur.rowcount > 0

        return await self._db.write_index(
            self._index, job, create=False, default=False, serialize=False)

    async def get_lease(self) -> Lease | None:
        """Return the current lease (lapsed or not), if any."""

        async def job(conn: Conn) -> Lease | None:
            row = await (await conn.execute(
                "SELECT holder, acquired_at, expires_at FROM lease WHERE holder <> ''"
            )).fetchone()
            return None if row is None else Lease(holder=row[0], acquired_at=row[1],
                                                  expires_at=row[2])

        return await self._db.read_index(self._index, job, None)
