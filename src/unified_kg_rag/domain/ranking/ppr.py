"""Personalized PageRank over a graph of entity and passage nodes (HippoRAG 2 retrieval core).

Source: Gutiérrez et al., *From RAG to Memory: Non-Parametric Continual Learning for Large
Language Models* (HippoRAG 2, ICML 2025, arXiv 2502.14802), seed 000 §6.4: the graph of
entity/concept and passage nodes, its reset vector (step 5), the power iteration (step 6) and
the truncation bound. Re-written from the paper and the seed; no code of the original is used.

What belongs here: the pure numeric core (numpy and scipy.sparse only): building the
undirected node graph, the HippoRAG 2 reset vector, the power iteration, ranking its scores,
and the bound on the mass a truncated neighbourhood can move. Not here: reading the stores,
the neighbourhood expansion, fusion with the passage hits (the ``ppr`` strategy does those),
or running this off the event loop (the caller uses ``asyncio.to_thread``).

Determinism: graph nodes are ordered by id and edges are summed in sorted order, so the same
input in any order gives bit-identical scores; ties rank by id.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # scipy is imported at first use: importing the package stays cheap
    import scipy.sparse as sp  # type: ignore[import-untyped]

logger = logging.getLogger(__name__)

__all__ = [
    "PageRankResult",
    "PassageGraph",
    "build_passage_graph",
    "hipporag_reset",
    "lexical_seed_weights",
    "personalized_pagerank",
    "rank_nodes",
    "truncation_bound",
]


@dataclass(frozen=True, slots=True)
class PageRankResult:
    """The outcome of one power iteration.

    Attributes:
        scores: ``ndarray[n] float64``, non-negative, summing to 1 when the reset vector had
            mass (all zeros otherwise).
        iterations: power-iteration steps taken (0 when nothing was iterated).
        converged: whether the L1 change of the last step fell below the tolerance.
    """

    scores: NDArray[np.float64]
    iterations: int
    converged: bool


@dataclass(frozen=True, slots=True)
class PassageGraph:
    """An undirected graph of entity and passage nodes, ordered by node id.

    Attributes:
        node_ids: every node id, sorted, entities and passages together.
        index: node id -> position in ``node_ids`` (and in the adjacency and score vectors).
        adjacency: ``csr_matrix[n, n] float64``, symmetric, non-negative, no self-loops.
        n_entities: number of entity nodes.
        n_passages: number of passage nodes.
        passage_mask: ``ndarray[n] bool``, True at the passage nodes (to rank passages only).
    """

    node_ids: tuple[str, ...]
    index: dict[str, int]
    adjacency: sp.csr_matrix
    n_entities: int
    n_passages: int
    passage_mask: NDArray[np.bool_]


def personalized_pagerank(
    adjacency: sp.csr_matrix,
    reset: NDArray[np.float64],
    *,
    damping: float = 0.5,
    max_iterations: int = 30,
    tolerance: float = 1e-6,
) -> PageRankResult:
    """Personalized PageRank by power iteration, dangling mass returned to the reset vector.

    Iterates ``p = (1 - d) r + d (p P + (p · dangling) r)`` from ``p = r``, where ``r`` is the
    reset vector scaled to sum 1, ``P`` the row-normalised adjacency and ``dangling`` the
    indicator of nodes without edges: the mass of such a node returns to ``r``, as in
    igraph's (PRPACK) personalized PageRank that HippoRAG calls and networkx's
    ``pagerank(personalization=r, dangling=r)``. Stops when the L1 change of a step is below
    ``tolerance`` or after ``max_iterations`` steps.

    Args:
        adjacency: ``csr_matrix[n, n]`` (any scipy sparse or dense 2-D array is converted),
            non-negative finite weights, symmetric for an undirected graph (a directed one is
            read row -> column). Duplicate entries add up.
        reset: ``ndarray[n] float64``, the un-normalised reset (personalization) vector. Zero
            mass, a NaN, an infinity or a negative entry gives all-zero scores (never NaN),
            0 iterations and ``converged`` True.
        damping: ``d``, the probability of following an edge at each step, in [0, 1].
        max_iterations: at most this many steps (>= 1).
        tolerance: L1 change below which the iteration stops (>= 0).

    Returns:
        The scores in node order, the steps taken and whether the tolerance was reached.

    Raises:
        ValueError: the adjacency is not square, ``reset`` does not match it, a weight is
            negative or not finite, or a parameter is out of range.

    Source: seed 000 §6.4 step 6; Page et al. 1999 with Haveliwala's personalization.
    """
    if not 0.0 <= damping <= 1.0:
        raise ValueError("damping must lie in [0, 1]")
    if max_iterations < 1:
        raise ValueError("max_iterations must be at least 1")
    if not tolerance >= 0.0:
        raise ValueError("tolerance must be non-negative")
    import scipy.sparse as sp

    matrix = sp.csr_matrix(adjacency, dtype=np.float64)
    n = matrix.shape[0]
    if matrix.shape != (n, n):
        raise ValueError(f"adjacency must be square, got shape {matrix.shape}")
    r = np.asarray(reset, dtype=np.float64)
    if r.shape != (n,):
        raise ValueError(f"reset must have shape ({n},), got {r.shape}")
    if matrix.nnz and (not np.all(np.isfinite(matrix.data)) or matrix.data.min() < 0.0):
        raise ValueError("adjacency weights must be finite and non-negative")
    mass = float(r.sum()) if n else 0.0
    if n == 0 or not np.all(np.isfinite(r)) or np.any(r < 0.0) or not mass > 0.0:
        logger.debug("reset vector without usable mass (n=%d): all-zero scores", n)
        return PageRankResult(np.zeros(n, dtype=np.float64), 0, True)
    r = r / mass
    out_weight = np.asarray(matrix.sum(axis=1), dtype=np.float64).ravel()
    dangling = np.flatnonzero(out_weight <= 0.0)
    inverse = np.zeros(n, dtype=np.float64)
    linked = out_weight > 0.0
    inverse[linked] = 1.0 / out_weight[linked]
    transition_t = (sp.diags(inverse) @ matrix).T.tocsr()  # P^T: p P == P^T @ p
    p = r.copy()
    converged = False
    steps = 0
    while steps < max_iterations and not converged:
        steps += 1
        restart = (1.0 - damping) + damping * float(p[dangling].sum())
        updated = damping * np.asarray(transition_t @ p).ravel() + restart * r
        converged = float(np.abs(updated - p).sum()) < tolerance
        p = updated
    total = float(p.sum())
    scores = p / total if total > 0.0 else np.zeros(n, dtype=np.float64)
    return PageRankResult(scores, steps, converged)


def rank_nodes(scores: NDArray[np.float64], node_ids: Sequence[str]) -> list[tuple[str, float]]:
    """Rank nodes by score, best first; ties by id; nodes scoring zero (or NaN) are left out.

    Args:
        scores: ``ndarray[n] float64`` in node order (e.g. ``PageRankResult.scores``).
        node_ids: the ``n`` node ids in the same order.

    Returns:
        ``(node id, score)`` pairs with a positive score, descending by score, then by id.

    Raises:
        ValueError: ``scores`` and ``node_ids`` differ in length.
    """
    values = np.asarray(scores, dtype=np.float64).ravel()
    if values.shape[0] != len(node_ids):
        raise ValueError("one score per node id is required")
    ranked = [(node_ids[i], float(values[i])) for i in np.flatnonzero(values > 0.0).tolist()]
    ranked.sort(key=lambda pair: (-pair[1], pair[0]))
    return ranked


def build_passage_graph(
    entity_ids: Sequence[str],
    passage_ids: Sequence[str],
    entity_edges: Sequence[tuple[str, str, float]],
    entity_passage_edges: Sequence[tuple[str, str, float]],
) -> PassageGraph:
    """Build the undirected entity/passage graph of seed 000 §6.4 step 4.

    Args:
        entity_ids: entity (or concept) node ids; repeats collapse into one node.
        passage_ids: passage node ids; repeats collapse. Must not share an id with
            ``entity_ids`` (the caller prefixes the two kinds).
        entity_edges: ``(entity id, entity id, weight)`` relationships; an edge naming an id
            that is not an entity node is ignored.
        entity_passage_edges: ``(entity id, passage id, weight)`` lineage links; one whose
            first id is not an entity node or whose second is not a passage node is ignored.

    Returns:
        The graph: node ids sorted, parallel edges (either direction) summed, self-loops and
        zero weights dropped, the adjacency symmetric.

    Raises:
        ValueError: an id is both an entity and a passage, or a weight is negative or not
            finite.
    """
    entities = set(entity_ids)
    passages = set(passage_ids)
    shared = entities & passages
    if shared:
        raise ValueError(f"ids are both entity and passage nodes: {sorted(shared)[:5]}")
    node_ids = tuple(sorted(entities | passages))
    index = {node: i for i, node in enumerate(node_ids)}
    rows: list[int] = []
    cols: list[int] = []
    weights: list[float] = []
    typed_edges = ((entity_edges, entities, entities), (entity_passage_edges, entities, passages))
    for edges, left, right in typed_edges:
        for source, target, weight in edges:
            w = float(weight)
            if not (math.isfinite(w) and w >= 0.0):
                raise ValueError(f"edge {source!r}-{target!r} has weight {weight!r}")
            if source == target or w == 0.0 or source not in left or target not in right:
                continue
            i, j = index[source], index[target]
            rows += (i, j)
            cols += (j, i)
            weights += (w, w)
    n = len(node_ids)
    passage_mask = np.zeros(n, dtype=np.bool_)
    passage_mask[[index[p] for p in passages]] = True
    return PassageGraph(
        node_ids=node_ids,
        index=index,
        adjacency=_summed_csr(rows, cols, weights, n),
        n_entities=len(entities),
        n_passages=len(passages),
        passage_mask=passage_mask,
    )


def _summed_csr(rows: list[int], cols: list[int], weights: list[float], n: int) -> sp.csr_matrix:
    """Sum duplicate ``(row, col)`` entries in sorted order and return a canonical CSR matrix."""
    import scipy.sparse as sp

    if not rows:
        return sp.csr_matrix((n, n), dtype=np.float64)
    r = np.asarray(rows, dtype=np.int64)
    c = np.asarray(cols, dtype=np.int64)
    w = np.asarray(weights, dtype=np.float64)
    order = np.lexsort((w, c, r))  # by row, column, then weight: input order never matters
    r, c, w = r[order], c[order], w[order]
    starts = np.flatnonzero(np.r_[True, (r[1:] != r[:-1]) | (c[1:] != c[:-1])])
    summed = np.add.reduceat(w, starts)
    return sp.csr_matrix((summed, (r[starts], c[starts])), shape=(n, n), dtype=np.float64)


def hipporag_reset(
    graph: PassageGraph,
    *,
    fact_scores: Sequence[tuple[str, str, float]],
    entity_frequency: Mapping[str, int],
    passage_scores: Mapping[str, float],
    link_top_k: int = 5,
    passage_node_weight: float = 0.05,
) -> NDArray[np.float64]:
    """HippoRAG 2's reset vector (seed 000 §6.4 step 5), un-normalised, in graph node order.

    Each fact's score is read relative to the best fact's (``score / max score``). An entity
    node scores the mean, over the facts naming it (each end counted, so a self-loop fact
    counts twice), of the relative fact score divided by ``max(1, frequency)``; only the
    ``link_top_k`` best-scoring entity nodes keep their score (ties by id; an endpoint that
    is not an entity node of the graph takes no slot). A passage node among the passage
    hits scores ``passage_node_weight`` times its hit score min-max normalised over the hits
    that are passage nodes (all 1 when they tie). Negative results are clipped to 0.

    Args:
        graph: the graph the vector is for.
        fact_scores: ``(source entity id, target entity id, similarity)`` of the fact hits.
            Facts with a non-finite score are ignored; when the best score is not positive no
            entity seeds.
        entity_frequency: entity id -> number of passages it cites (missing: 0, read as 1).
        passage_scores: passage id -> hit score; ids that are not passage nodes and
            non-finite scores are ignored.
        link_top_k: how many entity nodes keep their score (>= 0).
        passage_node_weight: the passage seeds' weight relative to the best fact (>= 0).

    Returns:
        ``ndarray[n] float64``, non-negative, zero where nothing seeds; pass it to
        :func:`personalized_pagerank`, which normalises it.

    Raises:
        ValueError: ``link_top_k`` or ``passage_node_weight`` is negative.

    Source: HippoRAG 2 ``graph_search_with_fact_entities`` (linking_top_k 5,
    passage_node_weight 0.05), as seed 000 §6.4 adapts it.
    """
    if link_top_k < 0:
        raise ValueError("link_top_k must be non-negative")
    if not passage_node_weight >= 0.0:
        raise ValueError("passage_node_weight must be non-negative")
    n = len(graph.node_ids)
    reset = np.zeros(n, dtype=np.float64)
    facts = [(s, t, float(v)) for s, t, v in fact_scores if math.isfinite(float(v))]
    best = max((v for _, _, v in facts), default=0.0)
    if best > 0.0 and link_top_k > 0:
        totals: dict[int, float] = {}
        counts: dict[int, int] = {}
        for source, target, value in facts:
            for entity in (source, target):
                i = graph.index.get(entity)
                if i is None or graph.passage_mask[i]:
                    continue
                weighted = (value / best) / max(1, entity_frequency.get(entity, 0))
                totals[i] = totals.get(i, 0.0) + weighted
                counts[i] = counts.get(i, 0) + 1
        means = sorted(((totals[i] / counts[i], i) for i in totals), key=lambda m: (-m[0], m[1]))
        for mean, i in means[:link_top_k]:
            reset[i] = max(mean, 0.0)
    hits = {
        graph.index[pid]: float(v)
        for pid, v in passage_scores.items()
        if pid in graph.index and graph.passage_mask[graph.index[pid]] and math.isfinite(float(v))
    }
    if hits:
        low, high = min(hits.values()), max(hits.values())
        for i, value in hits.items():
            scaled = (value - low) / (high - low) if high > low else 1.0
            reset[i] += passage_node_weight * scaled
    return reset


def lexical_seed_weights(scores: Sequence[float], sharpness: float) -> list[float]:
    """Return the seed weights of BM25 hits, best first (the best weighs 1).

    Args:
        scores: the hits' BM25 scores (higher is better), in rank order.
        sharpness: ``a`` >= 0. With ``a`` > 0 and a positive best score ``b``, the hit scoring
            ``s`` weighs ``exp(a * (max(s, 0) / b - 1))``: a hit far behind the best (the one
            passage holding a question's rare name) seeds little, near-ties seed alike. With
            ``a`` = 0, or no positive score, the k-th hit weighs ``1 / k``.

    Returns:
        One weight per score, in (0, 1].

    Raises:
        ValueError: ``sharpness`` negative.

    Source: this project (issue 19). HippoRAG 2 seeds passages by min-max scaled dense
    scores; the score-relative exponential mirrors the concept graph's dense seeding,
    ``exp(sharpness * (cosine - best))``, on BM25's scale, which has no fixed range, hence
    the ratio to the best score.
    """
    if sharpness < 0:
        raise ValueError("sharpness must be non-negative")
    best = max(scores, default=0.0)
    if sharpness == 0 or best <= 0:
        return [1.0 / rank for rank in range(1, len(scores) + 1)]
    return [math.exp(sharpness * (max(s, 0.0) / best - 1.0)) for s in scores]


def truncation_bound(damping: float, hops: int) -> float:
    """Bound the L1 change of PPR scores when the graph is cut to the ``hops``-ball.

    PPR is where a walk started on the reset vector stops, continuing each step with
    probability ``d``. Cutting the graph to the nodes within ``h`` hops of the reset nodes
    changes only walks that step off the ball's boundary, which take at least ``h + 1``
    steps and so carry at most ``d^(h+1)`` of the mass; the two score vectors therefore
    differ by at most ``2 d^(h+1)`` in L1 (twice the total-variation distance).

    Args:
        damping: ``d``, the probability of following an edge, in [0, 1].
        hops: ``h``, the radius of the neighbourhood kept (>= 0).

    Returns:
        ``2 * d ** (h + 1)``.

    Raises:
        ValueError: ``damping`` outside [0, 1] or ``hops`` negative.

    Source: seed 000 §6.4, "Why a truncated neighbourhood can be enough".
    """
    if not 0.0 <= damping <= 1.0:
        raise ValueError("damping must lie in [0, 1]")
    if hops < 0:
        raise ValueError("hops must be non-negative")
    return 2.0 * damping ** (hops + 1)
