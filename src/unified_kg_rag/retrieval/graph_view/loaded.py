"""`GraphView`: one index's graph held in memory for browsing (labels, degrees, adjacency).

Built once per graph build and kept in a `BuildCache` the `App` owns, so label searches and
slices do not read the whole graph per request. Two sources:

- **entities** (the LLM graph of ``graphrag``/``lightrag``/``hipporag``): every entity and
  relationship of the graph store, its communities and their report titles. The cache key is
  the graph build's record plus the store's item counts, so a rebuild or a deletion loads
  afresh.
- **concepts** (the `lazy` graph): the concept graph the query strategies load
  (`retrieval.strategies.ppr.load_concept_graph`, through the App's own cache), its
  co-occurrence edges and concept communities. Keyed by the lazy build's digest.

Descriptions, relationship texts, reports and text units stay in the stores; the view keeps
only what ranking and walking need. Not here: the queries over a view (`graph_view.view`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from unified_kg_rag.domain.index.meta import (
    INDEX_NAMESPACE,
    LAZY_BUILD_KEY,
    METHODOLOGIES_KEY,
    parse_methodologies,
)
from unified_kg_rag.domain.index.methodologies import builds_artifact
from unified_kg_rag.domain.models import Collection, Community, CommunityReport
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.graph_view.models import CommunityInfo, GraphKind
from unified_kg_rag.retrieval.strategies.base import BuildCache
from unified_kg_rag.retrieval.strategies.ppr import LoadedConceptGraph, load_concept_graph
from unified_kg_rag.util.errors import MethodologyNotIndexedError
from unified_kg_rag.util.hashing import sha256_text

__all__ = ["GraphView", "Link", "load_view", "resolve_graph"]


_GRAPH_BUILD_KEY = "graph_build"  # `ingestion.graph.build.BUILD_KEY` (retrieval cannot import it)
_BATCH = 2000
TOP_MEMBERS = 3
"""How many member labels `CommunityInfo.top_members` holds."""

Link = tuple[int, str, float, bool]
"""One edge of a node: ``(other node, edge key, weight, outgoing)``."""


@dataclass(frozen=True, eq=False)
class GraphView:
    """A graph's nodes, adjacency and communities, held for browsing.

    Attributes:
        kind: ``entities`` or ``concepts``.
        ids: node ids; a node's index is its position here.
        labels: display names, parallel to ``ids``.
        types: entity types (``concept`` for concepts), parallel to ``ids``.
        links: each node's edges (`Link`), parallel to ``ids``; every edge appears at both ends.
        communities: every community, by level then id, with its report's title and rating.
        members: community id → its member node indexes.
        leaf: each node's deepest community (an index into ``communities``), or None.
    """

    kind: GraphKind
    ids: tuple[str, ...]
    labels: tuple[str, ...]
    types: tuple[str, ...]
    links: tuple[tuple[Link, ...], ...]
    communities: tuple[CommunityInfo, ...] = ()
    members: dict[str, tuple[int, ...]] = field(default_factory=dict)
    leaf: tuple[int | None, ...] = ()

    @cached_property
    def index_of(self) -> dict[str, int]:
        """Node id → node index."""
        return {node: i for i, node in enumerate(self.ids)}

    @cached_property
    def folded(self) -> tuple[str, ...]:
        """Labels casefolded (what searches compare), parallel to ``ids``."""
        return tuple(label.casefold() for label in self.labels)

    @cached_property
    def by_folded(self) -> tuple[tuple[str, int], ...]:
        """``(casefolded label, node)`` sorted: prefix matches are one contiguous run."""
        return tuple(sorted((f, i) for i, f in enumerate(self.folded)))

    @cached_property
    def by_degree(self) -> tuple[int, ...]:
        """Nodes by degree, highest first (ties by label)."""
        return tuple(sorted(range(len(self.ids)), key=self.rank_key))

    @cached_property
    def community_index(self) -> dict[str, int]:
        """Community id → its index in ``communities``."""
        return {c.id: i for i, c in enumerate(self.communities)}

    def degree(self, node: int) -> int:
        """The node's edges in the whole graph."""
        return len(self.links[node])

    def rank_key(self, node: int) -> tuple[int, str, str]:
        """Sort key: higher degree first, then label, then id."""
        return (-len(self.links[node]), self.folded[node], self.ids[node])


async def resolve_graph(stores: IndexStores, graph: GraphKind | None) -> GraphKind:
    """Return the graph to read: ``graph``, or by default the entity graph when held.

    Raises:
        MethodologyNotIndexedError: the index holds no such graph; the message names what it
            holds, and both ways to build a graph when it holds none.
        StoreError: a store failed.
    """
    held = parse_methodologies(await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY))
    has_entities = builds_artifact(held, "entity_graph")
    if graph is None:
        graph = "entities" if has_entities or "lazy" not in held else "concepts"
    holds = ", ".join(held) or "text units only"
    if graph == "entities" and not has_entities:
        needs = "one of the graphrag, lightrag or hipporag methodologies (an LLM graph)"
    elif graph == "concepts" and "lazy" not in held:
        needs = "the lazy methodology (the LLM-free concept graph)"
    else:
        return graph
    if not held or (not has_entities and "lazy" not in held):
        raise MethodologyNotIndexedError(
            f"index {stores.name!r} has no graph (it holds: {holds}); build one by adding to "
            "`indexing.methodologies` graphrag, lightrag or hipporag for the LLM entity graph "
            "(needs an LLM), or lazy for the LLM-free concept graph, then run `ukr index PATH`",
            index=stores.name, held=held,
        )  # fmt: skip
    raise MethodologyNotIndexedError(
        f"the {graph} graph needs {needs}; index {stores.name!r} holds: {holds}",
        index=stores.name, held=held,
    )  # fmt: skip


