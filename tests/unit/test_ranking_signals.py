"""Signals and the weighted scorer of the staged retrieval pipeline (seed 002), by hand."""

from __future__ import annotations

import math

import pytest

from unified_kg_rag.domain.ranking.signals import (
    Scorer,
    WeightedScorer,
    access_signal,
    distance_signal,
    max_normalized,
    temporal_decay,
)

pytestmark = pytest.mark.unit

DAY = 86_400.0


def test_weighted_scorer_is_the_weighted_sum_with_missing_signals_zero() -> None:
    scorer = WeightedScorer({"semantic": 0.30, "graph": 0.25, "temporal": 0.15,
                             "pagerank": 0.10, "access": 0.10, "rerank": 0.10})  # fmt: skip
    signals = {"semantic": 0.8, "graph": 0.5, "temporal": 0.25, "rerank": 0.9, "other": 1.0}
    # 0.30*0.8 + 0.25*0.5 + 0.15*0.25 + 0.10*0 + 0.10*0 + 0.10*0.9 = 0.4925
    assert scorer.score(signals) == pytest.approx(0.4925)
    assert scorer.score({}) == 0.0
    assert scorer.score({k: 1.0 for k in scorer.weights}) == pytest.approx(1.0)
    check: Scorer = scorer
    assert check.score({"semantic": 1.0}) == pytest.approx(0.30)


@pytest.mark.parametrize("weights", [{"a": -0.1}, {"a": math.nan}, {"a": 0.0}, {}])
def test_weighted_scorer_refuses_bad_weights(weights: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="weight"):
        WeightedScorer(weights)


def test_temporal_decay_halves_per_half_life_down_to_the_floor() -> None:
    assert temporal_decay(0, 90 * DAY) == 1.0
    assert temporal_decay(90 * DAY, 90 * DAY) == pytest.approx(0.5)
    assert temporal_decay(180 * DAY, 90 * DAY) == pytest.approx(0.25)
    assert temporal_decay(45 * DAY, 90 * DAY) == pytest.approx(2 ** -0.5)
    assert temporal_decay(900 * DAY, 90 * DAY, floor=0.1) == 0.1  # 0.5**10 < 0.1
    assert temporal_decay(-5 * DAY, 90 * DAY) == 1.0  # a future timestamp is new
    with pytest.raises(ValueError, match="half life"):
        temporal_decay(1, 0)
    with pytest.raises(ValueError, match="floor"):
        temporal_decay(1, DAY, floor=1.5)


def test_distance_signal_and_normalisations() -> None:
    assert [distance_signal(h) for h in (0, 1, 2)] == [1.0, 0.5, pytest.approx(1 / 3)]
    with pytest.raises(ValueError):
        distance_signal(-1)
    assert max_normalized([0.2, 0.05, 0.1]) == [1.0, 0.25, 0.5]
    assert max_normalized([0.0, 0.0]) == [0.0, 0.0] and max_normalized([]) == []
    assert max_normalized([-1.0, 2.0]) == [0.0, 1.0]
    # counts over the cap count as the cap: 5000 → 1000, so 500 scores 0.5
    assert access_signal([5000, 500, 0], cap=1000) == [1.0, 0.5, 0.0]
    assert access_signal([3, 1], cap=1000) == [1.0, pytest.approx(1 / 3)]
    with pytest.raises(ValueError, match="cap"):
        access_signal([1], cap=0)
