"""`GraphStore` on SQLite: entities, relationships, communities, reports and their lineage.

Each item is stored whole as JSON (``data``) beside the columns queries use: relationship
endpoints (indexed both ways, for k-hop expansion) and community levels. The ``lineage`` side
table holds one row per (item, cited text unit), indexed by text unit, so `citing` is one
indexed lookup. Id lists travel as one JSON parameter (``json_each``), so any length works.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TypeVar

from pydantic import BaseModel

from unified_kg_rag.adapters.sqlite.database import SqliteDatabase
from unified_kg_rag.domain.models import Community, CommunityReport, Entity, Relationship, Subgraph

__all__ = ["SqliteGraphStore"]

M = TypeVar("M", bound=BaseModel)

_IDS = "(SELECT value FROM json_each(?))"


def _ids(ids: Sequence[str] | set[str]) -> str:
    return json.dumps(list(ids))


class SqliteGraphStore:
    """The graph of one index name in a SQLite file.

    Args:
        db: the database of the backend.
        index: the index name every call is bound to.
    """

    def __init__(self, db: SqliteDatabase, index: str) -> None:
        self._db = db
        self._index = index

    # ----------------------------------------------------------------- helpers (db thread)

    def _fetch(
        self, conn: sqlite3.Connection, table: str, key: str, ids: Sequence[str], model: type[M]
    ) -> list[M]:
        rows = conn.execute(
            f"SELECT {key}, data FROM {table} WHERE index_name = ? AND {key} IN {_IDS}",
            (self._index, _ids(ids)),
        )
        found = {row[0]: model.model_validate_json(row[1]) for row in rows}
        return [found[i] for i in ids if i in found]

    def _delete(self, conn: sqlite3.Connection, table: str, key: str, ids: Sequence[str]) -> int:
        cursor = conn.execute(
            f"DELETE FROM {table} WHERE index_name = ? AND {key} IN {_IDS}",
            (self._index, _ids(ids)),
        )
        return cursor.rowcount

    def _set_lineage(
        self, conn: sqlite3.Connection, kind: str, items: Sequence[tuple[str, Sequence[str]]]
    ) -> None:
        self._delete_lineage(conn, kind, [item_id for item_id, _ in items])
        conn.executemany(
            "INSERT OR IGNORE INTO lineage (index_name, item_kind, item_id, text_unit_id) "
            "VALUES (?, ?, ?, ?)",
            [(self._index, kind, item_id, unit) for item_id, units in items for unit in units],
        )

    def _delete_lineage(self, conn: sqlite3.Connection, kind: str, ids: Sequence[str]) -> None:
        conn.execute(
            f"DELETE FROM lineage WHERE index_name = ? AND item_kind = ? AND item_id IN {_IDS}",
            (self._index, kind, _ids(ids)),
        )

    # ----------------------------------------------------------------- entities, relationships

    async def upsert_entities(self, entities: Sequence[Entity]) -> None:
        """Insert or replace entities by id."""

        def job(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO entities (index_name, id, data) VALUES (?, ?, ?)",
                [(self._index, e.id, e.model_dump_json()) for e in entities],
            )
            self._set_lineage(conn, "entity", [(e.id, e.text_unit_ids) for e in entities])

        if entities:
            await self._db.write(job)

    async def upsert_relationships(self, relationships: Sequence[Relationship]) -> None:
        """Insert or replace relationships by id (endpoints need not exist yet)."""

        def job(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO relationships "
                "(index_name, id, source_id, target_id, weight, data) VALUES (?, ?, ?, ?, ?, ?)",
                [(self._index, r.id, r.source_id, r.target_id, r.weight, r.model_dump_json())
                 for r in relationships],
            )
            lineage = [(r.id, r.text_unit_ids) for r in relationships]
            self._set_lineage(conn, "relationship", lineage)

        if relationships:
            await self._db.write(job)

    async def delete_entities(self, ids: Sequence[str]) -> int:
        """Delete entities and every relationship touching them; return entities deleted."""

        def job(conn: sqlite3.Connection) -> int:
            incident = [row[0] for row in conn.execute(
                f"SELECT id FROM relationships INDEXED BY relationships_source "
                f"WHERE index_name = ? AND source_id IN {_IDS} UNION SELECT id FROM relationships "
                f"INDEXED BY relationships_target WHERE index_name = ? AND target_id IN {_IDS}",
                (self._index, _ids(ids), self._index, _ids(ids)),
            )]
            self._delete(conn, "relationships", "id", incident)
            self._delete_lineage(conn, "relationship", incident)
            self._delete_lineage(conn, "entity", ids)
            return self._delete(conn, "entities", "id", ids)

        return await self._db.write(job)

    async def delete_relationships(self, ids: Sequence[str]) -> int:
        """Delete relationships by id; return how many existed."""

        def job(conn: sqlite3.Connection) -> int:
            self._delete_lineage(conn, "relationship", ids)
            return self._delete(conn, "relationships", "id", ids)

        return await self._db.write(job)

    async def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        """Return the stored entities with these ids, in the order of ``ids``."""
        return await self._db.read(lambda conn: self._fetch(conn, "entities", "id", ids, Entity))

    async def get_relationships(self, ids: Sequence[str]) -> list[Relationship]:
        """Return the stored relationships with these ids, in the order of ``ids``."""
        return await self._db.read(
            lambda conn: self._fetch(conn, "relationships", "id", ids, Relationship)
        )

    # ----------------------------------------------------------------- traversal

    async def neighbourhood(
        self, seed_ids: Sequence[str], *, hops: int, max_entities: int
    ) -> Subgraph:
        """Return the stored entities within ``hops`` edges of the seeds (either direction).

        Breadth-first: seeds first (in the given order), then each hop's new entities ordered
        by the highest weight of an edge reaching them from the previous hop, then by id;
        stops adding at ``max_entities``. Relationships are those among the returned entities,
        ordered by id. Relationships to entities that are not stored are not followed.

        Raises:
            ValueError: ``hops`` or ``max_entities`` is negative.
        """
        if hops < 0 or max_entities < 0:
            raise ValueError("hops and max_entities must be non-negative")

        def job(conn: sqlite3.Connection) -> Subgraph:
            stored = self._stored_entity_ids(conn, list(dict.fromkeys(seed_ids)))
            order = [s for s in dict.fromkeys(seed_ids) if s in stored][:max_entities]
            visited, frontier = set(order), order
            for _ in range(hops):
                if not frontier or len(order) >= max_entities:
                    break
                best = self._reachable(conn, frontier, visited)
                found = self._stored_entity_ids(conn, list(best))
                ranked = sorted(found, key=lambda e: (-best[e], e))[: max_entities - len(order)]
                order += ranked
                visited.update(ranked)
                frontier = ranked
            entities = self._fetch(conn, "entities", "id", order, Entity)
            edges = self._within(conn, order)
            return Subgraph(entities=tuple(entities), relationships=tuple(edges))

        return await self._db.read(job)

    def _stored_entity_ids(self, conn: sqlite3.Connection, ids: list[str]) -> set[str]:
        return {row[0] for row in conn.execute(
            f"SELECT id FROM entities WHERE index_name = ? AND id IN {_IDS}",
            (self._index, _ids(ids)),
        )}

    def _reachable(
        self, conn: sqlite3.Connection, frontier: list[str], visited: set[str]
    ) -> dict[str, float]:
        """Return ``entity -> best edge weight`` of unvisited neighbours of ``frontier``."""
        best: dict[str, float] = {}
        rows = conn.execute(
            # INDEXED BY: the planner cannot size json_each and would scan every relationship
            # of the index through the primary key (50 ms a hop on 17,000 relationships)
            f"SELECT target_id, weight FROM relationships INDEXED BY relationships_source "
            f"WHERE index_name = ? AND source_id IN {_IDS} UNION ALL SELECT source_id, weight "
            f"FROM relationships INDEXED BY relationships_target "
            f"WHERE index_name = ? AND target_id IN {_IDS}",
            (self._index, _ids(frontier), self._index, _ids(frontier)),
        )
        for neighbour, weight in rows:
            if neighbour not in visited and weight > best.get(neighbour, float("-inf")):
                best[neighbour] = float(weight)
        return best

    def _within(self, conn: sqlite3.Connection, entity_ids: Sequence[str]) -> list[Relationship]:
        rows = conn.execute(
            f"SELECT data FROM relationships INDEXED BY relationships_source "
            f"WHERE index_name = ? AND source_id IN {_IDS} AND target_id IN {_IDS} ORDER BY id",
            (self._index, _ids(entity_ids), _ids(entity_ids)),
        )
        return [Relationship.model_validate_json(row[0]) for row in rows]

    async def edges_within(self, entity_ids: Sequence[str]) -> list[Relationship]:
        """Return every relationship whose both endpoints are in ``entity_ids``, ordered by id."""
        return await self._db.read(lambda conn: self._within(conn, entity_ids))

    async def citing(self, text_unit_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Return ``(entity_ids, relationship_ids)`` citing any of these units, each sorted."""

        def job(conn: sqlite3.Connection) -> tuple[list[str], list[str]]:
            rows = conn.execute(
                f"SELECT DISTINCT item_kind, item_id FROM lineage INDEXED BY lineage_text_unit "
                f"WHERE index_name = ? AND text_unit_id IN {_IDS} ORDER BY item_kind, item_id",
                (self._index, _ids(text_unit_ids)),
            ).fetchall()
            return (
                [item for kind, item in rows if kind == "entity"],
                [item for kind, item in rows if kind == "relationship"],
            )

        return await self._db.read(job)

    # ----------------------------------------------------------------- communities, reports

    async def upsert_communities(self, communities: Sequence[Community]) -> None:
        """Insert or replace communities by id."""

        def job(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO communities (index_name, id, level, data) "
                "VALUES (?, ?, ?, ?)",
                [(self._index, c.id, c.level, c.model_dump_json()) for c in communities],
            )

        if communities:
            await self._db.write(job)

    async def get_communities(self, level: int | None = None) -> list[Community]:
        """Return communities (of one level when given), ordered by level then id."""

        def job(conn: sqlite3.Connection) -> list[Community]:
            rows = conn.execute(
                "SELECT data FROM communities WHERE index_name = ? AND (? IS NULL OR level = ?) "
                "ORDER BY level, id",
                (self._index, level, level),
            )
            return [Community.model_validate_json(row[0]) for row in rows]

        return await self._db.read(job)

    async def communities_of(self, entity_ids: Sequence[str]) -> list[Community]:
        """Return the communities holding any of these entities (every level), by level, id.

        The members are matched in SQL: only the communities found are decoded.
        """

        def job(conn: sqlite3.Connection) -> list[Community]:
            rows = conn.execute(
                "SELECT data FROM communities WHERE index_name = ? AND EXISTS (SELECT 1 FROM "
                f"json_each(data, '$.member_ids') AS m WHERE m.value IN {_IDS}) "
                "ORDER BY level, id",
                (self._index, _ids(entity_ids)),
            )
            return [Community.model_validate_json(row[0]) for row in rows]

        return await self._db.read(job) if entity_ids else []

    async def delete_communities(self, ids: Sequence[str]) -> int:
        """Delete communities (and their reports) by id; return how many existed."""

        def job(conn: sqlite3.Connection) -> int:
            self._delete(conn, "reports", "community_id", ids)
            return self._delete(conn, "communities", "id", ids)

        return await self._db.write(job)

    async def upsert_reports(self, reports: Sequence[CommunityReport]) -> None:
        """Insert or replace community reports by community id."""

        def job(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO reports (index_name, community_id, data) VALUES (?, ?, ?)",
                [(self._index, r.community_id, r.model_dump_json()) for r in reports],
            )

        if reports:
            await self._db.write(job)

    async def get_reports(self, community_ids: Sequence[str]) -> list[CommunityReport]:
        """Return the reports of these communities, in the order of ``community_ids``."""
        return await self._db.read(
            lambda conn: self._fetch(conn, "reports", "community_id", community_ids,
                                     CommunityReport)
        )

    async def counts(self) -> dict[str, int]:
        """Return item counts: ``entities``, ``relationships``, ``communities``, ``reports``."""

        def job(conn: sqlite3.Connection) -> dict[str, int]:
            return {
                table: int(conn.execute(
                    f"SELECT COUNT(*) FROM {table} WHERE index_name = ?", (self._index,)
                ).fetchone()[0])
                for table in ("entities", "relationships", "communities", "reports")
            }

        return await self._db.read(job)
