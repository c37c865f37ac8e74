"""Paired and one-arm bootstrap intervals, ratio differences and repeat averaging."""

from __future__ import annotations

import numpy as np
import pytest

from unified_kg_rag.evaluation import statistics
from unified_kg_rag.evaluation.statistics import (
    Interval,
    average_repeats,
    bootstrap_mean,
    paired_bootstrap,
    paired_bootstrap_ratio,
)

pytestmark = pytest.mark.unit


def _manual_means(d: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(d), size=(resamples, len(d)), dtype=np.int64)
    return d[idx].mean(axis=1)


def test_paired_bootstrap_on_a_known_distribution() -> None:
    # a sample of N(0.1, 1) standardised to mean 0.1 and standard deviation 1 exactly
    z = np.random.default_rng(7).normal(0.0, 1.0, 400)
    d = 0.1 + (z - z.mean()) / z.std()
    b = np.random.default_rng(8).uniform(0.0, 1.0, 400)
    ci = paired_bootstrap(b + d, b, resamples=4000, seed=1)
    assert ci.n == 400
    assert ci.estimate == pytest.approx(d.mean())
    assert ci.low < 0.1 < ci.high
    assert ci.low < ci.estimate < ci.high
    normal_width = 2 * 1.96 * 1.0 / np.sqrt(400)
    assert ci.high - ci.low == pytest.approx(normal_width, rel=0.15)


def test_paired_bootstrap_equals_the_textbook_percentile_interval() -> None:
    a = np.array([0.0, 1.0, 1.0, 0.5, 0.25])
    b = np.array([1.0, 0.0, 1.0, 0.0, 0.0])
    ci = paired_bootstrap(a, b, resamples=500, confidence=0.9, seed=3)
    means = _manual_means(a - b, 500, 3)
    assert ci == Interval(
        estimate=float(np.mean(a - b)),
        low=float(np.percentile(means, 5.0)),
        high=float(np.percentile(means, 95.0)),
        n=5,
    )


def test_two_queries_hand_computed() -> None:
    # d = [0, 1]: a resample's mean is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4
    ci = paired_bootstrap([0.0, 1.0], [0.0, 0.0], resamples=10_000, seed=0)
    assert (ci.estimate, ci.low, ci.high, ci.n) == (0.5, 0.0, 1.0, 2)
    narrow = paired_bootstrap([0.0, 1.0], [0.0, 0.0], resamples=10_000, confidence=0.4)
    assert (narrow.low, narrow.high) == (0.5, 0.5)  # the 30th and 70th percentiles


def test_constant_difference_and_single_query_have_no_spread() -> None:
    ci = paired_bootstrap([1.5, 2.5, 3.5], [1.0, 2.0, 3.0])
    assert (ci.estimate, ci.low, ci.high, ci.n) == (0.5, 0.5, 0.5, 3)
    one = paired_bootstrap([0.75], [0.5])
    assert (one.estimate, one.low, one.high, one.n) == (0.25, 0.25, 0.25, 1)
    assert paired_bootstrap([0.1] * 7, [0.1] * 7) == Interval(0.0, 0.0, 0.0, 7)


def test_same_seed_same_interval() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.uniform(size=50), rng.uniform(size=50)
    assert paired_bootstrap(a, b, seed=5) == paired_bootstrap(list(a), list(b), seed=5)
    assert paired_bootstrap(a, b, seed=5) != paired_bootstrap(a, b, seed=6)


