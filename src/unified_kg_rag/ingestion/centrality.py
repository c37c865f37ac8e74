"""Global PageRank computed at index time and stored, in step with the graphs it ranks.

The LLM entity graph: the graph writer calls `store_entity_pagerank` with the items it just
wrote (`ingestion.graph.build.GraphIndexer.run`, its ``pagerank`` stage right after
``write``), so every build, incremental
run and document deletion that changes the graph leaves its PageRank behind; a graph with
the stored digest is not computed again. A build skipped as current on an index built before
PageRank was stored computes it from the stored graph (`ensure_entity_pagerank`), so
upgrading needs one ``ukr index`` run, never a graph rebuild.

The `lazy` concept graph: `refresh_concept_pagerank` runs after every concept stage and
recomputes when the stored PageRank follows another ``lazy_build`` digest than the stored
graph's (a new build, or a run killed between the graph and its PageRank).

Storage: one `RecordStore` namespace per graph (`domain.index.meta.PAGERANK_NAMESPACES`),
``n:<node id>`` and ``u:<text unit id>`` keys holding the value as text, and ``meta``
(`PageRankMeta`). Key-value records need no schema migration on SQLite or PostgreSQL, and
the pipeline stage reads only its candidates' keys. A write first deletes the keys the new
graph lacks, then puts every value and ``meta`` in one transaction.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time

from unified_kg_rag.domain.index.meta import (
    CONCEPT_GRAPH_KEY,
    INDEX_NAMESPACE,
    LAZY_BUILD_KEY,
    LAZY_NAMESPACE,
    PAGERANK_META_KEY,
    PAGERANK_NAMESPACES,
    PageRankGraph,
    PageRankMeta,
    decode_concept_graph,
)
from unified_kg_rag.domain.models import Entity, Relationship
from unified_kg_rag.domain.ranking.centrality import (
    DAMPING,
    global_pagerank,
    graph_digest,
    unit_pagerank,
)
from unified_kg_rag.ingestion.graph.write import MANIFEST_KEY, GraphItems
from unified_kg_rag.ports import IndexStores, RecordStore

__all__ = [
    "ensure_entity_pagerank",
    "load_pagerank_meta",
    "refresh_concept_pagerank",
    "store_entity_pagerank",
]

logger = logging.getLogger(__name__)

_BATCH = 2000

Edge = tuple[str, str, float]
Lineage = tuple[str, tuple[str, ...]]


async def load_pagerank_meta(records: RecordStore, graph: PageRankGraph) -> PageRankMeta | None:
    """Return the stored PageRank's `PageRankMeta` of ``graph``, or None when none is stored.

    Raises:
        StoreError: the record store failed.
    """
    raw = await records.get(PAGERANK_NAMESPACES[graph], PAGERANK_META_KEY)
    return PageRankMeta.model_validate_json(raw) if raw else None


async def store_entity_pagerank(stores: IndexStores, items: GraphItems) -> PageRankMeta:
    """Compute and store the entity graph's PageRank unless the stored one is of this graph.

    Args:
        stores: the index's (fenced) stores.
        items: the graph written: every entity (lineage: ``text_unit_ids``) and every
            relationship (weighted by ``weight``); the other items are not read.

    Returns:
        The meta of the stored values (the earlier one when the graph is unchanged).

    Raises:
        StoreError: the record store failed.
    """
    nodes = [e.id for e in items.entities]
    edges = [(r.source_id, r.target_id, r.weight) for r in items.relationships]
    lineage = [(e.id, e.text_unit_ids) for e in items.entities]
    return await _store(stores.records, "entities", nodes, edges, lineage)


async def ensure_entity_pagerank(stores: IndexStores) -> PageRankMeta | None:
    """Store the entity graph's PageRank when none is stored (an index built before it).

    Reads the graph the last build wrote (its manifest's entities and relationships).

    Returns:
        The meta stored now, or None when a PageRank was stored already or there is no
        entity graph.

    Raises:
        StoreError: a store failed.
    """
    if await load_pagerank_meta(stores.records, "entities") is not None:
        return None
    raw = await stores.records.get(INDEX_NAMESPACE, MANIFEST_KEY)
    manifest = json.loads(raw) if raw else {}
    entity_ids = [str(i) for i in manifest.get("entities", [])]
    if not entity_ids:
        return None
    relationship_ids = [str(i) for i in manifest.get("relationships", [])]
    entities: list[Entity] = []
    relationships: list[Relationship] = []
    for i in range(0, len(entity_ids), _BATCH):
        entities += await stores.graph.get_entities(entity_ids[i : i + _BATCH])
    for i in range(0, len(relationship_ids), _BATCH):
        relationships += await stores.graph.get_relationships(relationship_ids[i : i + _BATCH])
    logger.info("index %s: computing the PageRank of its stored entity graph (none stored)",
                stores.name)  # fmt: skip
    return await store_entity_pagerank(stores, GraphItems(entities, relationships))


async def refresh_concept_pagerank(stores: IndexStores) -> PageRankMeta | None:
    """Compute and store the concept graph's PageRank when it does not follow the stored graph.

    The stored values follow a ``lazy_build`` digest (`PageRankMeta.source`); when it is
    the stored graph's, nothing is read or computed.

    Returns:
        The meta of the stored values, or None when the index holds no concept graph.

    Raises:
        StoreError: a store failed.
        StoreSchemaError: the stored concept graph has an unknown format version.
    """
    build = await stores.records.get(INDEX_NAMESPACE, LAZY_BUILD_KEY)
    if build is None:
        return None
    meta = await load_pagerank_meta(stores.records, "concepts")
    if meta is not None and meta.source == build:
        return meta
    raw = await stores.records.get(LAZY_NAMESPACE, CONCEPT_GRAPH_KEY)
    if raw is None:
        return None
    graph = await asyncio.to_thread(decode_concept_graph, raw)
    ids = graph.concept_ids
    edges = [(ids[int(i)], ids[int(j)], float(w))
             for i, j, w in zip(graph.co_source, graph.co_target, graph.co_weight, strict=True)]
    cited: dict[str, list[str]] = {}
    for unit, concept in zip(graph.unit_index, graph.concept_index, strict=True):
        cited.setdefault(ids[int(concept)], []).append(graph.unit_ids[int(unit)])
    lineage = [(c, tuple(units)) for c, units in cited.items()]
    return await _store(stores.records, "concepts", list(ids), edges, lineage, source=build)


async def _store(
    records: RecordStore,
    graph: PageRankGraph,
    nodes: list[str],
    edges: list[Edge],
    lineage: list[Lineage],
    *,
    source: str = "",
) -> PageRankMeta:
    """Compute (off the event loop) and write one graph's PageRank unless it is current."""
    digest = graph_digest(nodes, edges, lineage)
    meta = await load_pagerank_meta(records, graph)
    if meta is not None and meta.digest == digest:
        if meta.source != source:
            meta = meta.model_copy(update={"source": source})
            await records.put(PAGERANK_NAMESPACES[graph], PAGERANK_META_KEY,
                              meta.model_dump_json())  # fmt: skip
        return meta
    started = time.perf_counter()
    result = await asyncio.to_thread(global_pagerank, nodes, edges)
    units = await asyncio.to_thread(unit_pagerank, result.values, lineage)
    meta = PageRankMeta(
        digest=digest, source=source, nodes=result.nodes, edges=result.edges,
        units=len(units), damping=DAMPING, max_value=result.max_value,
        iterations=result.iterations, seconds=round(time.perf_counter() - started, 4),
    )  # fmt: skip
    items = {f"n:{n}": repr(v) for n, v in result.values.items()}
    items.update({f"u:{u}": repr(v) for u, v in units.items()})
    namespace = PAGERANK_NAMESPACES[graph]
    stale = [k for k in await records.keys(namespace)
             if k not in items and k != PAGERANK_META_KEY]  # fmt: skip
    for i in range(0, len(stale), _BATCH):
        await records.delete(namespace, stale[i : i + _BATCH])
    await records.put_many(namespace, {**items, PAGERANK_META_KEY: meta.model_dump_json()})
    logger.info("%s PageRank: %d nodes, %d edges, %d text units in %.3f s", graph,
                meta.nodes, meta.edges, meta.units, meta.seconds)  # fmt: skip
    return meta
