"""Writing a built graph to the stores, replacing the previous build without losing either.

Order (a run killed anywhere is repaired by the next build, which writes the same items):

1. write-ahead: the manifest of graph items (RecordStore ``index``/``graph_items``) becomes the
   union of the previous build's items and this build's, so whatever this run writes is
   listed before it is written;
2. search collections (``entities``, ``relationships``, ``reports``, ``claims`` with claim
   extraction on): an unchanged item keeps its stored vector, an item whose text is stored
   already (fields-only change, or the same text under another id) takes the stored vector,
   and each remaining text is embedded once, in length order (`item_vectors`);
3. the graph store (entities, relationships, communities, reports);
4. items of the previous build that this one no longer has are deleted from every store;
5. the manifest becomes this build's items.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field

from unified_kg_rag.domain.graph.claims import Claim, claim_record
from unified_kg_rag.domain.graph.item_text import entity_text, relationship_text
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE
from unified_kg_rag.domain.models import (
    Collection,
    Community,
    CommunityReport,
    Entity,
    IndexRecord,
    Relationship,
)
from unified_kg_rag.ingestion.graph.item_vectors import write_collection_vectors
from unified_kg_rag.ingestion.progress import NULL_PROGRESS
from unified_kg_rag.ports import Embedder, IndexStores, ProgressReporter

__all__ = ["GraphItems", "GraphWriter", "entity_record", "relationship_record", "report_record"]

MANIFEST_KEY = "graph_items"
_BATCH = 512


@dataclass
class GraphItems:
    """The items of one graph build (what the stores should hold after it)."""

    entities: list[Entity] = field(default_factory=list)
    relationships: list[Relationship] = field(default_factory=list)
    communities: list[Community] = field(default_factory=list)
    reports: list[CommunityReport] = field(default_factory=list)
    relationship_vectors: bool = True
    claims: list[Claim] = field(default_factory=list)


def entity_record(entity: Entity) -> IndexRecord:
    """Return the search record of an entity: ``name (TYPE): description``."""
    return IndexRecord(
        id=entity.id, text=entity_text(entity), fields={"name": entity.name, "type": entity.type}
    )


def relationship_record(rel: Relationship, names: dict[str, str]) -> IndexRecord:
    """Return the search record of a relationship: ``source TYPE target: description``."""
    source = names.get(rel.source_id, rel.source_id)
    target = names.get(rel.target_id, rel.target_id)
    return IndexRecord(
        id=rel.id,
        text=relationship_text(rel, source, target),
        fields={"source_id": rel.source_id, "target_id": rel.target_id, "type": rel.type},
    )


def report_record(report: CommunityReport, level: int) -> IndexRecord:
    """Return the search record of a community report (its full content)."""
    return IndexRecord(
        id=report.community_id,
        text=report.full_content or f"{report.title}\n\n{report.summary}",
        fields={
            "community_id": report.community_id,
            "level": level,
            "title": report.title,
            "rating": report.rating,
            "rank": report.rank,
        },
    )


def _manifest(items: GraphItems) -> dict[str, list[str]]:
    return {
        "entities": sorted(e.id for e in items.entities),
        "relationships": sorted(r.id for r in items.relationships),
        "communities": sorted(c.id for c in items.communities),
        "reports": sorted(r.community_id for r in items.reports),
        "claims": sorted(c.id for c in items.claims),
    }


class GraphWriter:
    """Writes `GraphItems` to an index's stores (see the module docstring for the order).

    Args:
        stores: the index's (fenced) stores.
        embedder: the embedding model of the index.
        progress: receives ``write`` progress (items embedded).
    """

    def __init__(
        self, stores: IndexStores, embedder: Embedder, progress: ProgressReporter | None = None
    ) -> None:
        self._stores = stores
        self._embedder = embedder
        self._progress = progress or NULL_PROGRESS
        self.embedded = 0
        self.reused = 0
        self.embedding_s = 0.0

    async def previous(self) -> dict[str, list[str]]:
        """Return the manifest of the last build written (empty lists when none)."""
        raw = await self._stores.records.get(INDEX_NAMESPACE, MANIFEST_KEY)
        value = json.loads(raw) if raw else {}
        return {k: list(value.get(k, [])) for k in ("entities", "relationships",
                                                     "communities", "reports", "claims")}

    async def write(self, items: GraphItems) -> int:
        """Write ``items`` and remove what the previous build had and this one lacks.

        Returns:
            The number of stale items removed.

        Raises:
            StoreError: a store failed (the manifest still lists everything written).
            EmbeddingModelError: the embedding model failed.
        """
        records = self._stores.records
        await self._stores.search.bind_embedding(self._embedder.model_id, self._embedder.dimension)
        old = await self.previous()
        new = _manifest(items)
        union = {k: sorted(set(old[k]) | set(new[k])) for k in new}
        await records.put(INDEX_NAMESPACE, MANIFEST_KEY, json.dumps(union))

        stale = {k: sorted(set(old[k]) - set(new[k])) for k in new}
        names = {e.id: e.name for e in items.entities}
        levels = {c.id: c.level for c in items.communities}
        await self._index(
            Collection.ENTITIES, [entity_record(e) for e in items.entities], stale["entities"]
        )
        if items.relationship_vectors:
            await self._index(
                Collection.RELATIONSHIPS,
                [relationship_record(r, names) for r in items.relationships],
                stale["relationships"],
            )
        await self._index(
            Collection.REPORTS,
            [report_record(r, levels.get(r.community_id, 0)) for r in items.reports],
            stale["reports"],
        )
        await self._index(
            Collection.CLAIMS, [claim_record(c) for c in items.claims], stale["claims"]
        )
        graph = self._stores.graph
        for i in range(0, len(items.entities), _BATCH * 4):
            await graph.upsert_entities(items.entities[i : i + _BATCH * 4])
        for i in range(0, len(items.relationships), _BATCH * 4):
            await graph.upsert_relationships(items.relationships[i : i + _BATCH * 4])
        await graph.upsert_communities(items.communities)
        await graph.upsert_reports(items.reports)

        removed = await self._remove(stale)
        await records.put(INDEX_NAMESPACE, MANIFEST_KEY, json.dumps(new))
        return removed

    async def _remove(self, stale: dict[str, list[str]]) -> int:
        graph, search = self._stores.graph, self._stores.search
        removed = 0
        if stale["claims"]:
            removed += await search.delete(Collection.CLAIMS, stale["claims"])
        if stale["communities"]:
            removed += await graph.delete_communities(stale["communities"])
        if stale["reports"]:
            await search.delete(Collection.REPORTS, stale["reports"])
        if stale["relationships"]:
            removed += await graph.delete_relationships(stale["relationships"])
            await search.delete(Collection.RELATIONSHIPS, stale["relationships"])
        if stale["entities"]:
            removed += await graph.delete_entities(stale["entities"])
            await search.delete(Collection.ENTITIES, stale["entities"])
        return removed

    async def _index(
        self, collection: Collection, wanted: Sequence[IndexRecord], stale: Sequence[str] = ()
    ) -> None:
        """Upsert the records whose text or fields differ from the stored ones.

        Each new text is embedded once; a record whose text is stored already (its own, or
        that of a ``stale`` item or another record) takes the stored vector
        (`item_vectors.write_collection_vectors`).
        """
        written = await write_collection_vectors(
            self._stores.search, self._embedder, collection, wanted,
            reuse_ids=stale, chunk_texts=_BATCH, progress=self._progress,
        )  # fmt: skip
        self.embedding_s += written.embedding_s
        self.embedded += written.embedded
        self.reused += written.reused + written.duplicates
