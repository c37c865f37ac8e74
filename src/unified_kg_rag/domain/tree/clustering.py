"""Clustering one level of the RAPTOR summary tree: reduce, k-means, token bound (pure numpy).

RAPTOR (Sarthi et al., ICLR 2024, arXiv 2401.18059) clusters the nodes of a level in
embedding space and summarises each cluster. This module keeps its structure with the
deviations of seed 000 §6.5 ("Clustering"), each chosen for determinism and for stability
under incremental updates:

- *Reduce* (`reduce_dimensions`): PCA by numpy SVD in place of RAPTOR's unseeded UMAP; axis
  signs fixed and coordinates rounded to 1e-6, so a BLAS thread count cannot flip a tie.
- *Partition* (`kmeans_partition`): Lloyd's k-means with hard assignments in place of the
  Gaussian mixture, started from the farthest-first ``k`` of the ``2k`` points of lowest
  seeded key hash: adding or removing one point changes that sample by at most one point, so
  a small delta keeps most clusters (and their summaries are reused). k-means++ samples by
  cumulative distances, so one inserted point changes every later pick.
- *Token bound* (`cluster_level`): a cluster whose children hold more than
  ``max_cluster_tokens`` is clustered again until it fits.
- *Levels* (`level_should_stop`): RAPTOR's stop at a small level, plus a stop when a level
  would barely shrink.

Every result depends on the keys and vectors only, never on the input order. Summaries,
embedding and storage are the ingestion stage's; the lineage of a node is `tree.lineage`'s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.util.errors import UsageError
from unified_kg_rag.util.hashing import sha256_text

__all__ = [
    "ClusterSettings",
    "cluster_level",
    "kmeans_partition",
    "level_should_stop",
    "reduce_dimensions",
]

_DECIMALS = 6  # coordinates are rounded to 1e-6 (seed 000 §6.5)
_TWO_STEP_WORK = 4_000_000  # n * k above which k-means runs in two steps (seed 000 §6.5)
_BLOCK_ELEMENTS = 1 << 22  # most float64s of one block of point-centre differences


@dataclass(frozen=True)
class ClusterSettings:
    """How one level is clustered (the clustering part of ``graph.raptor``).

    Attributes:
        target_children: children wanted per cluster; ``k = ceil(n / target_children)``.
        max_cluster_tokens: most tokens of the children of one cluster (the summary prompt's
            input); a larger cluster is split.
        reduction_dims: principal axes kept by `reduce_dimensions`.
        seed: seeds the key hash that picks the initial centres.
        max_iter: most Lloyd iterations of one k-means run.

    Raises:
        UsageError: a value out of range (naming the field).
    """

    target_children: int = 6
    max_cluster_tokens: int = 8000
    reduction_dims: int = 10
    seed: int = 0
    max_iter: int = 100

    def __post_init__(self) -> None:
        """Check the ranges."""
        for name, low in (
            ("target_children", 2),
            ("max_cluster_tokens", 1),
            ("reduction_dims", 1),
            ("max_iter", 1),
        ):
            if getattr(self, name) < low:
                raise UsageError(f"must be at least {low}", field=name)


def reduce_dimensions(vectors: NDArray[np.floating[Any]], dims: int) -> NDArray[np.float64]:
    """Project vectors on their top principal axes, deterministically.

    L2-normalises each row (a zero row stays zero), centres the rows, and projects them on
    the top ``min(dims, n - 1, d)`` right singular vectors of the centred matrix (numpy
    SVD; of its ``d x d`` Gram matrix when ``n > d``). Each axis is signed so that its
    largest-magnitude loading is positive, and the coordinates are rounded to 1e-6.

    Args:
        vectors: float32 (or float64) ``[n, d]`` embeddings (any scale).
        dims: most axes kept (``>= 1``).

    Returns:
        float64 ``[n, m]`` coordinates, ``m = min(dims, n - 1, d)``; ``[n, 0]`` for
        ``n <= 1``.

    Raises:
        ValueError: ``vectors`` is not 2-D or holds NaN or infinity; ``dims < 1``.

    Source: seed 000 §6.5 "Reduce" (replaces RAPTOR's UMAP).
    """
    if dims < 1:
        raise ValueError(f"dims must be at least 1, got {dims}")
    x = np.asarray(vectors, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"vectors must be a 2-D array, got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("vectors hold NaN or infinity")
    n, d = x.shape
    m = min(dims, n - 1, d)
    if m <= 0:
        return np.zeros((n, 0), dtype=np.float64)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    x = x / np.where(norms > 0.0, norms, 1.0)
    x = x - x.mean(axis=0, keepdims=True)
    # the right singular vectors of x are those of the d x d matrix x^T x, far cheaper to
    # decompose when n > d (no n x d left factor is formed)
    _, _, vt = np.linalg.svd(x.T @ x if n > d else x, full_matrices=False)
    axes = vt[:m]
    signs = np.sign(axes[np.arange(m), np.argmax(np.abs(axes), axis=1)])
    axes = axes * np.where(signs == 0.0, 1.0, signs)[:, None]
    coords = np.round(x @ axes.T, _DECIMALS)
    return np.asarray(coords + 0.0, dtype=np.float64)  # + 0.0 turns -0.0 into 0.0


def kmeans_partition(
    keys: Sequence[str],
    points: NDArray[np.float64],
    k: int,
    *,
    seed: int,
    max_iter: int = 100,
) -> list[list[int]]:
    """Partition points into at most ``k`` clusters with Lloyd's k-means.

    Initial centres: the ``min(2k, n)`` points of lowest ``sha256(seed, key)`` (the
    sample), then farthest-first within the sample, starting from its lowest hash. Then
    Lloyd's iterations (squared Euclidean distance, hard assignment, centre = member mean)
    until no assignment changes or ``max_iter``; a cluster left empty is re-seeded at the
    point farthest from its centre. Ties are broken by key. ``k`` is capped by the number of
    distinct points, so identical points give one cluster. When ``n * k`` passes 4 million,
    two steps bound the cost (about ``2 n sqrt(k)`` distances an iteration): about
    ``sqrt(k)`` coarse clusters, then each clustered again into its share of ``k``.

    Args:
        keys: ``n`` distinct ids, one per point (their order does not matter).
        points: float64 ``[n, m]`` coordinates (`reduce_dimensions`).
        k: clusters wanted (``>= 1``).
        seed: seeds the key hash.
        max_iter: most Lloyd iterations.

    Returns:
        Clusters as lists of indices into ``keys``, each sorted by key, the clusters sorted by
        their smallest key; none empty. ``[]`` for no point.

    Raises:
        ValueError: ``keys`` and ``points`` differ in length, a key repeats, or ``k < 1``.

    Source: seed 000 §6.5 "Partition one level" (Lloyd 1982; the hash-ranked start is ours).
    """
    n = len(keys)
    if len(points) != n:
        raise ValueError(f"{n} keys but {len(points)} points")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if n == 0:
        return []
    order = sorted(range(n), key=keys.__getitem__)
    if len({keys[i] for i in order}) != n:
        raise ValueError("keys must be distinct")
    # row r is the r-th key in key order, so a tie broken by row is a tie broken by key
    x = np.asarray(points, dtype=np.float64).reshape(n, -1)[order]
    sorted_keys = [keys[i] for i in order]
    if n * k > _TWO_STEP_WORK:
        groups = _two_step(sorted_keys, x, k, seed, max_iter)
    else:
        groups = _lloyd(sorted_keys, x, k, seed, max_iter)
    return sorted(([order[r] for r in g] for g in groups), key=lambda g: keys[g[0]])


def _two_step(
    keys: list[str], x: NDArray[np.float64], k: int, seed: int, max_iter: int
) -> list[list[int]]:
    """About ``sqrt(k)`` coarse clusters, then each split into its share of ``k``."""
    coarse = _lloyd(keys, x, max(2, round(math.sqrt(k))), seed, max_iter)
    groups: list[list[int]] = []
    for rows in coarse:
        share = max(1, round(k * len(rows) / len(keys)))
        sub = _lloyd([keys[r] for r in rows], x[rows], share, seed, max_iter)
        groups.extend([rows[i] for i in part] for part in sub)
    return groups


def _lloyd(
    keys: list[str], x: NDArray[np.float64], k: int, seed: int, max_iter: int
) -> list[list[int]]:
    """Lloyd's k-means over rows sorted by key; the clusters' rows, ascending."""
    k = min(k, len(np.unique(x, axis=0)) if x.shape[1] else 1)
    centres = x[_initial_centres(keys, x, k, seed)]
    labels = np.full(len(keys), -1, dtype=np.int64)
    for _ in range(max_iter):
        dist = _sq_distances(x, centres)
        new = np.argmin(dist, axis=1)  # first minimum: the lowest centre index
        new = _reseed_empty(dist, new, k)
        if np.array_equal(new, labels):
            break
        labels = new
        centres = _means(x, labels, k)
    groups: dict[int, list[int]] = {}
    for row, label in enumerate(labels.tolist()):
        groups.setdefault(label, []).append(row)
    return list(groups.values())


def _initial_centres(keys: list[str], x: NDArray[np.float64], k: int, seed: int) -> list[int]:
    """Rows of the farthest-first ``k`` among the ``2k`` rows of lowest seeded key hash."""
    ranked = sorted(range(len(keys)), key=lambda r: (sha256_text(str(seed), keys[r]), keys[r]))
    sample = np.array(ranked[: 2 * k], dtype=np.int64)
    sample_x = x[sample]
    chosen = [0]
    nearest = _sq_distances(sample_x, sample_x[:1])[:, 0]
    while len(chosen) < k:
        tied = np.flatnonzero(nearest == nearest.max())
        best = int(tied[np.argmin(sample[tied])])  # the farthest, ties to the smallest key
        chosen.append(best)
        nearest = np.minimum(nearest, _sq_distances(sample_x, sample_x[best : best + 1])[:, 0])
    return [int(sample[s]) for s in chosen]


def _sq_distances(x: NDArray[np.float64], c: NDArray[np.float64]) -> NDArray[np.float64]:
    """Squared distances ``[n, k]``, from differences, a block of rows at a time.

    Exactly 0 between equal points, and no BLAS: the sums do not depend on a thread count.
    """
    out = np.empty((len(x), len(c)), dtype=np.float64)
    step = max(1, _BLOCK_ELEMENTS // max(1, len(c) * x.shape[1]))
    for start in range(0, len(x), step):
        diff = x[start : start + step, None, :] - c[None, :, :]
        out[start : start + step] = np.einsum("ijk,ijk->ij", diff, diff)
    return out


def _reseed_empty(
    dist: NDArray[np.float64], labels: NDArray[np.int64], k: int
) -> NDArray[np.int64]:
    """Move the point farthest from its centre into each empty cluster (ties: smallest key)."""
    labels = labels.copy()
    for empty in np.setdiff1d(np.arange(k), labels).tolist():
        own = dist[np.arange(len(labels)), labels]
        sizes = np.bincount(labels, minlength=k)
        own = np.where(sizes[labels] > 1, own, -1.0)  # never empty another cluster
        labels[int(np.argmax(own))] = empty  # argmax: the first row, i.e. the smallest key
    return labels


def _means(x: NDArray[np.float64], labels: NDArray[np.int64], k: int) -> NDArray[np.float64]:
    """Mean of each cluster's rows (every cluster non-empty), summed in row order."""
    order = np.argsort(labels, kind="stable")
    starts = np.searchsorted(labels[order], np.arange(k))
    sums = np.add.reduceat(x[order], starts, axis=0)
    counts = np.bincount(labels, minlength=k).astype(np.float64)
    return np.asarray(sums / counts[:, None], dtype=np.float64)


def cluster_level(
    keys: Sequence[str],
    vectors: NDArray[np.float32],
    n_tokens: Sequence[int],
    settings: ClusterSettings,
) -> list[tuple[str, ...]]:
    """Return the clusters of one tree level, within the token bound.

    Sorts the inputs by key, reduces them (`reduce_dimensions`), partitions them into
    ``ceil(n / target_children)`` clusters (`kmeans_partition`), then splits every cluster
    whose token sum exceeds ``max_cluster_tokens``: its members are reduced and clustered
    again into ``max(2, ceil(tokens / max_cluster_tokens))`` clusters, recursively; a split
    that does not shrink (identical vectors) falls back to packing the members in key order
    within the budget. A single item over the budget stays a cluster of its own.

    Args:
        keys: ``n`` distinct node ids (any order).
        vectors: float ``[n, d]`` embeddings of the nodes, in the order of ``keys``.
        n_tokens: tokens of each node's text, in the order of ``keys``.
        settings: the clustering settings.

    Returns:
        The clusters as sorted tuples of keys, sorted; every key in exactly one. ``[]`` for
        ``n == 0``, ``[(key,)]`` for ``n == 1``.

    Raises:
        ValueError: the inputs differ in length, a key repeats, or a vector is not finite.

    Source: seed 000 §6.5 "Partition one level" and "Token bound"; RAPTOR's recursive
    re-clustering of a cluster over its token limit (Sarthi et al. 2024, §3).
    """
    n = len(keys)
    if len(vectors) != n or len(n_tokens) != n:
        raise ValueError(f"{n} keys, {len(vectors)} vectors and {len(n_tokens)} token counts")
    if len(set(keys)) != n:
        raise ValueError("keys must be distinct")
    if n == 0:
        return []
    order = sorted(range(n), key=keys.__getitem__)
    sorted_keys = [keys[i] for i in order]
    x = np.asarray(vectors, dtype=np.float64)[order]
    tokens = [int(n_tokens[i]) for i in order]
    if n == 1:
        return [(sorted_keys[0],)]
    points = reduce_dimensions(x, settings.reduction_dims)
    k = math.ceil(n / settings.target_children)
    first = kmeans_partition(sorted_keys, points, k, seed=settings.seed, max_iter=settings.max_iter)
    done: list[list[int]] = []
    pending = list(first)
    while pending:
        rows = pending.pop()
        total = sum(tokens[r] for r in rows)
        if total <= settings.max_cluster_tokens or len(rows) == 1:
            done.append(rows)
            continue
        parts = _split(rows, sorted_keys, x, total, settings)
        if len(parts) < 2:
            done.extend(_pack(rows, tokens, settings.max_cluster_tokens))
        else:
            pending.extend(parts)
    return sorted(tuple(sorted_keys[r] for r in sorted(rows)) for rows in done)


def _split(
    rows: list[int],
    keys: list[str],
    x: NDArray[np.float64],
    total: int,
    settings: ClusterSettings,
) -> list[list[int]]:
    """Cluster the rows of one over-budget cluster again, at least two ways."""
    k = min(len(rows), max(2, math.ceil(total / settings.max_cluster_tokens)))
    points = reduce_dimensions(x[rows], settings.reduction_dims)
    sub = kmeans_partition(
        [keys[r] for r in rows], points, k, seed=settings.seed, max_iter=settings.max_iter
    )
    return [[rows[i] for i in part] for part in sub]


def _pack(rows: list[int], tokens: list[int], budget: int) -> list[list[int]]:
    """Pack rows (in key order) into consecutive groups of at most ``budget`` tokens."""
    packs: list[list[int]] = []
    used = 0
    for r in sorted(rows):
        if packs and used + tokens[r] <= budget:
            packs[-1].append(r)
            used += tokens[r]
        else:
            packs.append([r])
            used = tokens[r]
    return packs


def level_should_stop(
    n_nodes: int,
    n_next: int,
    *,
    min_nodes_to_cluster: int = 11,
    min_level_shrink: float = 0.2,
) -> bool:
    """Say whether the tree stops growing above a level.

    Args:
        n_nodes: nodes of the current level.
        n_next: nodes the next level would hold (its clusters).
        min_nodes_to_cluster: a level of at most this many nodes is the top.
        min_level_shrink: least share ``(n_nodes - n_next) / n_nodes`` the next level must
            shrink by (compared at 1e-9, so 3 of 15 is a 0.2 shrink).

    Returns:
        True when ``n_nodes <= min_nodes_to_cluster`` or the level would shrink by less
        than ``min_level_shrink``.

    Source: RAPTOR's stop at ``reduction_dimension + 1`` nodes (Sarthi et al. 2024); the
    shrink stop is seed 000 §6.5 "Levels" (deviation 9: no near-identical levels).
    """
    if n_nodes <= min_nodes_to_cluster:
        return True
    shrink = (n_nodes - n_next) / n_nodes
    return round(shrink, 9) < round(min_level_shrink, 9)
