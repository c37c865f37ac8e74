"""`GraphStore` on PostgreSQL: entity/relationship tables, lineage, communities, reports.

Items are stored whole (the model's JSON in ``data``) beside the columns queries use:
relationship endpoints, indexed both ways, and community levels. ``lineage`` has one row per
(item, cited text unit), indexed by text unit, so `citing` is one index lookup.

`neighbourhood` is one recursive CTE: each step carries the frontier and the entities chosen
so far, ranks the unvisited stored neighbours of the frontier by their best edge weight (then
id) and keeps as many as the remaining budget allows, so the walk never grows past
``max_entities`` and the result is the SQLite store's, in one round trip. `edges_within` is
one query over the endpoint indexes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from psycopg import sql
from pydantic import BaseModel

from unified_kg_rag.adapters.postgres.database import Conn, PgDatabase
from unified_kg_rag.domain.models import Community, CommunityReport, Entity, Relationship, Subgraph

__all__ = ["PgGraphStore"]

M = TypeVar("M", bound=BaseModel)

_WALK = """
WITH RECURSIVE walk(depth, frontier, chosen) AS (
    SELECT 0, seeds.ids, seeds.ids FROM (
        SELECT coalesce(array_agg(s.id ORDER BY s.n), '{}') AS ids FROM (
            SELECT e.id, o.n FROM unnest(%(seeds)s::text[]) WITH ORDINALITY AS o(id, n)
            JOIN entities AS e ON e.id = o.id ORDER BY o.n LIMIT %(budget)s
        ) AS s
    ) AS seeds
  UNION ALL
    SELECT w.depth + 1, nxt.ids, w.chosen || nxt.ids
    FROM walk AS w CROSS JOIN LATERAL (
        SELECT coalesce(array_agg(c.id ORDER BY c.best DESC, c.id), '{}') AS ids FROM (
            SELECT x.id, max(x.weight) AS best FROM (
                SELECT r.target_id AS id, r.weight FROM relationships AS r
                WHERE r.source_id = ANY(w.frontier)
                UNION ALL
                SELECT r.source_id, r.weight FROM relationships AS r
                WHERE r.target_id = ANY(w.frontier)
            ) AS x JOIN entities AS e ON e.id = x.id
            WHERE NOT (x.id = ANY(w.chosen))
            GROUP BY x.id ORDER BY best DESC, x.id
            LIMIT greatest(%(budget)s - cardinality(w.chosen), 0)
        ) AS c
    ) AS nxt
    WHERE w.depth < %(hops)s AND cardinality(w.frontier) > 0
)
SELECT chosen FROM walk ORDER BY depth DESC LIMIT 1
"""


class PgGraphStore:
    """The graph of one index name on a PostgreSQL database.

    Args:
        db: the database of the backend.
        index: the index name every call is bound to.
    """

    def __init__(self, db: PgDatabase, index: str) -> None:
        self._db = db
        self._index = index

    # ----------------------------------------------------------------- helpers

    @staticmethod
    async def _fetch(
        conn: Conn, table: str, key: str, ids: Sequence[str], model: type[M]
    ) -> list[M]:
        rows = await (await conn.execute(
            sql.SQL("SELECT {key}, data FROM {table} WHERE {key} = ANY(%s)").format(
                key=sql.Identifier(key), table=sql.Identifier(table)),
            (list(ids),))).fetchall()
        found = {str(r[0]): model.model_validate_json(r[1]) for r in rows}
        return [found[i] for i in ids if i in found]

    @staticmethod
    async def _delete(conn: Conn, table: str, key: str, ids: Sequence[str]) -> int:
        cur = await conn.execute(
            sql.SQL("DELETE FROM {table} WHERE {key} = ANY(%s)").format(
                key=sql.Identifier(key), table=sql.Identifier(table)),
            (list(ids),))
        return cur.rowcount

    @staticmethod
    async def _set_lineage(
        conn: Conn, kind: str, items: Sequence[tuple[str, Sequence[str]]]
    ) -> None:
        await conn.execute(
            "DELETE FROM lineage WHERE item_kind = %s AND item_id = ANY(%s)",
            (kind, [item_id for item_id, _ in items]))
        pairs = [(item_id, unit) for item_id, units in items for unit in units]
        if pairs:
            await conn.execute(
                "INSERT INTO lineage (item_kind, item_id, text_unit_id) "
                "SELECT %s, i, u FROM unnest(%s::text[], %s::text[]) AS p(i, u) "
                "ON CONFLICT DO NOTHING",
                (kind, [p[0] for p in pairs], [p[1] for p in pairs]))

    # ----------------------------------------------------------------- entities, relationships

    async def upsert_entities(self, entities: Sequence[Entity]) -> None:
        """Insert or replace entities by id."""
        if not entities:
            return
        latest = {e.id: e for e in entities}  # the last of repeated ids wins, as in SQLite

        async def job(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO entities (id, data) SELECT * FROM unnest(%s::text[], %s::text[]) "
                "ON CONFLICT (id) DO UPDATE SET data = excluded.data",
                (list(latest), [e.model_dump_json() for e in latest.values()]))
            await self._set_lineage(conn, "entity",
                                    [(e.id, e.text_unit_ids) for e in latest.values()])

        await self._db.write_index(self._index, job)

    async def upsert_relationships(self, relationships: Sequence[Relationship]) -> None:
        """Insert or replace relationships by id (endpoints need not exist yet)."""
        if not relationships:
            return
        latest = {r.id: r for r in relationships}
        rels = list(latest.values())

        async def job(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO relationships (id, source_id, target_id, weight, data) "
                "SELECT * FROM unnest(%s::text[], %s::text[], %s::text[], %s::float8[], "
                "%s::text[]) ON CONFLICT (id) DO UPDATE SET source_id = excluded.source_id, "
                "target_id = excluded.target_id, weight = excluded.weight, data = excluded.data",
                ([r.id for r in rels], [r.source_id for r in rels], [r.target_id for r in rels],
                 [r.weight for r in rels], [r.model_dump_json() for r in rels]))
            await self._set_lineage(conn, "relationship", [(r.id, r.text_unit_ids) for r in rels])

        await self._db.write_index(self._index, job)

    async def delete_entities(self, ids: Sequence[str]) -> int:
        """Delete entities and every relationship touching them; return entities deleted."""

        async def job(conn: Conn) -> int:
            rows = await (await conn.execute(
                "DELETE FROM relationships WHERE source_id = ANY(%s) OR target_id = ANY(%s) "
                "RETURNING id", (list(ids), list(ids)))).fetchall()
            await conn.execute(
                "DELETE FROM lineage WHERE item_kind = 'relationship' AND item_id = ANY(%s)",
                ([str(r[0]) for r in rows],))
            await conn.execute(
                "DELETE FROM lineage WHERE item_kind = 'entity' AND item_id = ANY(%s)",
                (list(ids),))
            return await self._delete(conn, "entities", "id", ids)

        return await self._db.write_index(self._index, job, create=False, default=0)

    async def delete_relationships(self, ids: Sequence[str]) -> int:
        """Delete relationships by id; return how many existed."""

        async def job(conn: Conn) -> int:
            await conn.execute(
                "DELETE FROM lineage WHERE item_kind = 'relationship' AND item_id = ANY(%s)",
                (list(ids),))
            return await self._delete(conn, "relationships", "id", ids)

        return await self._db.write_index(self._index, job, create=False, default=0)

    async def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        """Return the stored entities with these ids, in the order of ``ids``."""
        return await self._db.read_index(
            self._index, lambda conn: self._fetch(conn, "entities", "id", ids, Entity), [])

    async def get_relationships(self, ids: Sequence[str]) -> list[Relationship]:
        """Return the stored relationships with these ids, in the order of ``ids``."""
        return await self._db.read_index(
            self._index,
            lambda conn: self._fetch(conn, "relationships", "id", ids, Relationship), [])

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
        seeds = list(dict.fromkeys(seed_ids))

        async def job(conn: Conn) -> Subgraph:
            row = await (await conn.execute(
                _WALK, {"seeds": seeds, "budget": max_entities, "hops": hops})).fetchone()
            order = [str(i) for i in row[0]] if row and row[0] else []
            entities = await self._fetch(conn, "entities", "id", order, Entity)
            edges = await self._within(conn, order)
            return Subgraph(entities=tuple(entities), relationships=tuple(edges))

        return await self._db.read_index(self._index, job, Subgraph())

    @staticmethod
    async def _within(conn: Conn, entity_ids: Sequence[str]) -> list[Relationship]:
        ids = list(entity_ids)
        rows = await (await conn.execute(
            "SELECT data FROM relationships WHERE source_id = ANY(%s) AND target_id = ANY(%s) "
            "ORDER BY id", (ids, ids))).fetchall()
        return [Relationship.model_validate_json(r[0]) for r in rows]

    async def edges_within(self, entity_ids: Sequence[str]) -> list[Relationship]:
        """Return every relationship whose both endpoints are in ``entity_ids``, ordered by id."""
        return await self._db.read_index(
            self._index, lambda conn: self._within(conn, entity_ids), [])

    async def citing(self, text_unit_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Return ``(entity_ids, relationship_ids)`` citing any of these units, each sorted."""

        async def job(conn: Conn) -> tuple[list[str], list[str]]:
            rows = await (await conn.execute(
                "SELECT DISTINCT item_kind, item_id FROM lineage WHERE text_unit_id = ANY(%s) "
                "ORDER BY item_kind, item_id", (list(text_unit_ids),))).fetchall()
            return (
                [str(item) for kind, item in rows if kind == "entity"],
                [str(item) for kind, item in rows if kind == "relationship"],
            )

        return await self._db.read_index(self._index, job, ([], []))

    # ----------------------------------------------------------------- communities, reports

    async def upsert_communities(self, communities: Sequence[Community]) -> None:
        """Insert or replace communities by id."""
        if not communities:
            return
        latest = list({c.id: c for c in communities}.values())

        async def job(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO communities (id, level, data) "
                "SELECT * FROM unnest(%s::text[], %s::int[], %s::text[]) "
                "ON CONFLICT (id) DO UPDATE SET level = excluded.level, data = excluded.data",
                ([c.id for c in latest], [c.level for c in latest],
                 [c.model_dump_json() for c in latest]))

        await self._db.write_index(self._index, job)

    async def get_communities(self, level: int | None = None) -> list[Community]:
        """Return communities (of one level when given), ordered by level then id."""

        async def job(conn: Conn) -> list[Community]:
            rows = await (await conn.execute(
                "SELECT data FROM communities WHERE %(level)s::int IS NULL OR level = %(level)s "
                "ORDER BY level, id", {"level": level})).fetchall()
            return [Community.model_validate_json(r[0]) for r in rows]

        return await self._db.read_index(self._index, job, [])

    async def communities_of(self, entity_ids: Sequence[str]) -> list[Community]:
        """Return the communities holding any of these entities (every level), by level, id.

        The members are matched in SQL: only the communities found are decoded.
        """

        async def job(conn: Conn) -> list[Community]:
            rows = await (await conn.execute(
                "SELECT data FROM communities WHERE (data::jsonb -> 'member_ids') ?| %s::text[] "
                "ORDER BY level, id", (list(dict.fromkeys(entity_ids)),))).fetchall()
            return [Community.model_validate_json(r[0]) for r in rows]

        if not entity_ids:
            return []
        return await self._db.read_index(self._index, job, [])

    async def delete_communities(self, ids: Sequence[str]) -> int:
        """Delete communities (and their reports) by id; return how many existed."""

        async def job(conn: Conn) -> int:
            await self._delete(conn, "reports", "community_id", ids)
            return await self._delete(conn, "communities", "id", ids)

        return await self._db.write_index(self._index, job, create=False, default=0)

    async def upsert_reports(self, reports: Sequence[CommunityReport]) -> None:
        """Insert or replace community reports by community id."""
        if not reports:
            return
        latest = list({r.community_id: r for r in reports}.values())

        async def job(conn: Conn) -> None:
            await conn.execute(
                "INSERT INTO reports (community_id, data) "
                "SELECT * FROM unnest(%s::text[], %s::text[]) "
                "ON CONFLICT (community_id) DO UPDATE SET data = excluded.data",
                ([r.community_id for r in latest], [r.model_dump_json() for r in latest]))

        await self._db.write_index(self._index, job)

    async def get_reports(self, community_ids: Sequence[str]) -> list[CommunityReport]:
        """Return the reports of these communities, in the order of ``community_ids``."""
        return await self._db.read_index(
            self._index,
            lambda conn: self._fetch(conn, "reports", "community_id", community_ids,
                                     CommunityReport), [])

    async def counts(self) -> dict[str, int]:
        """Return item counts: ``entities``, ``relationships``, ``communities``, ``reports``."""
        tables = ("entities", "relationships", "communities", "reports")

        async def job(conn: Conn) -> dict[str, int]:
            row = await (await conn.execute(
                "SELECT (SELECT count(*) FROM entities), (SELECT count(*) FROM relationships), "
                "(SELECT count(*) FROM communities), (SELECT count(*) FROM reports)")).fetchone()
            return {t: int(n) for t, n in zip(tables, row or (0, 0, 0, 0), strict=True)}

        return await self._db.read_index(self._index, job, dict.fromkeys(tables, 0))
