"""Global PageRank of a graph's nodes (centrality), and of the text units they cite.

What belongs here: the pure numeric step of the staged pipeline's ``pagerank`` signal. The
graph is the index's entity graph (entities, relationships weighted by ``weight``) or its
concept graph (concepts, co-occurrence edges weighted by the units two concepts share),
read as undirected: an LLM's relationship direction (``A WORKED_WITH B``) says nothing about
which end is more central. Not here: reading or writing the stores (`ingestion.centrality`)
and the stage that reads the stored values (`retrieval.pipeline_centrality`).

The iteration is `domain.ranking.ppr.personalized_pagerank` with a uniform reset vector
(scipy sparse power iteration): for an undirected graph this is networkx's
``pagerank(G, alpha=damping, weight="weight")`` (a node without edges returns its mass
uniformly). Nodes are ordered by id and parallel edges summed in sorted order, so the same
graph in any order gives bit-identical values.

Source: Page, Brin, Motwani and Winograd, *The PageRank Citation Ranking* (1999); seed 002
("PageRank": pre-computed centrality, normalised to 0..1, a default for missing nodes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from unified_kg_rag.domain.ranking.ppr import build_passage_graph, personalized_pagerank
from unified_kg_rag.util.hashing import sha256_json

__all__ = ["GlobalPageRank", "global_pagerank", "graph_digest", "unit_pagerank"]

DAMPING = 0.85
"""The damping of Page et al. (and networkx's default ``alpha``)."""


@dataclass(frozen=True)
class GlobalPageRank:
    """The PageRank of every node of a graph.

    Attributes:
        values: node id → PageRank (sums to 1 over the nodes; empty for an empty graph),
            in id order.
        nodes: the number of nodes.
        edges: the number of distinct undirected edges (parallel ones summed, self-loops
            and zero weights dropped).
        iterations: power-iteration steps taken.
        converged: whether the L1 change of the last step fell below the tolerance.
    """

    values: dict[str, float]
    nodes: int
    edges: int
    iterations: int
    converged: bool

    @property
    def max_value(self) -> float:
        """The largest node value (0.0 for an empty graph): the pipeline's 1.0."""
        return max(self.values.values(), default=0.0)


def global_pagerank(
    node_ids: Iterable[str],
    edges: Iterable[tuple[str, str, float]],
    *,
    damping: float = DAMPING,
    max_iterations: int = 200,
    tolerance: float = 1e-10,
) -> GlobalPageRank:
    """Return the weighted PageRank of an undirected graph.

    Args:
        node_ids: the node ids; repeats collapse. An edge endpoint not listed is added.
        edges: ``(node id, node id, weight)``, weight ≥ 0 and finite; direction ignored,
            parallel edges summed, self-loops and zero weights dropped.
        damping: the probability of following an edge at each step, in [0, 1].
        max_iterations: at most this many power-iteration steps (≥ 1).
        tolerance: the L1 change of a step below which the iteration stops (≥ 0).

    Returns:
        The values (non-negative, summing to 1), node and edge counts, steps taken.

    Raises:
        ValueError: a weight is negative or not finite, or a parameter is out of range.

    Source: Page et al. 1999; the iteration of `personalized_pagerank` with ``r`` uniform.
    """
    edge_list = [(str(s), str(t), float(w)) for s, t, w in edges]
    nodes = set(node_ids) | {n for s, t, _ in edge_list for n in (s, t)}
    # the passage side of a PassageGraph stays empty: every node is an "entity" node
    graph = build_passage_graph(sorted(nodes), [], edge_list, [])
    n = len(graph.node_ids)
    if n == 0:
        return GlobalPageRank({}, 0, 0, 0, True)
    result = personalized_pagerank(
        graph.adjacency, np.full(n, 1.0 / n), damping=damping,
        max_iterations=max_iterations, tolerance=tolerance,
    )  # fmt: skip
    values = {node: float(v) for node, v in zip(graph.node_ids, result.scores, strict=True)}
    return GlobalPageRank(
        values, n, int(graph.adjacency.nnz // 2), result.iterations, result.converged
    )


def unit_pagerank(
    values: Mapping[str, float], lineage: Iterable[tuple[str, Sequence[str]]]
) -> dict[str, float]:
    """Return each text unit's PageRank: the largest value among the nodes citing it.

    The maximum, not the sum: a unit citing one hub is as central as the hub, and a long
    unit naming many minor entities does not outrank it; the value stays within the
    graph's range, so dividing by the graph's largest value gives 0..1.

    Args:
        values: node id → PageRank (`GlobalPageRank.values`).
        lineage: ``(node id, text unit ids it cites)``; a node without a value is skipped.

    Returns:
        text unit id → value, in id order.
    """
    out: dict[str, float] = {}
    for node, units in lineage:
        value = values.get(node)
        if value is None:
            continue
        for unit in units:
            if value > out.get(unit, -1.0):
                out[unit] = value
    return dict(sorted(out.items()))


def graph_digest(
    node_ids: Iterable[str],
    edges: Iterable[tuple[str, str, float]],
    lineage: Iterable[tuple[str, Sequence[str]]],
) -> str:
    """Return a SHA-256 of what the PageRank and the unit values depend on.

    The same nodes, weighted edges (in any order and direction) and lineage give the same
    digest, so an unchanged graph is not computed again.
    """
    undirected = sorted((min(s, t), max(s, t), float(w)) for s, t, w in edges)
    return sha256_json({
        "nodes": sorted(set(node_ids)),
        "edges": undirected,
        "lineage": sorted((node, sorted(units)) for node, units in lineage),
    })  # fmt: skip
