"""Queries over a `GraphView` that need no store: label search, lookup, slices, communities.

Pure functions over the in-memory view (`graph_view.loaded`); the edges' texts of an entity
slice are filled in by `graph_view.reader` from the graph store.
"""

from __future__ import annotations

import bisect
from typing import Literal

from unified_kg_rag.retrieval.graph_view.loaded import GraphView
from unified_kg_rag.retrieval.graph_view.models import (
    CommunityInfo,
    CommunityLevel,
    LabelMatch,
    SliceNode,
    SliceNodeAttributes,
)
from unified_kg_rag.util.errors import NotFoundError

__all__ = [
    "WHOLE_GRAPH",
    "MatchKind",
    "community_levels",
    "community_nodes",
    "find_node",
    "label_matches",
    "match_of",
    "slice_node",
    "slice_nodes",
]

MatchKind = Literal["exact", "prefix", "word"]

WHOLE_GRAPH = "*"
"""The slice label that takes the most connected nodes of the whole graph."""


def match_of(view: GraphView, node: int, match: MatchKind | None = None) -> LabelMatch:
    """The `LabelMatch` of one node (``match`` None outside a search)."""
    return LabelMatch(id=view.ids[node], label=view.labels[node], entity_type=view.types[node],
                      degree=view.degree(node), match=match)  # fmt: skip


def label_matches(view: GraphView, query: str, limit: int) -> list[LabelMatch]:
    """Return up to ``limit`` nodes whose label matches ``query``, ignoring case.

    Exact matches first, then labels starting with ``query``, then labels with a later word
    starting with it; each group by degree (highest first), then label. An empty query
    returns the most connected nodes (as ``prefix`` matches). Cost: a binary search for the
    first two groups; the word group scans the labels only when they leave room.
    """
    q = " ".join(query.split()).casefold()
    if not q:
        return [match_of(view, n, "prefix") for n in view.by_degree[:limit]]
    keys = view.by_folded
    start = bisect.bisect_left(keys, (q, -1))
    stop = bisect.bisect_left(keys, (q + "\U0010ffff", -1))
    prefixed = [i for _, i in keys[start:stop]]
    exact = sorted((i for i in prefixed if view.folded[i] == q), key=view.rank_key)
    prefix = sorted((i for i in prefixed if view.folded[i] != q), key=view.rank_key)
    out = [match_of(view, i, "exact") for i in exact[:limit]]
    out += [match_of(view, i, "prefix") for i in prefix[: limit - len(out)]]
    if len(out) < limit:
        needle = " " + q
        words = sorted((i for i, f in enumerate(view.folded)
                        if needle in f and not f.startswith(q)), key=view.rank_key)  # fmt: skip
        out += [match_of(view, i, "word") for i in words[: limit - len(out)]]
    return out


def find_node(view: GraphView, key: str) -> int:
    """Return the node whose id is ``key``, else the best-connected one labelled ``key``.

    Raises:
        NotFoundError: no node has that id or label (ignoring case).
    """
    node = view.index_of.get(key)
    if node is not None:
        return node
    exact = [m for m in label_matches(view, key, 1) if m.match == "exact"]
    if exact:
        return view.index_of[exact[0].id]
    kind = "entity" if view.kind == "entities" else "concept"
    raise NotFoundError(
        f"no {kind} with the id or label {key!r}; search labels with GET /v1/graph/labels?q=",
        kind=kind, key=key,
    )  # fmt: skip


def slice_nodes(
    view: GraphView, centre: int | None, max_depth: int, max_nodes: int
) -> tuple[list[tuple[int, int]], bool]:
    """Walk breadth-first from ``centre`` and return ``([(node, depth)], truncated)``.

    Each ring (the unvisited neighbours of the previous one) is taken by degree, highest
    first, until ``max_nodes`` nodes are held; ``truncated`` says a ring did not fit. With
    ``centre`` None the slice is the ``max_nodes`` most connected nodes of the graph (depth 0).
    """
    if centre is None:
        chosen = view.by_degree[:max_nodes]
        return [(n, 0) for n in chosen], len(view.ids) > max_nodes
    depth = {centre: 0}
    frontier = [centre]
    for d in range(1, max_depth + 1):
        ring = sorted({o for f in frontier for o, *_ in view.links[f] if o not in depth},
                      key=view.rank_key)  # fmt: skip
        room = max_nodes - len(depth)
        truncated = len(ring) > room
        for node in ring[:room]:
            depth[node] = d
        frontier = ring[:room]
        if truncated:
            return list(depth.items()), True
        if not frontier:
            break
    return list(depth.items()), False


def community_nodes(
    view: GraphView, community_id: str, max_nodes: int
) -> tuple[list[tuple[int, int]], bool]:
    """Return a community's members as ``([(node, 0)], truncated)``, best connected first.

    At most ``max_nodes`` members; ``truncated`` says the cap left members out.

    Raises:
        NotFoundError: the view has no community with that id.
    """
    if community_id not in view.community_index:
        raise NotFoundError(f"no community {community_id!r} in the {view.kind} graph; list them "
                            "with GET /v1/graph/communities", kind="community",
                            key=community_id)  # fmt: skip
    members = sorted(view.members.get(community_id, ()), key=view.rank_key)
    return [(n, 0) for n in members[:max_nodes]], len(members) > max_nodes


def slice_node(view: GraphView, node: int, depth: int) -> SliceNode:
    """The graphology node of ``node`` at ``depth`` hops."""
    leaf = view.leaf[node] if view.leaf else None
    community = view.communities[leaf] if leaf is not None else None
    return SliceNode(key=view.ids[node], attributes=SliceNodeAttributes(
        label=view.labels[node], entity_type=view.types[node], degree=view.degree(node),
        depth=depth, community=community.id if community else None,
        community_level=community.level if community else None,
    ))  # fmt: skip


def community_levels(view: GraphView, level: int | None = None) -> list[CommunityLevel]:
    """The view's communities by level (of one level when given), each level biggest first."""
    levels: dict[int, list[CommunityInfo]] = {}
    for c in view.communities:
        if level is None or c.level == level:
            levels.setdefault(c.level, []).append(c)
    return [
        CommunityLevel(level=lv, communities=sorted(cs, key=lambda c: (-c.size, c.id)))
        for lv, cs in sorted(levels.items())
    ]
