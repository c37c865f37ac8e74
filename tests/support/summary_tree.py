"""Write a `raptor` summary tree (and an entity graph) straight into real stores, for tests.

Follows the storage contract of a built tree (seed 000 §6.5): the `SummaryTree` JSON under
``(RAPTOR_NAMESPACE, SUMMARY_TREE_KEY)``, its build digest under ``(INDEX_NAMESPACE,
RAPTOR_BUILD_KEY)``, each node's text and vector in ``Collection.SUMMARY_NODES`` (fields
``level``, ``n_leaves``, ``n_tokens``), and ``raptor`` among the index's methodologies.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from unified_kg_rag.domain.index.meta import (
    INDEX_NAMESPACE,
    METHODOLOGIES_KEY,
    RAPTOR_BUILD_KEY,
    RAPTOR_NAMESPACE,
    SUMMARY_TREE_KEY,
    parse_methodologies,
)
from unified_kg_rag.domain.models import Collection, Entity, IndexRecord
from unified_kg_rag.domain.tree.nodes import SummaryNode, SummaryTree, summary_node_id
from unified_kg_rag.ingestion.graph.write import entity_record
from unified_kg_rag.ports import Embedder, IndexStores

__all__ = ["record_methodology", "summary_node", "write_entities", "write_summary_tree"]


def summary_node(level: int, children: Sequence[SummaryNode | str], text: str) -> SummaryNode:
    """Return a node summarising ``children`` (nodes, or text-unit ids of promoted leaves)."""
    child_ids = sorted(c.id if isinstance(c, SummaryNode) else c for c in children)
    lineage = sorted({u for c in children
                      for u in (c.text_unit_ids if isinstance(c, SummaryNode) else (c,))})
    return SummaryNode(id=summary_node_id(level, child_ids), level=level, text=text,
                       child_ids=tuple(child_ids), text_unit_ids=tuple(lineage),
                       n_tokens=len(text.split()))  # fmt: skip


async def record_methodology(stores: IndexStores, *names: str) -> None:
    """Add ``names`` to the methodologies the index records as held."""
    held = list(parse_methodologies(await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY)))
    held += [n for n in names if n not in held]
    await stores.records.put(INDEX_NAMESPACE, METHODOLOGIES_KEY, json.dumps(held))


async def write_summary_tree(
    stores: IndexStores,
    embedder: Embedder,
    nodes: Sequence[SummaryNode],
    *,
    digest: str = "test-build",
    store_tree: bool = True,
) -> SummaryTree:
    """Store ``nodes`` as the index's summary tree and record ``raptor`` as held.

    ``store_tree`` False records the methodology only (an index whose tree went missing).
    """
    tree = SummaryTree(nodes=tuple(sorted(nodes, key=lambda n: (n.level, n.id))),
                       leaf_digest=digest, fingerprint="test")  # fmt: skip
    if store_tree:
        await stores.records.put(RAPTOR_NAMESPACE, SUMMARY_TREE_KEY, tree.encode())
        await stores.records.put(INDEX_NAMESPACE, RAPTOR_BUILD_KEY, digest)
        records = [IndexRecord(id=n.id, text=n.text, fields={
            "level": n.level, "n_leaves": n.n_leaves, "n_tokens": n.n_tokens})
            for n in tree.nodes]  # fmt: skip
        vectors = await embedder.embed_documents([n.text for n in tree.nodes])
        await stores.search.upsert(Collection.SUMMARY_NODES, records, vectors)
    await record_methodology(stores, "raptor")
    return tree


async def write_entities(
    stores: IndexStores, embedder: Embedder, entities: Sequence[Entity], methodology: str
) -> None:
    """Store ``entities`` in the graph and the entities collection; record ``methodology``."""
    await stores.graph.upsert_entities(entities)
    records = [entity_record(e) for e in entities]
    vectors = await embedder.embed_documents([r.text for r in records])
    await stores.search.upsert(Collection.ENTITIES, records, vectors)
    await record_methodology(stores, methodology)
