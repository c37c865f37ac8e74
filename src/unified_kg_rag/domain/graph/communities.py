"""Hierarchical Leiden communities of the entity graph (seed 000 §4.3, DESIGN.md §7).

Level 0 holds the coarsest communities: one Leiden partition (modularity, resolution 1) of the
whole undirected entity graph. A community with more than ``max_cluster_size`` members is
partitioned again on its own subgraph, and its parts are its children one level down (as in
Microsoft GraphRAG's hierarchical Leiden), until every community at its deepest level fits.

Rules, each a deliberate choice:

- **Graph.** Undirected, one edge per entity pair: relationships of either direction or of
  several types between a pair add their weights into one. A weight that is not a positive
  finite number counts as 1 (the relationship was stated; only its strength is unreadable).
  Self-loops and edges naming an id not in ``entity_ids`` are ignored.
- **Small components.** A connected component with fewer than ``min_community_size``
  entities (an isolated entity, a pair) gets no community at all; unlike GraphRAG's
  ``use_lcc``, every other component is clustered.
- **Small communities.** A Leiden community with fewer than ``min_community_size`` members
  joins the neighbouring community (same level, same parent) it has the most edge weight to,
  so no report is written about a lone entity inside a larger component.
- **Splitting.** Modularity at resolution 1 cannot split some dense or star-shaped groups
  (a 30-clique, a hub with 40 leaves: graspologic's ``hierarchical_leiden`` leaves them whole,
  measured). A split that yields one part is retried with the resolution doubled, up to
  ``2**8``; if that still yields one part, the members are cut, in breadth-first order from the
  best-connected member, into equal slices of at most ``max_cluster_size``. A parent identical
  to its only child therefore never exists.
- **Determinism.** Nodes and edges are sorted before each Leiden call, the seed is fixed, and
  a community's id is ``sha256("community", level, *sorted member ids)``: the same graph gives
  the same communities and ids in any process, whatever the input order.

Not here: running it off the event loop (the ingestion stage calls it in a thread), and
reports (`domain.graph.reports`).
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Sequence
from itertools import pairwise

from unified_kg_rag.domain.models import Community
from unified_kg_rag.util.errors import UkrError, UsageError
from unified_kg_rag.util.hashing import sha256_text

__all__ = ["community_id", "detect_communities"]

logger = logging.getLogger(__name__)

_MAX_DOUBLINGS = 8
"""A split that keeps one part is retried at resolution 2, 4, ... 2**8, then sliced."""

_Adjacency = dict[str, list[tuple[str, float]]]
"""Node id -> its neighbours with the pair's summed weight, sorted by neighbour id."""


def community_id(level: int, member_ids: Sequence[str]) -> str:
    """Return a community's content id: ``sha256("community", level, *sorted(member_ids))``."""
    return sha256_text("community", str(level), *sorted(member_ids))