def test_chunked_draws_equal_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    a, b = rng.uniform(size=30), rng.uniform(size=30)
    whole = paired_bootstrap(a, b, resamples=1000, seed=9)
    monkeypatch.setattr(statistics, "_MAX_CELLS", 30 * 7)  # blocks of 7 resamples
    assert paired_bootstrap(a, b, resamples=1000, seed=9) == whole


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "message"),
    [
        ([1.0, 2.0], [1.0], {}, "differ in length"),
        ([], [], {}, "no values"),
        ([1.0, float("nan")], [1.0, 2.0], {}, "NaN"),
        ([[1.0]], [[1.0]], {}, "one-dimensional"),
        ([1.0], [1.0], {"resamples": 0}, "resamples"),
        ([1.0], [1.0], {"confidence": 1.0}, "confidence"),
    ],
)
def test_paired_bootstrap_rejects_bad_input(
    a: list[float], b: list[float], kwargs: dict[str, float], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        paired_bootstrap(a, b, **kwargs)  # type: ignore[arg-type]


def test_bootstrap_mean() -> None:
    ci = bootstrap_mean([0.0, 1.0], resamples=10_000)
    assert (ci.estimate, ci.low, ci.high, ci.n) == (0.5, 0.0, 1.0, 2)
    values = np.array([0.2, 0.4, 0.9, 0.1])
    ci = bootstrap_mean(values, resamples=300, confidence=0.8, seed=4)
    means = _manual_means(values, 300, 4)
    assert (ci.low, ci.high) == (float(np.percentile(means, 10)), float(np.percentile(means, 90)))
    assert bootstrap_mean([0.3]) == Interval(0.3, 0.3, 0.3, 1)
    with pytest.raises(ValueError, match="no values"):
        bootstrap_mean([])


def test_ratio_difference_hand_computed() -> None:
    num_a, den_a = np.array([1.0, 0, 1]), np.array([1.0, 1, 1])  # 2/3
    num_b, den_b = np.array([0.0, 0, 1]), np.array([0.0, 1, 1])  # 1/2
    ci = paired_bootstrap_ratio(num_a, den_a, num_b, den_b, resamples=400, seed=2)
    assert ci is not None
    assert ci.estimate == pytest.approx(2 / 3 - 1 / 2)
    assert ci.n == 3
    # the same resamples by hand, skipping those where a denominator sums to 0
    idx = np.random.default_rng(2).integers(0, 3, size=(400, 3), dtype=np.int64)
    sa, sda, sb, sdb = (x[idx].sum(axis=1) for x in (num_a, den_a, num_b, den_b))
    ok = (sda != 0) & (sdb != 0)
    assert not ok.all()  # resamples of query 0 alone have no b denominator
    diffs = sa[ok] / sda[ok] - sb[ok] / sdb[ok]
    assert (ci.low, ci.high) == tuple(float(x) for x in np.percentile(diffs, [2.5, 97.5]))


def test_ratio_is_none_without_a_denominator() -> None:
    assert paired_bootstrap_ratio([0, 0], [0, 0], [1, 0], [1, 1]) is None
    assert paired_bootstrap_ratio([1, 0], [1, 1], [0, 0], [0, 0]) is None


def test_ratio_with_every_resample_skipped_is_a_point() -> None:
    # den_a only on query 0, den_b only on query 1: a resample needs both queries. Find a
    # seed whose single resample draws one query twice.
    seed = next(
        s for s in range(100)
        if len(set(np.random.default_rng(s).integers(0, 2, size=(1, 2), dtype=np.int64)[0])) == 1
    )  # fmt: skip
    ci = paired_bootstrap_ratio([1, 0], [1, 0], [0, 0], [0, 1], resamples=1, seed=seed)
    assert ci == Interval(1.0, 1.0, 1.0, 2)


def test_ratio_rejects_mismatched_lengths() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap_ratio([1, 0], [1, 1], [1], [1])


def test_average_repeats() -> None:
    rows = [("q2", None), ("q1", 1.0), ("q2", None), ("q1", 0.0), ("q3", None), ("q3", 0.5)]
    averaged = average_repeats(rows)
    assert averaged == {"q2": None, "q1": 0.5, "q3": 0.5}
    assert list(averaged) == ["q2", "q1", "q3"]
    assert average_repeats([]) == {}
