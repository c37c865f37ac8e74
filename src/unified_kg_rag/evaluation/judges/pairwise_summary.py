"""Summaries of many pairwise verdicts: win rates, position consistency and length effects.

Per criterion, the candidate's win rate counts only order-consistent verdicts (a tie counts
half), and ``position_consistency`` says how often the two orders agreed, so a judge that
always picks "Answer 1" reads as 0 consistency, not as a run of ties (seed 000 §9).

The ``length`` block (seed 000 §9.3) measures the judge's length preference, free of any
model call: the candidate's win rate per bucket of the length ratio (candidate over baseline
estimated tokens: at most 0.67, 0.67-0.91, 0.91-1.1, 1.1-1.5, at least 1.5; the edges are
1/1.5, 1/1.1, 1.1 and 1.5, so a ratio and its inverse sit in mirror buckets), and per
criterion the Pearson correlation between the relative length difference
``(c - b) / (c + b)`` and the pair's score (1 win, 0.5 tie, 0 loss). A win rate rising with
the ratio, with few pairs near 1, is a length effect rather than a quality one (Zeng et al.,
arXiv 2506.06331). Only pairs the judge decided count there: failed pairs and pairs decided
without a call (a failed answer) are left out.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from unified_kg_rag.evaluation.judges.common import Verdict
from unified_kg_rag.evaluation.judges.pairwise import PairwiseVerdict, pairwise_scores

__all__ = [
    "LENGTH_BUCKETS",
    "CriterionSummary",
    "LengthBucket",
    "LengthSummary",
    "PairwiseSummary",
    "length_bucket",
    "pearson",
    "summarize_pairwise",
]

LENGTH_BUCKETS = ("<=0.67", "0.67-0.91", "0.91-1.1", "1.1-1.5", ">=1.5")
"""The length-ratio buckets, shortest candidate first."""


class CriterionSummary(Verdict):
    """One criterion over all pairs.

    Attributes:
        wins: order-consistent verdicts (and pairs decided without a call) the candidate won.
        losses: likewise lost.
        ties: likewise tied.
        inconsistent: judged pairs whose two orders chose different sides.
        failed: pairs whose judgement failed.
        judged: pairs the judge decided in both orders (failed and unjudged ones excluded).
        unjudged: pairs decided without a call (one answer failed).
        win_rate: ``(wins + 0.5 * ties) / (wins + losses + ties)``; None when that is 0/0.
        position_consistency: ``(judged - inconsistent) / judged``; None when none judged.
    """

    wins: int = 0
    losses: int = 0
    ties: int = 0
    inconsistent: int = 0
    failed: int = 0
    judged: int = 0
    unjudged: int = 0
    win_rate: float | None = None
    position_consistency: float | None = None


class LengthBucket(Verdict):
    """The judged pairs whose length ratio falls in one bucket.

    Attributes:
        label: the bucket (one of `LENGTH_BUCKETS`).
        pairs: judged, non-failed pairs in the bucket.
        decided: criterion -> order-consistent pairs in the bucket.
        win_rate: criterion -> the candidate's win rate over those (ties half); None when 0.
    """

    label: str
    pairs: int = 0
    decided: dict[str, int]
    win_rate: dict[str, float | None]


class LengthSummary(Verdict):
    """The judge's length preference (see the module docstring).

    Attributes:
        pairs: judged, non-failed pairs.
        buckets: one per `LENGTH_BUCKETS` label, in that order (empty ones included).
        correlation: criterion -> Pearson r between ``(c - b) / (c + b)`` and the pair's
            score over its order-consistent pairs; None with fewer than 3 or zero variance.
    """

    pairs: int = 0
    buckets: list[LengthBucket]
    correlation: dict[str, float | None]


class PairwiseSummary(Verdict):
    """The pairwise judge's results over a set of questions.

    Attributes:
        pairs: verdicts summarised.
        failed: verdicts whose judgement failed (reasons are in the verdicts).
        unjudged: verdicts decided without a call.
        criteria: criterion -> its summary, in first-seen order.
        length: the length block.
    """

    pairs: int = 0
    failed: int = 0
    unjudged: int = 0
    criteria: dict[str, CriterionSummary]
    length: LengthSummary


def length_bucket(candidate_tokens: int, baseline_tokens: int) -> str:
    """Return the `LENGTH_BUCKETS` label of the ratio ``candidate_tokens / baseline_tokens``.

    Decided in integer arithmetic on the longer over the shorter side, so a ratio and its
    inverse always land in mirror buckets: 1.1 and 1/1.1 fall in ``0.91-1.1``, 1.5 in
    ``>=1.5`` and 1/1.5 in ``<=0.67``. Equal lengths (0 and 0 included) are ``0.91-1.1``; a
    side of 0 tokens against a non-empty one is an extreme bucket.
    """
    hi, lo = max(candidate_tokens, baseline_tokens), min(candidate_tokens, baseline_tokens)
    longer = candidate_tokens > baseline_tokens
    if 10 * hi <= 11 * lo:
        return LENGTH_BUCKETS[2]
    if 2 * hi < 3 * lo:
        return LENGTH_BUCKETS[3] if longer else LENGTH_BUCKETS[1]
    return LENGTH_BUCKETS[4] if longer else LENGTH_BUCKETS[0]


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Return the Pearson correlation of two equal-length samples.

    None when there are fewer than 3 pairs or either sample is constant.

    Raises:
        ValueError: the samples differ in length.
    """
    if len(xs) != len(ys):
        raise ValueError("pearson needs samples of equal length")
    if len(xs) < 3 or min(xs) == max(xs) or min(ys) == max(ys):
        return None
    mx, my = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    syy = math.fsum((y - my) ** 2 for y in ys)
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def summarize_pairwise(verdicts: Sequence[PairwiseVerdict]) -> PairwiseSummary:
    """Summarise pairwise verdicts per criterion, with the length block.

    Args:
        verdicts: one per question (and repeat), any arms; usually one candidate-baseline
            pair of arms.

    Returns:
        The summary (counts, win rates, position consistency, length buckets, correlation).

    Source: seed 000 §9 (order-stable verdicts, ``position_consistency``) and §9.3 (length
    buckets and correlation).
    """
    names: list[str] = []
    for v in verdicts:
        names.extend(c for c in v.criteria if c not in names)
    counts: dict[str, Counter[str]] = {name: Counter() for name in names}
    for v in verdicts:
        for name, c in v.criteria.items():
            row = counts[name]
            if v.failed:
                row["failed"] += 1
                continue
            row["judged" if v.judged else "unjudged"] += 1
            if c.winner is None:
                row["inconsistent"] += 1
            else:
                row[{"candidate": "wins", "baseline": "losses", "tie": "ties"}[c.winner]] += 1
    criteria = {name: _criterion_summary(row) for name, row in counts.items()}
    return PairwiseSummary(
        pairs=len(verdicts),
        failed=sum(v.failed for v in verdicts),
        unjudged=sum(not v.judged and not v.failed for v in verdicts),
        criteria=criteria,
        length=_length_summary([v for v in verdicts if v.judged and not v.failed], names),
    )