def detect_communities(
    entity_ids: Sequence[str],
    edges: Sequence[tuple[str, str, float]],
    *,
    max_cluster_size: int = 20,
    min_community_size: int = 3,
    seed: int = 0xDEADBEEF,
    max_levels: int | None = None,
) -> list[Community]:
    """Partition the entity graph into hierarchical Leiden communities (see module docstring).

    Args:
        entity_ids: the graph's nodes (`Entity.id`); duplicates are ignored.
        edges: ``(source_id, target_id, weight)`` per relationship, in any order and direction.
        max_cluster_size: a community with more members is split one level down.
        min_community_size: components (and Leiden communities) with fewer entities get no
            community of their own.
        seed: Leiden's random seed (an unsigned 64-bit integer).
        max_levels: levels kept at most (``None``: as deep as splitting needs). With a cap,
            a community at the last level may exceed ``max_cluster_size``.

    Returns:
        Communities sorted by level, then id. ``member_ids`` are sorted; ``children_ids`` are
        ordered biggest child first (then by id); a parent's members are the union of its
        children's. Empty when no component reaches ``min_community_size``.

    Raises:
        UsageError: ``max_cluster_size < 2``, ``min_community_size < 1`` or ``max_levels < 1``.
        UkrError: the Leiden implementation failed.

    Source: Traag, Waltman & van Eck, "From Louvain to Leiden" (2019), via
    ``graspologic_native.leiden``; hierarchy as Microsoft GraphRAG's ``cluster_graph``
    (``max_cluster_size``), with the deviations listed in the module docstring.
    """
    if max_cluster_size < 2:
        raise UsageError("must be at least 2", field="max_cluster_size")
    if min_community_size < 1:
        raise UsageError("must be at least 1", field="min_community_size")
    if max_levels is not None and max_levels < 1:
        raise UsageError("must be at least 1", field="max_levels")
    adjacency = _build_graph(entity_ids, edges)
    nodes = [
        node
        for component in _components(adjacency)
        if len(component) >= min_community_size
        for node in component
    ]
    if not nodes:
        return []
    nodes.sort()
    queue: deque[tuple[int, tuple[str, ...], str | None]] = deque(
        (0, group, None) for group in _partition(nodes, adjacency, 1.0, seed, min_community_size)
    )
    found: dict[str, tuple[int, tuple[str, ...], str | None]] = {}
    children: dict[str, list[tuple[int, str]]] = {}
    while queue:
        level, members, parent = queue.popleft()
        cid = community_id(level, members)
        found[cid] = (level, members, parent)
        if parent is not None:
            children.setdefault(parent, []).append((len(members), cid))
        if len(members) <= max_cluster_size or (max_levels is not None and level + 1 >= max_levels):
            continue
        for part in _split(members, adjacency, seed, min_community_size, max_cluster_size):
            queue.append((level + 1, part, cid))
    communities = [
        Community(
            id=cid,
            level=level,
            member_ids=members,
            parent_id=parent,
            children_ids=tuple(c for _, c in sorted(children.get(cid, ()), key=_biggest_first)),
        )
        for cid, (level, members, parent) in found.items()
    ]
    communities.sort(key=lambda c: (c.level, c.id))
    logger.debug(
        "%d communities over %d clustered entities (%d levels)",
        len(communities),
        len(nodes),
        communities[-1].level + 1,
    )
    return communities


def _biggest_first(item: tuple[int, str]) -> tuple[int, str]:
    return (-item[0], item[1])


def _build_graph(
    entity_ids: Sequence[str], edges: Sequence[tuple[str, str, float]]
) -> _Adjacency:
    """Return the undirected weighted adjacency of the known entities (see module docstring)."""
    known = set(entity_ids)
    weights: dict[tuple[str, str], float] = {}
    for source, target, weight in edges:
        if source == target or source not in known or target not in known:
            continue
        pair = (source, target) if source < target else (target, source)
        w = float(weight) if math.isfinite(weight) and weight > 0 else 1.0
        weights[pair] = weights.get(pair, 0.0) + w
    adjacency: dict[str, list[tuple[str, float]]] = {}
    for (a, b), w in sorted(weights.items()):
        adjacency.setdefault(a, []).append((b, w))
        adjacency.setdefault(b, []).append((a, w))
    for neighbours in adjacency.values():
        neighbours.sort()
    return adjacency


def _components(adjacency: _Adjacency) -> list[list[str]]:
    """Return the connected components (nodes with at least one edge), each sorted."""
    seen: set[str] = set()
    components: list[list[str]] = []
    for start in sorted(adjacency):
        if start in seen:
            continue
        seen.add(start)
        component = [start]
        stack = [start]
        while stack:
            for neighbour, _ in adjacency[stack.pop()]:
                if neighbour not in seen:
                    seen.add(neighbour)
                    component.append(neighbour)
                    stack.append(neighbour)
        components.append(sorted(component))
    return components


