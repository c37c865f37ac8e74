"""Query trace: the part of a graph an answer's context held, drawn inside its neighbourhood.

An answer's numbered sources (`TraceSource`, read from `domain.models.Source`) map onto the
graph the view holds:

- ``entity`` → its node; ``concept`` → its node;
- ``relationship`` → the edge and both endpoints;
- ``report`` (a community report; its id is the community's) → the community, listed in the
  slice's ``attributes.communities``, and its `COMMUNITY_MEMBERS` best-connected members;
- ``text_unit`` (naive, ppr, lazy ... answers) → the entities or concepts the unit states (its
  provenance), with the relationships (entity graph) or co-occurrences (concept graph) among
  them that the unit states.

Other kinds (``key_points``, ``notes``) and ids the graph does not hold are skipped with a
line in ``attributes.notes``. The traced nodes come first (ranked by their first source
number, then by degree) and are never cut before a neighbour: when they alone exceed
``max_nodes`` the best-ranked are kept and ``truncated`` is set. Their neighbourhood, ring
by ring up to ``max_depth`` hops and each ring by degree, fills the rest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from unified_kg_rag.domain.graph.claims import claim_from_record
from unified_kg_rag.domain.models import Collection
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.graph_view.loaded import GraphView
from unified_kg_rag.retrieval.graph_view.models import (
    GraphOptions,
    GraphSlice,
    SliceAttributes,
    SliceEdge,
    SliceNode,
    TraceCommunity,
    TraceSource,
)
from unified_kg_rag.retrieval.graph_view.view import slice_node
from unified_kg_rag.retrieval.strategies.ppr import LoadedConceptGraph

__all__ = ["COMMUNITY_MEMBERS", "TRACE_LABEL", "trace_slice"]

COMMUNITY_MEMBERS = 5
"""The best-connected members of a community (a report source) drawn as traced."""

TRACE_LABEL = "trace"
"""The ``attributes.label`` of a trace slice."""

EdgeReader = Callable[[GraphView, set[int]], Awaitable[list[SliceEdge]]]
"""Reads every edge among a set of nodes (`GraphReader`'s, with the store's texts)."""


@dataclass
class _Marks:
    """What the sources put in context: nodes, edges and communities, each with its sources."""

    nodes: dict[int, set[int]] = field(default_factory=dict)
    direct: set[int] = field(default_factory=set)
    edges: dict[str, set[int]] = field(default_factory=dict)
    communities: dict[int, set[int]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def node(self, node: int, n: int, *, direct: bool = True) -> None:
        self.nodes.setdefault(node, set()).add(n)
        if direct:
            self.direct.add(node)

    def edge(self, key: str, n: int) -> None:
        self.edges.setdefault(key, set()).add(n)


async def trace_slice(
    stores: IndexStores,
    view: GraphView,
    concepts: LoadedConceptGraph | None,
    sources: Sequence[TraceSource],
    *,
    edges: EdgeReader,
    max_nodes: int,
    max_depth: int = 1,
) -> GraphSlice:
    """Return the slice of ``view`` that ``sources`` put in an answer's context.

    Args:
        stores: the index's stores (the entity graph's relationships and lineage).
        view: the graph (`GraphReader.view`).
        concepts: the loaded concept graph when ``view`` is the concept graph (text units →
            concepts), else None.
        sources: the answer's numbered sources.
        edges: reads the edges among the chosen nodes.
        max_nodes: the node cap (traced nodes first, then their neighbourhood).
        max_depth: hops of neighbourhood drawn around the traced nodes.

    Returns:
        A `GraphSlice` (label ``trace``, no centre) whose traced nodes and edges carry
        ``trace`` and ``sources``, with ``attributes.communities`` and ``attributes.notes``.

    Raises:
        StoreError: a store failed.
    """
    marks = await _mark(stores, view, concepts, sources)
    ranked = sorted(marks.nodes, key=lambda node: (
        min(marks.nodes[node]), node not in marks.direct, *view.rank_key(node)))  # fmt: skip
    walked, truncated = _walk(view, ranked, max_depth, max_nodes)
    chosen = {node for node, _ in walked}
    nodes: list[SliceNode] = []
    for node, depth in walked:
        made = slice_node(view, node, depth)
        if node in marks.nodes:
            made = made.model_copy(update={"attributes": made.attributes.model_copy(
                update={"trace": True, "sources": sorted(marks.nodes[node])})})  # fmt: skip
        nodes.append(made)
    drawn: list[SliceEdge] = []
    for edge in await edges(view, chosen):
        if edge.key in marks.edges:
            edge = edge.model_copy(update={"attributes": edge.attributes.model_copy(
                update={"trace": True, "sources": sorted(marks.edges[edge.key])})})  # fmt: skip
        drawn.append(edge)
    communities = [
        TraceCommunity(id=view.communities[c].id, level=view.communities[c].level,
                       title=view.communities[c].title, sources=sorted(ns))
        for c, ns in sorted(marks.communities.items(),
                            key=lambda item: (min(item[1]), view.communities[item[0]].level,
                                              view.communities[item[0]].id))
    ]  # fmt: skip
    return GraphSlice(
        attributes=SliceAttributes(
            index=stores.name, graph=view.kind, label=TRACE_LABEL, centre=None,
            max_depth=max_depth, max_nodes=max_nodes, truncated=truncated,
            communities=communities, notes=marks.notes,
        ),
        options=GraphOptions(type="directed" if view.kind == "entities" else "undirected",
                             multi=view.kind == "entities"),
        nodes=nodes,
        edges=drawn,
    )  # fmt: skip


async def _mark(
    stores: IndexStores,
    view: GraphView,
    concepts: LoadedConceptGraph | None,
    sources: Sequence[TraceSource],
) -> _Marks:
    marks = _Marks()
    graph = f"the {view.kind} graph of index {stores.name!r}"
    rel_ids = [s.id for s in sources if s.kind == "relationship"]
    ends = {}
    if rel_ids and view.kind == "entities":
        ends = {r.id: (r.source_id, r.target_id)
                for r in await stores.graph.get_relationships(rel_ids)}  # fmt: skip
    stated = await _stated(stores, view, concepts, sources)
    about = await _claim_entities(stores, [s.id for s in sources if s.kind == "claim"])
    for s in sorted(sources, key=lambda s: s.n):
        if s.kind in ("entity", "concept"):
            node = view.index_of.get(s.id)
            if node is None:
                marks.notes.append(f"source [{s.n}]: no {s.kind} {s.id!r} in {graph}")
            else:
                marks.node(node, s.n)
        elif s.kind == "relationship":
            pair = ends.get(s.id)
            at = [view.index_of.get(e) for e in pair] if pair else []
            if not at or None in at:
                marks.notes.append(f"source [{s.n}]: no relationship {s.id!r} in {graph}")
                continue
            for node in at:
                if node is not None:
                    marks.node(node, s.n)
            marks.edge(s.id, s.n)
        elif s.kind == "claim" and view.kind == "entities":
            # a claim is traced to its subject entity (and its object when resolved)
            about_nodes = [view.index_of[e] for e in about.get(s.id, ()) if e in view.index_of]
            if not about_nodes:
                marks.notes.append(f"source [{s.n}]: claim {s.id!r} is about no entity of "
                                   f"{graph}")  # fmt: skip
            for node in about_nodes:
                marks.node(node, s.n)
        elif s.kind in ("report", "community"):
            c = view.community_index.get(s.id)
            if c is None:
                marks.notes.append(f"source [{s.n}]: no community {s.id!r} in {graph}")
                continue
            marks.communities.setdefault(c, set()).add(s.n)
            members = sorted(view.members.get(s.id, ()), key=view.rank_key)
            for node in members[:COMMUNITY_MEMBERS]:
                marks.node(node, s.n, direct=False)
        elif s.kind == "text_unit":
            nodes, keys = stated.get(s.n, (set(), set()))
            if not nodes:
                marks.notes.append(f"source [{s.n}]: text unit {s.id!r} states no node of "
                                   f"{graph}")  # fmt: skip
            for node in nodes:
                marks.node(node, s.n)
            for key in keys:
                marks.edge(key, s.n)
        else:
            marks.notes.append(f"source [{s.n}]: a {s.kind!r} section names no graph node")
    return marks


async def _claim_entities(stores: IndexStores, ids: Sequence[str]) -> dict[str, list[str]]:
    """Return claim id → its subject entity id and, when resolved, its object's."""
    if not ids:
        return {}
    records = await stores.search.get(Collection.CLAIMS, list(dict.fromkeys(ids)))
    claims = (claim_from_record(r) for r in records)
    return {c.id: [e for e in (c.subject_id, c.object_id) if e] for c in claims if c is not None}


