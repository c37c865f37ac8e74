"""Bootstrap confidence intervals for comparing strategies over the same queries.

What belongs here: per-query numbers in, an `Interval` out; averaging repeats of a query.
No metric definitions (`evaluation.metrics`), no gates (`evaluation.gates`), no I/O.

Strategies are compared per query (seed 000 §9, "Strategy comparison"): each metric is
averaged per query over repeats (`average_repeats`), then the per-query differences are
resampled together (a *paired* bootstrap), since pooled means would mix query difficulty
into the difference. Intervals are percentile bootstrap intervals (Efron & Tibshirani 1993,
"An Introduction to the Bootstrap", ch. 13): resample the queries with replacement, recompute
the statistic, take the ``(1-c)/2`` and ``1-(1-c)/2`` percentiles (numpy's linear
interpolation). Every function draws from ``numpy.random.default_rng(seed)`` in a fixed
order, so a seed gives the same interval on every run and platform.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Interval",
    "average_repeats",
    "bootstrap_mean",
    "paired_bootstrap",
    "paired_bootstrap_ratio",
]

_MAX_CELLS = 4_000_000
"""At most this many resampled indices (int64: 32 MB) are held at once."""

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap confidence interval.

    Attributes:
        estimate: the statistic on the full sample (a mean, or a difference of means).
        low: lower percentile bound.
        high: upper percentile bound.
        n: number of queries (pairs) the statistic is over.
    """

    estimate: float
    low: float
    high: float
    n: int


def _as_array(values: Sequence[float] | FloatArray, name: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} holds a NaN or infinite value")
    return array


def _check(n: int, resamples: int, confidence: float) -> None:
    if n == 0:
        raise ValueError("no values to bootstrap")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")