async def load_view(
    stores: IndexStores,
    graph: GraphKind,
    views: BuildCache[GraphView],
    concept_graphs: BuildCache[LoadedConceptGraph],
) -> GraphView:
    """Return the view of one of the index's graphs, from ``views`` when current.

    Args:
        stores: the index's stores.
        graph: which graph (`resolve_graph` checked that the index holds it).
        views: loaded views by index and build (the `App`'s).
        concept_graphs: loaded concept graphs (the `App`'s, shared with the strategies).

    Raises:
        MethodologyNotIndexedError: the concept graph was not built yet.
        StoreError: a store failed.
    """
    if graph == "concepts":
        digest = await stores.records.get(INDEX_NAMESPACE, LAZY_BUILD_KEY)
        key = f"concepts:{digest}"
    else:
        build = await stores.records.get(INDEX_NAMESPACE, _GRAPH_BUILD_KEY)
        counts = await stores.graph.counts()
        key = "entities:" + sha256_text(build or "", json.dumps(counts, sort_keys=True))
    cached = views.get(stores.name, key)
    if cached is not None:
        return cached
    if graph == "concepts":
        loaded = await load_concept_graph(stores, concept_graphs)
        if loaded is None:
            raise MethodologyNotIndexedError(
                f"index {stores.name!r} has no concept graph yet: run `ukr index` to build it",
                index=stores.name, held=("lazy",),
            )  # fmt: skip
        view = await asyncio.to_thread(_concept_view, loaded)
    else:
        view = await _entity_view(stores)
    views.put(stores.name, key, view)
    return view


async def _entity_view(stores: IndexStores) -> GraphView:
    entity_ids = await stores.search.ids(Collection.ENTITIES)
    entities = []
    for i in range(0, len(entity_ids), _BATCH):
        entities.extend(await stores.graph.get_entities(entity_ids[i : i + _BATCH]))
    relationships = await stores.graph.edges_within([e.id for e in entities])
    communities = await stores.graph.get_communities()
    reports = await stores.graph.get_reports([c.id for c in communities])
    index_of = {e.id: i for i, e in enumerate(entities)}
    links: list[list[Link]] = [[] for _ in entities]
    for r in relationships:
        s, t = index_of.get(r.source_id), index_of.get(r.target_id)
        if s is None or t is None:
            continue
        links[s].append((t, r.id, r.weight, True))
        if s != t:
            links[t].append((s, r.id, r.weight, False))
    return _with_communities(
        "entities", [e.id for e in entities], [e.name for e in entities],
        [e.type or "entity" for e in entities], links, communities, reports,
    )  # fmt: skip


def _concept_view(loaded: LoadedConceptGraph) -> GraphView:
    graph = loaded.graph
    links: list[list[Link]] = [[] for _ in graph.concepts]
    ids = graph.concept_ids
    for a, b, weight in graph.cooccurrence:
        key = f"{ids[a][:16]}-{ids[b][:16]}"
        links[a].append((b, key, weight, True))
        links[b].append((a, key, weight, False))
    return _with_communities(
        "concepts", list(ids), list(graph.concepts), ["concept"] * len(ids), links,
        list(loaded.communities), [],
    )  # fmt: skip


def _with_communities(
    kind: GraphKind,
    ids: list[str],
    labels: list[str],
    types: list[str],
    links: list[list[Link]],
    communities: Sequence[Community],
    reports: Sequence[CommunityReport],
) -> GraphView:
    by_id = {r.community_id: r for r in reports}
    ordered = sorted(communities, key=lambda c: (c.level, c.id))
    index_of = {node: i for i, node in enumerate(ids)}
    infos, members = [], {}
    leaf: list[int | None] = [None] * len(ids)
    depth: list[int] = [-1] * len(ids)
    for n, c in enumerate(ordered):
        report = by_id.get(c.id)
        held = tuple(index_of[m] for m in c.member_ids if m in index_of)
        top = sorted(held, key=lambda node: (-len(links[node]), labels[node]))[:TOP_MEMBERS]
        infos.append(CommunityInfo(
            id=c.id, level=c.level, size=len(c.member_ids), parent_id=c.parent_id,
            children_ids=list(c.children_ids), title=report.title if report else None,
            rating=report.rating if report else None, top_members=[labels[n] for n in top],
        ))  # fmt: skip
        members[c.id] = held
        for node in held:
            if c.level > depth[node]:
                depth[node], leaf[node] = c.level, n
    return GraphView(
        kind=kind, ids=tuple(ids), labels=tuple(labels), types=tuple(types),
        links=tuple(tuple(sorted(ls, key=lambda x: (-x[2], x[1]))) for ls in links),
        communities=tuple(infos), members=members, leaf=tuple(leaf),
    )  # fmt: skip
