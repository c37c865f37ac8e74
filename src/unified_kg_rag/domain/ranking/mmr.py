"""Maximal Marginal Relevance: reorder ranked items to trade relevance against redundancy.

Source: Carbonell & Goldstein, "The Use of MMR, Diversity-Based Reranking for Reordering
Documents and Producing Summaries" (SIGIR 1998): pick next the item maximizing
``λ·rel(i) − (1 − λ)·max_{j chosen} sim(i, j)``. Relevance here is the item's position in the
ranked input mapped to (0, 1] (so fused, reranked or raw scores of any scale behave alike);
similarity is the Jaccard overlap of the items' lexical term sets (no embedding call).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["jaccard", "mmr_order"]


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Return ``|a ∩ b| / |a ∪ b|`` (0.0 when both are empty)."""
    if not a and not b:
        return 0.0
    return len(a & b) / len(a | b)


def mmr_order(terms: Sequence[frozenset[str]], lam: float, k: int | None = None) -> list[int]:
    """Return the indexes of ``terms`` (items ranked best first) in MMR order.

    Args:
        terms: each item's lexical term set, in ranked order.
        lam: relevance weight in [0, 1]; 1.0 returns the input order unchanged.
        k: how many indexes to return (default all).

    Raises:
        ValueError: ``lam`` is outside [0, 1].
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError("lam must be in [0, 1]")
    n = len(terms)
    k = n if k is None else min(k, n)
    if lam >= 1.0 or n <= 1:
        return list(range(k))
    relevance = [1.0 - i / n for i in range(n)]
    chosen: list[int] = []
    max_sim = [0.0] * n
    left = set(range(n))
    while left and len(chosen) < k:
        best = max(left, key=lambda i: (lam * relevance[i] - (1 - lam) * max_sim[i], -i))
        chosen.append(best)
        left.remove(best)
        for i in left:
            max_sim[i] = max(max_sim[i], jaccard(terms[i], terms[best]))
    return chosen