def _index_chunks(n: int, resamples: int, seed: int) -> Iterator[NDArray[np.int64]]:
    """Yield ``[rows, n]`` blocks of query indices drawn with replacement, ``resamples`` rows."""
    rng = np.random.default_rng(seed)
    rows = max(1, _MAX_CELLS // n)
    done = 0
    while done < resamples:
        size = min(rows, resamples - done)
        yield rng.integers(0, n, size=(size, n), dtype=np.int64)
        done += size


def _bounds(stats: FloatArray, confidence: float) -> tuple[float, float]:
    alpha = (1.0 - confidence) / 2.0
    low, high = np.percentile(stats, [100.0 * alpha, 100.0 * (1.0 - alpha)])
    return float(low), float(high)


def _mean_interval(
    values: FloatArray, resamples: int, confidence: float, seed: int
) -> Interval:
    n = len(values)
    _check(n, resamples, confidence)
    if np.all(values == values[0]):  # one query, or a constant: no spread, exactly
        v = float(values[0])
        return Interval(estimate=v, low=v, high=v, n=n)
    means = np.concatenate(
        [values[idx].mean(axis=1) for idx in _index_chunks(n, resamples, seed)]
    )
    low, high = _bounds(means, confidence)
    return Interval(estimate=float(values.mean()), low=low, high=high, n=n)


def paired_bootstrap(
    a: Sequence[float] | FloatArray,
    b: Sequence[float] | FloatArray,
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of the mean per-query difference ``mean(a - b)``.

    The queries (index positions) are resampled with replacement ``resamples`` times, the
    mean of ``a[i] - b[i]`` recomputed on each; memory stays bounded by drawing the
    resamples in blocks of at most 4 million indices. A constant difference (or a single
    query) gives ``low == high == estimate``.

    Args:
        a: float ``[n]``, one arm's metric per query (already averaged over repeats).
        b: float ``[n]``, the other arm's metric on the same queries, in the same order.
        resamples: number of bootstrap resamples (at least 1).
        confidence: two-sided coverage in (0, 1).
        seed: seed of ``numpy.random.default_rng``; the same seed gives the same interval.

    Returns:
        The difference of means with its interval; ``n`` is the number of queries.

    Raises:
        ValueError: the arrays differ in length, are empty, not one-dimensional or hold NaN
            or infinity; ``resamples`` < 1; ``confidence`` outside (0, 1).

    Source: Efron & Tibshirani (1993), percentile interval; seed 000 §9 (paired comparison).
    """
    left, right = _as_array(a, "a"), _as_array(b, "b")
    if len(left) != len(right):
        raise ValueError(f"paired arrays differ in length: {len(left)} and {len(right)}")
    return _mean_interval(left - right, resamples, confidence, seed)


def bootstrap_mean(
    values: Sequence[float] | FloatArray,
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of one arm's mean over queries.

    Args:
        values: float ``[n]``, the metric per query.
        resamples: number of bootstrap resamples (at least 1).
        confidence: two-sided coverage in (0, 1).
        seed: seed of ``numpy.random.default_rng``.

    Returns:
        The mean with its interval.

    Raises:
        ValueError: as for `paired_bootstrap`.

    Source: Efron & Tibshirani (1993), percentile interval.
    """
    return _mean_interval(_as_array(values, "values"), resamples, confidence, seed)


def paired_bootstrap_ratio(
    num_a: Sequence[float] | FloatArray,
    den_a: Sequence[float] | FloatArray,
    num_b: Sequence[float] | FloatArray,
    den_b: Sequence[float] | FloatArray,
    *,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Interval | None:
    """Interval of ``sum(num_a)/sum(den_a) - sum(num_b)/sum(den_b)``, resampling queries.

    For a ratio over a subset of the queries, such as abstention precision (right declines
    over declines, seed 000 §9.2): per query, ``num`` is 1 for a right decline and ``den`` 1
    for any decline. Both ratios are recomputed on each resample of the queries (the same
    indices for both arms). A resample in which either denominator sums to 0 has no
    difference and is skipped, so the percentiles are over the remaining resamples; when
    none remains the interval is ``low == high == estimate``.

    Args:
        num_a: float ``[n]``, arm a's numerator per query.
        den_a: float ``[n]``, arm a's denominator per query.
        num_b: float ``[n]``, arm b's numerator per query.
        den_b: float ``[n]``, arm b's denominator per query.
        resamples: number of bootstrap resamples drawn (at least 1).
        confidence: two-sided coverage in (0, 1).
        seed: seed of ``numpy.random.default_rng``; the draws equal `paired_bootstrap`'s.

    Returns:
        The difference of the two ratios with its interval (``n``: queries), or None when
        either arm's total denominator is 0 (a ratio is undefined).

    Raises:
        ValueError: the four arrays differ in length, are empty, not one-dimensional or hold
            NaN or infinity; bad ``resamples`` or ``confidence``.

    Source: Efron & Tibshirani (1993), percentile interval of a ratio statistic.
    """
    arrays = [
        _as_array(v, name)
        for v, name in ((num_a, "num_a"), (den_a, "den_a"), (num_b, "num_b"), (den_b, "den_b"))
    ]
    n = len(arrays[0])
    if any(len(x) != n for x in arrays):
        raise ValueError(f"paired arrays differ in length: {[len(x) for x in arrays]}")
    _check(n, resamples, confidence)
    na, da, nb, db = arrays
    if da.sum() == 0 or db.sum() == 0:
        return None
    estimate = float(na.sum() / da.sum() - nb.sum() / db.sum())
    diffs: list[FloatArray] = []
    for idx in _index_chunks(n, resamples, seed):
        sums = [x[idx].sum(axis=1) for x in arrays]
        ok = (sums[1] != 0) & (sums[3] != 0)
        diffs.append(sums[0][ok] / sums[1][ok] - sums[2][ok] / sums[3][ok])
    stats = np.concatenate(diffs)
    if len(stats) == 0:
        return Interval(estimate=estimate, low=estimate, high=estimate, n=n)
    low, high = _bounds(stats, confidence)
    return Interval(estimate=estimate, low=low, high=high, n=n)


def average_repeats(rows: Iterable[tuple[str, float | None]]) -> dict[str, float | None]:
    """Average a metric per key (query id) over its repeats.

    Args:
        rows: ``(key, value)`` pairs, one per repeat; None is a repeat without a value.

    Returns:
        Key → mean of its non-None values, or None when every value of the key is None;
        keys in order of first appearance.
    """
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for key, value in rows:
        sums.setdefault(key, 0.0)
        counts.setdefault(key, 0)
        if value is not None:
            sums[key] += value
            counts[key] += 1
    return {key: (sums[key] / counts[key] if counts[key] else None) for key in sums}
