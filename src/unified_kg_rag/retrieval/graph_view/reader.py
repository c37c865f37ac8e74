"""`GraphReader`: browse one index's graph (entities or concepts) without the HTTP layer.

What the service's ``/v1/graph`` routes, the MCP server and the CLI call. Every method takes
``graph`` (``entities``, ``concepts``, or None for the index's default: the entity graph when
it has one, else the concept graph) and reads the `GraphView` the `App` keeps per build
(`graph_view.loaded`); the store is read only for the texts a result shows (descriptions,
reports, text units).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import numpy as np

from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.graph_view.loaded import GraphView, load_view, resolve_graph
from unified_kg_rag.retrieval.graph_view.models import (
    CommunityDetail,
    CommunityHierarchy,
    GraphKind,
    GraphOptions,
    GraphSlice,
    LabelSearch,
    NodeCommunity,
    NodeDetail,
    NodeLink,
    SliceAttributes,
    SliceEdge,
    SliceEdgeAttributes,
    TraceSource,
)
from unified_kg_rag.retrieval.graph_view.provenance import documents_of
from unified_kg_rag.retrieval.graph_view.trace import trace_slice
from unified_kg_rag.retrieval.graph_view.view import (
    WHOLE_GRAPH,
    community_levels,
    community_nodes,
    find_node,
    label_matches,
    match_of,
    slice_node,
    slice_nodes,
)
from unified_kg_rag.retrieval.request import no_such_index
from unified_kg_rag.retrieval.strategies.base import BuildCache
from unified_kg_rag.retrieval.strategies.ppr import LoadedConceptGraph, load_concept_graph
from unified_kg_rag.util.errors import NotFoundError, UsageError

__all__ = ["CO_OCCURS", "GraphReader"]

CO_OCCURS = "co-occurs"
"""The relation of a concept-graph edge (two concepts share text units)."""


@dataclass
class GraphReader:
    """Reads one index's graphs for browsing.

    Attributes:
        stores: the index's stores.
        views: loaded graph views, by index and build (the `App`'s ``graph_views``).
        concept_graphs: loaded concept graphs (the `App`'s, shared with the strategies).
        indexes: lists the project's indexes (the `StoreBackend`'s ``list_indexes``), so an
            unknown index is named as such; None: not checked.
    """

    stores: IndexStores
    views: BuildCache[GraphView]
    concept_graphs: BuildCache[LoadedConceptGraph]
    indexes: Callable[[], Awaitable[list[str]]] | None = None

    async def view(self, graph: GraphKind | None = None) -> GraphView:
        """Return the view of ``graph`` (None: the index's default graph).

        Raises:
            NotFoundError: the index does not exist (`no_such_index`: lists those that do).
            MethodologyNotIndexedError: the index holds no such graph.
            StoreError: a store failed.
        """
        if self.indexes is not None:
            existing = await self.indexes()
            if self.stores.name not in existing:
                raise no_such_index(self.stores.name, existing)
        kind = await resolve_graph(self.stores, graph)
        return await load_view(self.stores, kind, self.views, self.concept_graphs)

    async def labels(
        self, query: str, *, graph: GraphKind | None = None, limit: int = 20
    ) -> LabelSearch:
        """Search node labels: exact, then prefix, then word-prefix matches, each by degree.

        Args:
            query: the text to match (case-insensitive; blank: the most connected nodes).
            graph: which graph (None: the default).
            limit: the most matches returned.

        Raises:
            MethodologyNotIndexedError: the index holds no such graph.
        """
        view = await self.view(graph)
        return LabelSearch(index=self.stores.name, graph=view.kind, query=query,
                           matches=label_matches(view, query, limit))  # fmt: skip

    async def slice(
        self,
        label: str | None,
        *,
        graph: GraphKind | None = None,
        max_depth: int = 2,
        max_nodes: int = 200,
        community: str | None = None,
    ) -> GraphSlice:
        """Return the nodes within ``max_depth`` hops of a node, or a community's members.

        Args:
            label: the centre's id or label (case-insensitive); ``*`` takes the most
                connected nodes of the whole graph; None with ``community``.
            graph: which graph (None: the default).
            max_depth: hops to walk (the caller bounds it).
            max_nodes: the node cap; ``attributes.truncated`` says it left nodes out.
            community: a community id: the slice is its members, best connected first
                (``label`` must then be None).

        Raises:
            UsageError: neither or both of ``label`` and ``community`` (field ``label``).
            NotFoundError: no node has that id or label, or no community that id.
            MethodologyNotIndexedError: the index holds no such graph.
        """
        if (label is None) == (community is None):
            raise UsageError("give a label or a community, not both or neither", field="label")
        view = await self.view(graph)
        total: int | None = None
        centre = None
        if community is not None:
            walked, truncated = community_nodes(view, community, max_nodes)
            total = len(view.members.get(community, ()))
        elif label == WHOLE_GRAPH:
            walked, truncated = slice_nodes(view, None, max_depth, max_nodes)
            total = len(view.ids)
        else:
            centre = find_node(view, label or "")
            walked, truncated = slice_nodes(view, centre, max_depth, max_nodes)
        chosen = {node for node, _ in walked}
        edges = await self._edges(view, chosen)
        return GraphSlice(
            attributes=SliceAttributes(
                index=self.stores.name, graph=view.kind, label=label or "",
                centre=view.ids[centre] if centre is not None else None,
                max_depth=max_depth, max_nodes=max_nodes, truncated=truncated,
                community=community, total=total,
            ),
            options=GraphOptions(type="directed" if view.kind == "entities" else "undirected",
                                 multi=view.kind == "entities"),
            nodes=[slice_node(view, node, depth) for node, depth in walked],
            edges=edges,
        )  # fmt: skip

    async def _edges(self, view: GraphView, chosen: set[int]) -> list[SliceEdge]:
        if view.kind == "concepts":
            return [
                SliceEdge(key=key, source=view.ids[node], target=view.ids[other],
                          attributes=SliceEdgeAttributes(weight=weight, relation=CO_OCCURS))
                for node in sorted(chosen) for other, key, weight, out in view.links[node]
                if out and other in chosen
            ]  # fmt: skip
        rels = await self.stores.graph.edges_within([view.ids[n] for n in sorted(chosen)])
        return [
            SliceEdge(key=r.id, source=r.source_id, target=r.target_id,
                      attributes=SliceEdgeAttributes(weight=r.weight, relation=r.type,
                                                     description=r.description))
            for r in rels
        ]  # fmt: skip

    async def node(
        self,
        key: str,
        *,
        graph: GraphKind | None = None,
        links_limit: int = 50,
        units_limit: int = 20,
        messages_per_unit: int = 10,
    ) -> NodeDetail:
        """Return one node with its edges, communities (and reports), units and documents.

        Args:
            key: the node's id, or its label (case-insensitive).
            graph: which graph (None: the default).
            links_limit: the most edges listed (strongest first; ``links_total`` counts all).
            units_limit: the most text units listed (``text_units_total`` counts all).
            messages_per_unit: the most messages listed per unit (message archives).

        Raises:
            NotFoundError: no node has that id or label.
            MethodologyNotIndexedError: the index holds no such graph.
            StoreError: a store failed.
        """
        view = await self.view(graph)
        node = find_node(view, key)
        description, units = "", []
        links = view.links[node][:links_limit]
        texts: dict[str, tuple[str, str]] = {}
        if view.kind == "entities":
            entities = await self.stores.graph.get_entities([view.ids[node]])
            if entities:
                description, units = entities[0].description, list(entities[0].text_unit_ids)
            rels = await self.stores.graph.get_relationships([k for _, k, _, _ in links])
            texts = {r.id: (r.type, r.description) for r in rels}
        else:
            units = await self._concept_units(node)
        return NodeDetail(
            index=self.stores.name, graph=view.kind, id=view.ids[node],
            label=view.labels[node], entity_type=view.types[node], description=description,
            degree=view.degree(node),
            links=[
                NodeLink(id=k, other_id=view.ids[o], other_label=view.labels[o], weight=w,
                         direction=("out" if out else "in") if view.kind == "entities" else "both",
                         relation=texts.get(k, (CO_OCCURS, ""))[0],
                         description=texts.get(k, ("", ""))[1])
                for o, k, w, out in links
            ],
            links_total=view.degree(node),
            communities=await self._communities_of(view, node),
            documents=await documents_of(self.stores, units[:units_limit],
                                         messages_per_unit=messages_per_unit),
            text_units_total=len(units),
        )  # fmt: skip

    async def _concept_units(self, node: int) -> list[str]:
        loaded = await load_concept_graph(self.stores, self.concept_graphs)
        if loaded is None:
            return []
        graph = loaded.graph

        def units() -> list[str]:
            rows = graph.unit_index[graph.concept_index == node]
            return [graph.unit_ids[int(u)] for u in np.sort(rows)]

        return await asyncio.to_thread(units)

    async def _communities_of(self, view: GraphView, node: int) -> list[NodeCommunity]:
        chain = []
        at = view.leaf[node] if view.leaf else None
        while at is not None:
            community = view.communities[at]
            chain.append(community)
            at = view.community_index.get(community.parent_id or "")
        chain.reverse()
        summaries = {}
        if view.kind == "entities" and chain:
            reports = await self.stores.graph.get_reports([c.id for c in chain])
            summaries = {r.community_id: r.summary for r in reports}
        return [NodeCommunity(community=c, summary=summaries.get(c.id)) for c in chain]

    async def communities(
        self, *, graph: GraphKind | None = None, level: int | None = None
    ) -> CommunityHierarchy:
        """Return the community hierarchy, level by level (0: top).

        Each community with its size, parent, children and report title (concept communities
        have no reports).

        Raises:
            MethodologyNotIndexedError: the index holds no such graph.
        """
        view = await self.view(graph)
        levels = community_levels(view, level)
        return CommunityHierarchy(index=self.stores.name, graph=view.kind, levels=levels,
                                  total=sum(len(lv.communities) for lv in levels))  # fmt: skip

    async def community(
        self, community_id: str, *, graph: GraphKind | None = None, members_limit: int = 50
    ) -> CommunityDetail:
        """Return one community with its report and its best-connected members.

        Raises:
            NotFoundError: the graph has no community with that id.
            MethodologyNotIndexedError: the index holds no such graph.
            StoreError: a store failed.
        """
        view = await self.view(graph)
        at = view.community_index.get(community_id)
        if at is None:
            raise NotFoundError(f"no community {community_id!r} in the {view.kind} graph of "
                                f"index {self.stores.name!r}", kind="community",
                                key=community_id)  # fmt: skip
        members = sorted(view.members.get(community_id, ()), key=view.rank_key)
        reports = (await self.stores.graph.get_reports([community_id])
                   if view.kind == "entities" else [])  # fmt: skip
        report = reports[0] if reports else None
        return CommunityDetail(
            index=self.stores.name, graph=view.kind, community=view.communities[at],
            summary=report.summary if report else None,
            findings=list(report.findings) if report else [],
            full_content=report.full_content if report else "",
            members=[match_of(view, m) for m in members[:members_limit]],
        )  # fmt: skip

    async def trace(
        self,
        sources: Sequence[TraceSource],
        *,
        graph: GraphKind | None = None,
        max_nodes: int = 200,
        max_depth: int = 1,
    ) -> GraphSlice:
        """Return what an answer's sources put in context, inside its neighbourhood.

        The mapping of each source kind and the order of the cut are `graph_view.trace`'s.

        Args:
            sources: the answer's numbered sources (ids the graph lacks become notes).
            graph: which graph (None: the default).
            max_nodes: the node cap; traced nodes are never cut before neighbours.
            max_depth: hops of neighbourhood drawn around the traced nodes.

        Raises:
            MethodologyNotIndexedError: the index holds no such graph.
            StoreError: a store failed.
        """
        view = await self.view(graph)
        concepts = (await load_concept_graph(self.stores, self.concept_graphs)
                    if view.kind == "concepts" else None)  # fmt: skip
        return await trace_slice(self.stores, view, concepts, sources, edges=self._edges,
                                 max_nodes=max_nodes, max_depth=max_depth)  # fmt: skip
