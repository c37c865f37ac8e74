"""Co-occurrence edges between nodes that share text units, capped per node.

Used by the concept graph (``domain.concepts.graph``): concepts linked to the same units are
joined by an edge weighted by the number of units they share. Pure numpy; deterministic.

Not here: choosing the nodes or their links, PPR, communities.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["cooccurrence_edges"]

_PAIR_CHUNK = 4_000_000


def _pair_counts(
    unit_index: NDArray[np.int32], concept_index: NDArray[np.int32], n_concepts: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Count, for each concept pair ``a < b`` (key ``a * n + b``), the units holding both."""
    keys = np.zeros(0, dtype=np.int64)
    totals = np.zeros(0, dtype=np.int64)
    pending: list[NDArray[np.int64]] = []
    pending_size = 0
    starts = np.flatnonzero(np.r_[True, unit_index[1:] != unit_index[:-1]])
    bounds = np.r_[starts, len(unit_index)]
    triu: dict[int, tuple[NDArray[np.intp], NDArray[np.intp]]] = {}
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        k = hi - lo
        if k < 2:
            continue
        rows, cols = triu.setdefault(k, np.triu_indices(k, 1))
        members = concept_index[lo:hi].astype(np.int64)
        pending.append(members[rows] * n_concepts + members[cols])
        pending_size += len(rows)
        if pending_size >= _PAIR_CHUNK:
            keys, totals = _merge_counts(keys, totals, pending)
            pending, pending_size = [], 0
    return _merge_counts(keys, totals, pending)


def _merge_counts(
    keys: NDArray[np.int64], totals: NDArray[np.int64], pending: list[NDArray[np.int64]]
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    if not pending:
        return keys, totals
    fresh = np.concatenate(pending)
    merged, inverse = np.unique(np.concatenate([keys, fresh]), return_inverse=True)
    weights = np.concatenate([totals, np.ones(len(fresh), dtype=np.int64)])
    return merged, np.bincount(inverse, weights=weights).astype(np.int64)


def cooccurrence_edges(
    unit_index: NDArray[np.int32],
    concept_index: NDArray[np.int32],
    ids: Sequence[str],
    *,
    min_count: int = 2,
    max_edges_per_node: int = 50,
) -> tuple[NDArray[np.int32], NDArray[np.int32], NDArray[np.float32]]:
    """Return the co-occurrence edges of nodes linked to the same units.

    Two nodes are joined when at least ``min_count`` units link to both, weighted by that
    count. An edge is kept only when it is among the ``max_edges_per_node`` strongest edges
    of *both* its nodes (stronger first, ties by the other node's id), so no node has more
    than that many edges. Pairs are counted in chunks of 4 million, so memory grows with
    the number of distinct pairs, not with the sum of per-unit pairs.

    Args:
        unit_index: int32 ``[n_links]``, sorted, the unit of each link.
        concept_index: int32 ``[n_links]``, the node of each link (each pair once per unit).
        ids: the ids of the nodes, ``[n_nodes]``; only their order is used, for ties.
        min_count: the fewest shared units for an edge.
        max_edges_per_node: the cap on each node's edges; 0 gives no edges.

    Returns:
        ``(source, target, weight)``: int32, int32, float32 ``[n_edges]``, ``source < target``,
        sorted by source then target; weight is the number of shared units.
    """
    n = len(ids)
    keys, totals = _pair_counts(unit_index, concept_index, n)
    keep = totals >= min_count
    keys, totals = keys[keep], totals[keep]
    if not len(keys) or max_edges_per_node == 0:
        empty = np.zeros(0, dtype=np.int32)
        return empty, empty, np.zeros(0, dtype=np.float32)
    source, target = keys // n, keys % n
    # Rank each edge among the edges of each endpoint: stronger first, then by the other
    # endpoint's id; keep it when it is within the cap at both ends.
    id_rank = np.empty(n, dtype=np.int64)
    id_rank[np.argsort(np.asarray(ids))] = np.arange(n)
    ends = np.concatenate([source, target])
    others = np.concatenate([target, source])
    strength = np.concatenate([totals, totals])
    order = np.lexsort((id_rank[others], -strength, ends))
    sorted_ends = ends[order]
    rank = np.arange(len(order)) - np.searchsorted(sorted_ends, sorted_ends, side="left")
    edge = np.concatenate([np.arange(len(keys)), np.arange(len(keys))])[order]
    kept = np.bincount(edge[rank < max_edges_per_node], minlength=len(keys)) == 2
    return (
        source[kept].astype(np.int32),
        target[kept].astype(np.int32),
        totals[kept].astype(np.float32),
    )