def _units(source: TraceSource) -> list[str]:
    return list(dict.fromkeys([source.id, *source.text_unit_ids]))


async def _stated(
    stores: IndexStores,
    view: GraphView,
    concepts: LoadedConceptGraph | None,
    sources: Sequence[TraceSource],
) -> dict[int, tuple[set[int], set[str]]]:
    """Source number → (the nodes its text units state, the edges among them they state)."""
    wanted = [s for s in sources if s.kind == "text_unit"]
    if not wanted:
        return {}
    if view.kind == "entities":
        out: dict[int, tuple[set[int], set[str]]] = {}
        for s in wanted:
            entity_ids, rel_ids = await stores.graph.citing(_units(s))
            nodes = {view.index_of[e] for e in entity_ids if e in view.index_of}
            rels = set(rel_ids)
            keys = {key for node in nodes for _, key, _, _ in view.links[node] if key in rels}
            out[s.n] = (nodes, keys)
        return out
    if concepts is None:
        return {}
    return await asyncio.to_thread(_concepts_stated, view, concepts, wanted)


def _concepts_stated(
    view: GraphView, concepts: LoadedConceptGraph, sources: Sequence[TraceSource]
) -> dict[int, tuple[set[int], set[str]]]:
    rows = {u: concepts.unit_index[u] for s in sources for u in _units(s)
            if u in concepts.unit_index}  # fmt: skip
    unit_rows = np.asarray(concepts.graph.unit_index)
    mask = np.isin(unit_rows, np.fromiter(rows.values(), dtype=np.int64, count=len(rows)))
    per_row: dict[int, set[int]] = {}
    for row, concept in zip(unit_rows[mask].tolist(), np.asarray(
            concepts.graph.concept_index)[mask].tolist(), strict=True):  # fmt: skip
        per_row.setdefault(int(row), set()).add(int(concept))
    out: dict[int, tuple[set[int], set[str]]] = {}
    for s in sources:
        nodes: set[int] = set()
        keys: set[str] = set()
        for u in _units(s):
            held = per_row.get(rows[u], set()) if u in rows else set()
            nodes |= held
            keys |= {key for c in held for other, key, _, out_ in view.links[c]
                     if out_ and other in held}  # fmt: skip
        out[s.n] = (nodes, keys)
    return out


def _walk(
    view: GraphView, ranked: list[int], max_depth: int, max_nodes: int
) -> tuple[list[tuple[int, int]], bool]:
    """``([(node, depth)], truncated)``: the traced nodes (depth 0), then their rings."""
    kept = ranked[:max_nodes]
    depth = {node: 0 for node in kept}
    if len(ranked) > max_nodes:
        return list(depth.items()), True
    frontier = kept
    for d in range(1, max_depth + 1):
        ring = sorted({o for f in frontier for o, *_ in view.links[f] if o not in depth},
                      key=view.rank_key)  # fmt: skip
        room = max_nodes - len(depth)
        for node in ring[:room]:
            depth[node] = d
        if len(ring) > room:
            return list(depth.items()), True
        frontier = ring
        if not frontier:
            break
    return list(depth.items()), False