def _criterion_summary(row: Counter[str]) -> CriterionSummary:
    wins, losses, ties = row["wins"], row["losses"], row["ties"]
    judged, inconsistent = row["judged"], row["inconsistent"]
    decided = wins + losses + ties
    return CriterionSummary(
        wins=wins, losses=losses, ties=ties, inconsistent=inconsistent, failed=row["failed"],
        judged=judged, unjudged=row["unjudged"],
        win_rate=(wins + 0.5 * ties) / decided if decided else None,
        position_consistency=(judged - inconsistent) / judged if judged else None,
    )  # fmt: skip


def _length_summary(judged: Sequence[PairwiseVerdict], names: Sequence[str]) -> LengthSummary:
    per_bucket: dict[str, list[PairwiseVerdict]] = {label: [] for label in LENGTH_BUCKETS}
    for v in judged:
        per_bucket[length_bucket(v.candidate_tokens, v.baseline_tokens)].append(v)
    buckets = []
    for label, members in per_bucket.items():
        scores = [pairwise_scores(v) for v in members]
        decided = {n: [x for s in scores if (x := s.get(n)) is not None] for n in names}
        buckets.append(LengthBucket(
            label=label, pairs=len(members),
            decided={n: len(d) for n, d in decided.items()},
            win_rate={n: math.fsum(d) / len(d) if d else None for n, d in decided.items()},
        ))  # fmt: skip
    correlation: dict[str, float | None] = {}
    for name in names:
        xs: list[float] = []
        ys: list[float] = []
        for v in judged:
            score = pairwise_scores(v).get(name)
            if score is not None:
                total = v.candidate_tokens + v.baseline_tokens
                xs.append((v.candidate_tokens - v.baseline_tokens) / total if total else 0.0)
                ys.append(score)
        correlation[name] = pearson(xs, ys)
    return LengthSummary(pairs=len(judged), buckets=buckets, correlation=correlation)
