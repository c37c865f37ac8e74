"""Rank fusion: weighted Reciprocal Rank Fusion of several ranked lists.

Source: Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet and
individual Rank Learning Methods" (SIGIR 2009): score(d) = Σ_i w_i / (k + rank_i(d)),
with k = 60 and 1-based ranks. Weights generalise it to trust one list more than another.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["weighted_rrf"]


def weighted_rrf(
    ranked_lists: Sequence[Sequence[str]],
    weights: Sequence[float] | None = None,
    *,
    k: int = 60,
) -> list[tuple[str, float]]:
    """Fuse ranked id lists by weighted RRF.

    Args:
        ranked_lists: each a list of ids, best first; an id repeated within one list counts
            at its first (best) rank only.
        weights: one non-negative weight per list (default: all 1.0).
        k: the RRF constant (> 0).

    Returns:
        ``(id, score)`` pairs, best first; ties broken by best single rank, then by id, so the
        order is the same in any process.

    Raises:
        ValueError: ``weights`` has another length than ``ranked_lists``, a weight is
            negative, or ``k`` is not positive.
    """
    if weights is None:
        weights = [1.0] * len(ranked_lists)
    if len(weights) != len(ranked_lists):
        raise ValueError("one weight per ranked list is required")
    if any(w < 0 for w in weights):
        raise ValueError("weights must be non-negative")
    if k <= 0:
        raise ValueError("k must be positive")
    scores: dict[str, float] = {}
    best_rank: dict[str, int] = {}
    for ids, weight in zip(ranked_lists, weights, strict=True):
        seen: set[str] = set()
        for rank, item in enumerate(ids, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
            best_rank[item] = min(best_rank.get(item, rank), rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best_rank[kv[0]], kv[0]))