def _partition(
    nodes: Sequence[str], adjacency: _Adjacency, resolution: float, seed: int, min_size: int
) -> list[tuple[str, ...]]:
    """Return one Leiden partition of the subgraph induced by ``nodes`` (sorted).

    Parts under ``min_size`` are merged into their strongest neighbour; each part is sorted,
    and the parts are ordered by their first member.
    """
    import graspologic_native

    inside = set(nodes)
    edge_list = [
        (u, v, w) for u in nodes for v, w in adjacency[u] if u < v and v in inside
    ]
    try:
        _, labels = graspologic_native.leiden(
            edge_list, resolution=resolution, seed=seed, use_modularity=True
        )
    except (ValueError, RuntimeError) as exc:
        raise UkrError(f"Leiden clustering of {len(nodes)} entities failed: {exc}") from exc
    label_of: dict[str, int] = {node: int(labels[node]) for node in nodes}
    groups: dict[int, list[str]] = {}
    for node in nodes:
        groups.setdefault(label_of[node], []).append(node)
    _merge_small(groups, label_of, adjacency, min_size)
    return sorted(tuple(sorted(g)) for g in groups.values())


def _merge_small(
    groups: dict[int, list[str]],
    label_of: dict[str, int],
    adjacency: _Adjacency,
    min_size: int,
) -> None:
    """Merge each group under ``min_size`` into the neighbouring group it has most weight to.

    Smallest groups first (then by first member); ties between targets go to the group with
    the smallest first member. A group with no neighbouring group stays. Works in place.
    """
    while True:
        small = sorted(
            (len(members), min(members), label)
            for label, members in groups.items()
            if len(members) < min_size
        )
        merged = False
        for _, _, label in small:
            members = groups.get(label)
            if members is None or len(members) >= min_size:
                continue
            weight_to: dict[int, float] = {}
            for node in members:
                for neighbour, w in adjacency[node]:
                    other = label_of.get(neighbour)
                    if other is not None and other != label:
                        weight_to[other] = weight_to.get(other, 0.0) + w
            if not weight_to:
                continue
            target = min(weight_to, key=lambda g: (-weight_to[g], min(groups[g])))
            for node in members:
                label_of[node] = target
            groups[target].extend(members)
            del groups[label]
            merged = True
        if not merged:
            return


def _split(
    members: tuple[str, ...], adjacency: _Adjacency, seed: int, min_size: int, max_size: int
) -> list[tuple[str, ...]]:
    """Split an oversize community into at least two parts (see module docstring)."""
    resolution = 1.0
    for _ in range(_MAX_DOUBLINGS + 1):
        parts = _partition(members, adjacency, resolution, seed, min_size)
        if len(parts) > 1:
            return parts
        resolution *= 2
    logger.debug("Leiden cannot split %d entities; slicing them", len(members))
    return _slices(members, adjacency, max_size)


def _slices(
    members: tuple[str, ...], adjacency: _Adjacency, max_size: int
) -> list[tuple[str, ...]]:
    """Cut ``members`` into ``ceil(n / max_size)`` slices of near-equal size.

    The members are ordered breadth-first from the one with the most neighbours inside (ties:
    smallest id), so each slice holds mostly neighbours.
    """
    inside = set(members)
    degree = {m: sum(1 for v, _ in adjacency[m] if v in inside) for m in members}
    order: list[str] = []
    seen: set[str] = set()
    for start in sorted(members, key=lambda m: (-degree[m], m)):
        if start in seen:
            continue
        seen.add(start)
        queue = deque([start])
        while queue:
            node = queue.popleft()
            order.append(node)
            for neighbour, _ in adjacency[node]:
                if neighbour in inside and neighbour not in seen:
                    seen.add(neighbour)
                    queue.append(neighbour)
    count = -(-len(order) // max_size)
    bounds = [len(order) * i // count for i in range(count + 1)]
    return sorted(tuple(sorted(order[a:b])) for a, b in pairwise(bounds))
