"""The in-place rebuild of ``ukr index PATH --reset``: the pre-write check, the orphan sweeps.

A reset processes every document of the walked folders again as if it had changed (the
pipeline), derives the graphs again with their digest skip disabled but the stored extraction
records and the response cache reused (`DerivedStages.run` with ``rebuild``), and removes what
no record of the index accounts for: text units that no registry document names (left by
older versions or a crash outside the write-ahead protocol) and graph items that the graph
build's manifest does not list. Nothing is emptied first: every write is an upsert or a
removal of a diff, so queries keep working throughout.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Sequence

from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE
from unified_kg_rag.domain.models import Collection
from unified_kg_rag.ingestion.graph.write import MANIFEST_KEY
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.util.errors import ConfigurationError

__all__ = ["check_reset", "sweep_graph_orphans", "sweep_orphan_units"]

logger = logging.getLogger(__name__)

_BATCH = 2000
"""Ids read or deleted per store call."""

_SearchDelete = Callable[[Collection, Sequence[str]], Awaitable[int]]
_GraphDelete = Callable[[Sequence[str]], Awaitable[int]]


async def check_reset(stores: IndexStores, *, rebuilds: bool) -> None:
    """Refuse a reset this configuration cannot finish, before anything is written.

    A reset derives the index's LLM knowledge graph again; without the LLM that built it
    (``llm.kind: none``, or no graph methodology selected) the graph could not follow the
    text units the reset removes.

    Args:
        stores: the index's stores (only read).
        rebuilds: whether the run builds the LLM graph.

    Raises:
        ConfigurationError: the index holds an LLM graph this configuration cannot rebuild.
        StoreError: a store failed.
    """
    if rebuilds:
        return
    counts = await stores.graph.counts()
    if any(counts.values()):
        raise ConfigurationError(
            f"index {stores.name!r} holds a knowledge graph ({counts.get('entities', 0)} "
            "entities) built by an LLM, and --reset derives it again from the stored "
            "extraction records, which this configuration cannot do (llm.kind is none or "
            "indexing.methodologies selects no graph methodology). Configure the LLM that "
            "built the graph; nothing was reset",
            field="llm.kind",
        )


async def sweep_orphan_units(stores: IndexStores) -> int:
    """Delete the text units that no registry record names; return how many.

    Every record counts as an owner, whatever its status (a ``failed`` document keeps its
    earlier units searchable; ``pending`` and ``deleting`` ones are finished by their own
    protocol), so only units the registry cannot account for go.

    Args:
        stores: the index's (fenced) stores, after the run's documents were committed.

    Raises:
        StoreError: a store failed (the next reset removes what is left).
    """
    owned = {t for r in await stores.registry.list_records() for t in r.text_unit_ids}
    orphans = [i for i in await stores.search.ids(Collection.TEXT_UNITS) if i not in owned]
    removed = 0
    for i in range(0, len(orphans), _BATCH):
        batch = orphans[i : i + _BATCH]
        removed += await stores.search.delete(Collection.TEXT_UNITS, batch)
    if removed:
        logger.info("removed %d text unit(s) no document of index %s names", removed,
                    stores.name)
    return removed


async def sweep_graph_orphans(stores: IndexStores, *, relationship_vectors: bool) -> int:
    """Delete graph items that the last graph build's manifest does not list; return how many.

    Run right after a build wrote its items (its manifest is then exactly what the stores
    should hold). Covers the ``entities``, ``relationships`` and ``reports`` search
    collections (an orphan found there is deleted from the graph store too) and the graph
    store's communities. An entity or relationship only the graph store holds cannot be
    listed through the ports and stays.

    Args:
        stores: the index's (fenced) stores.
        relationship_vectors: whether the build keeps relationships in the search index
            (LightRAG, HippoRAG); when it does not, stored relationship vectors are orphans.

    Raises:
        StoreError: a store failed.
    """
    raw = await stores.records.get(INDEX_NAMESPACE, MANIFEST_KEY)
    if raw is None:
        return 0
    manifest = json.loads(raw)
    removed = 0
    graph, search = stores.graph, stores.search
    listed = set(manifest.get("entities", []))
    stale = [i for i in await search.ids(Collection.ENTITIES) if i not in listed]
    removed += await _delete(search.delete, Collection.ENTITIES, stale)
    await _each(graph.delete_entities, stale)
    listed = set(manifest.get("relationships", []))
    vectored = listed if relationship_vectors else set()
    stale = [i for i in await search.ids(Collection.RELATIONSHIPS) if i not in vectored]
    removed += await _delete(search.delete, Collection.RELATIONSHIPS, stale)
    await _each(graph.delete_relationships, [i for i in stale if i not in listed])
    listed = set(manifest.get("reports", []))
    stale = [i for i in await search.ids(Collection.REPORTS) if i not in listed]
    removed += await _delete(search.delete, Collection.REPORTS, stale)
    listed = set(manifest.get("communities", []))
    stale = [c.id for c in await graph.get_communities() if c.id not in listed]
    removed += await _each(graph.delete_communities, stale)
    if removed:
        logger.info("removed %d graph item(s) no build of index %s lists", removed, stores.name)
    return removed


async def _delete(delete: _SearchDelete, collection: Collection, ids: Sequence[str]) -> int:
    n = 0
    for i in range(0, len(ids), _BATCH):
        n += await delete(collection, ids[i : i + _BATCH])
    return n


async def _each(delete: _GraphDelete, ids: Sequence[str]) -> int:
    n = 0
    for i in range(0, len(ids), _BATCH):
        n += await delete(ids[i : i + _BATCH])
    return n
