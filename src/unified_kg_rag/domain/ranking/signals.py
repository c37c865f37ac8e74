"""Named retrieval signals and the scorers that combine them (the staged retrieval pipeline).

A candidate of the staged pipeline carries named signals in 0..1 (``semantic``, ``lexical``,
``graph``, ``temporal``, ``pagerank``, ``access``, ``rerank``, ``ppr`` ...); a `Scorer` turns
them into one final score. This module holds the pure arithmetic: the per-signal
normalisations the stages apply and `WeightedScorer`. Source: seed 002 ("Pre-built Stages",
"Scoring Strategies").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "Scorer",
    "WeightedScorer",
    "access_signal",
    "distance_signal",
    "max_normalized",
    "temporal_decay",
]


class Scorer(Protocol):
    """Combines a candidate's named signals into its final score."""

    def score(self, signals: Mapping[str, float]) -> float:
        """Return the final score of one candidate from its signals (name → 0..1)."""
        ...


@dataclass(frozen=True)
class WeightedScorer:
    """Final score = Σ weight(signal) × value(signal); a signal a candidate lacks counts 0.

    Signals are combined as the stages set them, each already in 0..1 (see the stage that
    sets it: cosine similarity for ``semantic``, the per-query max-normalised BM25 for
    ``lexical``, `distance_signal` for ``graph``, `temporal_decay`, `max_normalized`
    PageRank, `access_signal`, the reranker's 0..1 relevance). Signals without a weight are
    ignored. With weights summing to 1 the final score stays in 0..1.

    Attributes:
        weights: signal name → weight (≥ 0).

    Raises:
        ValueError: a weight is negative or not finite, or every weight is 0.

    Source: seed 002, "Weighted Scorer (Default)".
    """

    weights: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.weights, Mapping):
            raise ValueError(f"weights must map signal names to numbers, got {self.weights!r}")
        for name, weight in self.weights.items():
            if isinstance(weight, bool) or not isinstance(weight, int | float):
                raise ValueError(f"weight of signal {name!r} must be a number, got {weight!r}")
            if not math.isfinite(weight) or weight < 0:
                raise ValueError(f"weight of signal {name!r} must be finite and >= 0, "
                                 f"got {weight}")  # fmt: skip
        if not any(self.weights.values()):
            raise ValueError("at least one signal weight must be positive")
        if not math.isfinite(sum(self.weights.values())):
            raise ValueError("the weights' sum must be finite (scale them down)")

    def score(self, signals: Mapping[str, float]) -> float:
        """Return Σ weight × signal over the weighted signals (missing ones count 0)."""
        return sum(w * signals.get(name, 0.0) for name, w in self.weights.items())


def temporal_decay(age_s: float, half_life_s: float, floor: float = 0.0) -> float:
    """Return the recency signal ``max(floor, 0.5 ** (age / half_life))``.

    Args:
        age_s: the candidate's age, seconds (now − its document or message timestamp); a
            timestamp in the future counts as age 0.
        half_life_s: the age at which the signal halves, seconds (> 0).
        floor: the least value an old candidate keeps, 0..1.

    Raises:
        ValueError: ``half_life_s`` is not positive or ``floor`` is outside 0..1.

    Source: seed 002, "Temporal Decay".
    """
    if not half_life_s > 0:
        raise ValueError(f"half life must be positive, got {half_life_s}")
    if not 0.0 <= floor <= 1.0:
        raise ValueError(f"floor must be within 0..1, got {floor}")
    decayed: float = 0.5 ** (max(age_s, 0.0) / half_life_s)
    return max(floor, decayed)


def distance_signal(hops: int) -> float:
    """Return the graph-expansion signal of a candidate ``hops`` edges from a seed: 1/(1+h).

    A seed itself (0 hops) scores 1, a neighbour 0.5, two hops 1/3.

    Raises:
        ValueError: ``hops`` is negative.
    """
    if hops < 0:
        raise ValueError(f"hops must be >= 0, got {hops}")
    return 1.0 / (1 + hops)


def max_normalized(values: Sequence[float]) -> list[float]:
    """Return ``values`` divided by their maximum (0..1; all zeros when the maximum is ≤ 0).

    How a stage brings an unbounded score (PageRank, BM25) to 0..1 over one query's
    candidates. Negative values count as 0.
    """
    top = max(values, default=0.0)
    if top <= 0:
        return [0.0 for _ in values]
    return [max(v, 0.0) / top for v in values]


def access_signal(counts: Sequence[int], cap: int) -> list[float]:
    """Return the access signal of each candidate: its count over the set's highest, capped.

    Counts above ``cap`` count as ``cap`` (one hot document does not flatten the rest);
    the candidate with the highest (capped) count scores 1, one never retrieved 0.

    Args:
        counts: recorded retrievals per candidate (≥ 0).
        cap: the normalisation cap (> 0).

    Raises:
        ValueError: ``cap`` is not positive.

    Source: seed 002, "Access Count" (``WithMaxAccessCount``).
    """
    if cap <= 0:
        raise ValueError(f"cap must be positive, got {cap}")
    return max_normalized([float(min(max(c, 0), cap)) for c in counts])
