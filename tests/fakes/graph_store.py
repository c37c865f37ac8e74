"""An in-memory `GraphStore` over dicts."""

from __future__ import annotations

from collections.abc import Sequence

from unified_kg_rag.domain.models import Community, CommunityReport, Entity, Relationship, Subgraph


class FakeGraphStore:
    def __init__(self) -> None:
        self.entities: dict[str, Entity] = {}
        self.relationships: dict[str, Relationship] = {}
        self.communities: dict[str, Community] = {}
        self.reports: dict[str, CommunityReport] = {}

    async def upsert_entities(self, entities: Sequence[Entity]) -> None:
        self.entities.update((e.id, e) for e in entities)

    async def upsert_relationships(self, relationships: Sequence[Relationship]) -> None:
        self.relationships.update((r.id, r) for r in relationships)

    async def delete_entities(self, ids: Sequence[str]) -> int:
        gone = {i for i in ids if i in self.entities}
        rels = self.relationships.values()
        touching = [r.id for r in rels if {r.source_id, r.target_id} & set(ids)]
        await self.delete_relationships(touching)
        for i in gone:
            del self.entities[i]
        return len(gone)

    async def delete_relationships(self, ids: Sequence[str]) -> int:
        return sum(self.relationships.pop(i, None) is not None for i in set(ids))

    async def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        return [self.entities[i] for i in ids if i in self.entities]

    async def get_relationships(self, ids: Sequence[str]) -> list[Relationship]:
        return [self.relationships[i] for i in ids if i in self.relationships]

    async def neighbourhood(
        self, seed_ids: Sequence[str], *, hops: int, max_entities: int
    ) -> Subgraph:
        if hops < 0 or max_entities < 0:
            raise ValueError("hops and max_entities must be non-negative")
        order = [s for s in dict.fromkeys(seed_ids) if s in self.entities][:max_entities]
        frontier = set(order)
        for _ in range(hops):
            best: dict[str, float] = {}
            for r in self.relationships.values():
                for a, b in ((r.source_id, r.target_id), (r.target_id, r.source_id)):
                    if a in frontier and b not in order and b in self.entities:
                        best[b] = max(best.get(b, float("-inf")), r.weight)
            new = sorted(best, key=lambda e: (-best[e], e))[: max_entities - len(order)]
            order += new
            frontier = set(new)
        entities = tuple(self.entities[i] for i in order)
        return Subgraph(entities=entities, relationships=tuple(await self.edges_within(order)))

    async def edges_within(self, entity_ids: Sequence[str]) -> list[Relationship]:
        ids = set(entity_ids)
        return sorted(
            (r for r in self.relationships.values() if r.source_id in ids and r.target_id in ids),
            key=lambda r: r.id,
        )

    async def citing(self, text_unit_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        units = set(text_unit_ids)
        ents = sorted(e.id for e in self.entities.values() if units & set(e.text_unit_ids))
        rels = sorted(r.id for r in self.relationships.values() if units & set(r.text_unit_ids))
        return ents, rels

    async def upsert_communities(self, communities: Sequence[Community]) -> None:
        self.communities.update((c.id, c) for c in communities)

    async def get_communities(self, level: int | None = None) -> list[Community]:
        found = [c for c in self.communities.values() if level is None or c.level == level]
        return sorted(found, key=lambda c: (c.level, c.id))

    async def communities_of(self, entity_ids: Sequence[str]) -> list[Community]:
        wanted = set(entity_ids)
        found = [c for c in self.communities.values() if wanted.intersection(c.member_ids)]
        return sorted(found, key=lambda c: (c.level, c.id))

    async def delete_communities(self, ids: Sequence[str]) -> int:
        for i in ids:
            self.reports.pop(i, None)
        return sum(self.communities.pop(i, None) is not None for i in set(ids))

    async def upsert_reports(self, reports: Sequence[CommunityReport]) -> None:
        self.reports.update((r.community_id, r) for r in reports)

    async def get_reports(self, community_ids: Sequence[str]) -> list[CommunityReport]:
        return [self.reports[i] for i in community_ids if i in self.reports]

    async def counts(self) -> dict[str, int]:
        return {
            "entities": len(self.entities),
            "relationships": len(self.relationships),
            "communities": len(self.communities),
            "reports": len(self.reports),
        }
