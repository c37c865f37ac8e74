"""The paired comparison of a run's arms: a pure function of its saved files (seed 000 §9).

1. Every row is scored (`scoring.score_row`) and its judges' scores are added.
2. A failed answer is never dropped: it scores 0 on every metric another row of the same
   question scored, or any row could score on it, that its own arm scores somewhere (a
   metric the arm never produces is no loss to invent); lower-is-better metrics are left
   unpaired instead (0 would be a perfect score).
3. Repeats are averaged per query before anything else (pooled means would mix query
   difficulty and noise into a difference).
4. Each arm's mean gets a bootstrap interval; each arm's difference from the baseline, per
   metric, a seeded paired bootstrap interval over the queries both scored, overall and per
   question category.
5. Abstention statistics (seed §9.2), cost totals, pairwise-judge summaries and ``--fail-if``
   gates complete it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from unified_kg_rag.evaluation.dataset import EvalItem
from unified_kg_rag.evaluation.gates import Gate, GateResult, evaluate_gates
from unified_kg_rag.evaluation.judges.pairwise import PairwiseVerdict
from unified_kg_rag.evaluation.judges.pairwise_summary import summarize_pairwise
from unified_kg_rag.evaluation.metrics import AbstentionCase, abstention_stats, percentile
from unified_kg_rag.evaluation.results import CLOSED_BOOK, JudgementRow, ResultRow, RunManifest
from unified_kg_rag.evaluation.scoring import (
    ABSTENTION_AGGREGATES,
    ScoringSettings,
    lower_is_better,
    price_for,
    score_row,
)
from unified_kg_rag.evaluation.statistics import (
    Interval,
    bootstrap_mean,
    paired_bootstrap,
    paired_bootstrap_ratio,
)

__all__ = [
    "ArmSummary",
    "Comparison",
    "CostSummary",
    "Delta",
    "MetricSummary",
    "StatsSettings",
    "build_comparison",
    "per_query_scores",
]

Scores = dict[str, float | None]


class StatsSettings(BaseModel):
    """How intervals are computed (``evaluation.bootstrap_resamples`` ...)."""

    resamples: int = 10_000
    confidence: float = 0.95
    seed: int = 0


class MetricSummary(BaseModel):
    """One arm's mean of one metric over the queries it scored, with its interval."""

    mean: float
    low: float
    high: float
    n: int


class Delta(BaseModel):
    """An arm minus the baseline on one metric: paired over the queries both scored.

    ``better`` is True when the interval excludes 0 on the good side (above 0, or below 0
    for a lower-is-better metric), False when it excludes 0 on the bad side, None when it
    holds 0.
    """

    arm: str
    baseline: str
    metric: str
    category: str | None = None
    estimate: float
    low: float
    high: float
    n: int
    better: bool | None = None


class CostSummary(BaseModel):
    """What an arm spent: totals over all rows, per-query means, latency percentiles."""

    rows: int = 0
    calls: int = 0
    cache_hits: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    embedded_texts: int = 0
    money: float | None = None
    latency_ms_p50: float = 0.0
    latency_ms_p95: float = 0.0
    retrieval_ms_p50: float = 0.0
    retrieval_ms_p95: float = 0.0


class ArmSummary(BaseModel):
    """One arm: its rows, failures and metric means."""

    arm: str
    closed_book: bool = False
    questions: int = 0
    rows: int = 0
    failed: int = 0
    errors: list[str] = Field(default_factory=list)
    metrics: dict[str, MetricSummary] = Field(default_factory=dict)
    cost: CostSummary = Field(default_factory=CostSummary)
    abstention: dict[str, Any] | None = None


class Comparison(BaseModel):
    """A run's comparison (``comparison.json``; ``ukr eval --json`` prints it)."""

    run_id: str
    baseline: str
    arms: list[ArmSummary] = Field(default_factory=list)
    deltas: list[Delta] = Field(default_factory=list)
    by_category: list[Delta] = Field(default_factory=list)
    categories: dict[str, int] = Field(default_factory=dict)
    category_means: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict)
    abstention_precision: list[Delta] = Field(default_factory=list)
    pairwise: dict[str, dict[str, Any]] = Field(default_factory=dict)
    judge_failures: dict[str, int] = Field(default_factory=dict)
    gates: list[GateResult] = Field(default_factory=list)
    stats: StatsSettings = Field(default_factory=StatsSettings)
    warnings: list[str] = Field(default_factory=list)

    def means(self) -> dict[str, dict[str, float | None]]:
        """Return ``{arm: {metric: mean}}`` (what gates read).

        Besides the per-query metrics' means, an arm's abstention statistics are there as
        ``abstention/precision``, ``abstention/coverage`` ... (`ABSTENTION_AGGREGATES`).
        """
        out: dict[str, dict[str, float | None]] = {}
        for a in self.arms:
            means: dict[str, float | None] = {m: s.mean for m, s in a.metrics.items()}
            for name in ABSTENTION_AGGREGATES:
                value = (a.abstention or {}).get(name)
                if isinstance(value, int | float):
                    means[f"abstention/{name}"] = float(value)
            out[a.arm] = means
        return out


def per_query_scores(
    items: Mapping[str, EvalItem],
    rows: Sequence[ResultRow],
    judgements: Sequence[JudgementRow],
    settings: ScoringSettings,
) -> dict[tuple[str, str], Scores]:
    """Return ``{(arm, question_id): metrics}``: scored, failures filled, repeats averaged."""
    judged: dict[tuple[str, str, int], Scores] = defaultdict(dict)
    for j in judgements:
        judged[(j.question_id, j.arm, j.repeat)].update(j.scores)
    scored: list[tuple[ResultRow, Scores]] = []
    for row in rows:
        item = items.get(row.question_id)
        if item is None:
            continue
        s = score_row(item, row, settings)
        s.update(judged.get(row.key, {}))
        scored.append((row, s))
    by_question: dict[str, set[str]] = defaultdict(set)
    by_arm: dict[str, set[str]] = defaultdict(set)
    for row, s in scored:
        if row.ok:
            names = {k for k, v in s.items() if v is not None}
            by_question[row.question_id] |= names
            by_arm[row.arm] |= names
    sums: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row, s in scored:
        if not row.ok:
            # what another arm scored on the question, or any arm could (a question every
            # arm failed on still counts), of what this arm scores elsewhere
            could = _applicable(items[row.question_id], row.arm, settings)
            for name in (by_question[row.question_id] | could) & by_arm[row.arm]:
                if s.get(name) is None and not lower_is_better(name):
                    s[name] = 0.0
        bucket = sums[(row.arm, row.question_id)]
        for name, value in s.items():
            if value is not None:
                bucket[name].append(value)
    return {
        key: {name: float(np.mean(values)) for name, values in metrics.items()}
        for key, metrics in sums.items()
    }


def _applicable(item: EvalItem, arm: str, settings: ScoringSettings) -> set[str]:
    """The metrics an answered row of ``arm`` would score on ``item`` (an empty answer)."""
    probe = ResultRow(question_id=item.id, arm=arm, answer="")
    return {k for k, v in score_row(item, probe, settings).items() if v is not None}


def build_comparison(
    manifest: RunManifest,
    items: Sequence[EvalItem],
    rows: Sequence[ResultRow],
    judgements: Sequence[JudgementRow],
    *,
    scoring: ScoringSettings,
    stats: StatsSettings,
    gates: Sequence[Gate] = (),
) -> Comparison:
    """Score a run and compare its arms with the baseline (pure: files in, comparison out).

    Args:
        manifest: the run's manifest (arms, baseline).
        items: the dataset's questions (rows of other questions are ignored).
        rows: the saved answers.
        judgements: the saved judge verdicts.
        scoring: scoring settings (answer span, prices).
        stats: bootstrap settings.
        gates: ``--fail-if`` gates, evaluated on the arms' means.
    """
    by_id = {i.id: i for i in items}
    per_query = per_query_scores(by_id, rows, judgements, scoring)
    arms = [a for a in manifest.arms if any(r.arm == a for r in rows)]
    comp = Comparison(run_id=manifest.run_id, baseline=manifest.baseline, stats=stats)
    for n, arm in enumerate(arms):
        arm_rows = [r for r in rows if r.arm == arm and r.question_id in by_id]
        comp.arms.append(_arm_summary(arm, arm_rows, per_query, by_id, scoring, stats, n))
    base = manifest.baseline
    categories: dict[str, list[str]] = defaultdict(list)
    for item in items:
        if item.category:
            categories[item.category].append(item.id)
    comp.categories = {c: len(ids) for c, ids in sorted(categories.items())}
    comp.category_means = {
        cat: {arm: _means(arm, ids, per_query) for arm in arms}
        for cat, ids in sorted(categories.items())
    }
    for arm in arms:
        if arm == base:
            continue
        comp.deltas += _deltas(arm, base, list(by_id), per_query, stats, None)
        for cat, ids in sorted(categories.items()):
            comp.by_category += _deltas(arm, base, ids, per_query, stats, cat)
        ratio = _precision_delta(arm, base, rows, by_id, stats)
        if ratio is not None:
            comp.abstention_precision.append(ratio)
    _pairwise(comp, judgements)
    if gates:
        intervals: dict[tuple[str, str], dict[str, Interval]] = defaultdict(dict)
        for d in comp.deltas:
            intervals[(d.arm, d.baseline)][d.metric] = Interval(d.estimate, d.low, d.high, d.n)
        comp.gates = evaluate_gates(gates, comp.means(), intervals)
    return comp


def _arm_summary(
    arm: str,
    rows: Sequence[ResultRow],
    per_query: Mapping[tuple[str, str], Scores],
    items: Mapping[str, EvalItem],
    scoring: ScoringSettings,
    stats: StatsSettings,
    n: int,
) -> ArmSummary:
    summary = ArmSummary(arm=arm, closed_book=arm == CLOSED_BOOK, rows=len(rows))
    summary.failed = sum(1 for r in rows if not r.ok)
    summary.errors = sorted({r.error or "" for r in rows if not r.ok})[:5]
    questions = sorted({r.question_id for r in rows})
    summary.questions = len(questions)
    values: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        for name, value in per_query.get((arm, q), {}).items():
            if value is not None:
                values[name].append(value)
    for name in sorted(values):
        iv = bootstrap_mean(values[name], resamples=stats.resamples,
                            confidence=stats.confidence, seed=stats.seed + n)  # fmt: skip
        summary.metrics[name] = MetricSummary(mean=iv.estimate, low=iv.low, high=iv.high, n=iv.n)
    summary.cost = _cost(rows, scoring)
    answered = [r for r in rows if r.answer is not None or not r.ok]
    declines = any(r.abstained for r in answered)
    if declines or any(not items[r.question_id].answerable for r in answered):
        cases = [
            AbstentionCase(
                answerable=items[r.question_id].answerable,
                abstained=r.ok and r.abstained,
                failed=not r.ok,
                correct=per_query.get((arm, r.question_id), {}).get("answer_contains"),
            )
            for r in answered
        ]
        summary.abstention = _dump(abstention_stats(cases))
    return summary


def _means(
    arm: str, questions: Sequence[str], per_query: Mapping[tuple[str, str], Scores]
) -> dict[str, float]:
    """Mean of each metric of ``arm`` over ``questions`` (those that scored it)."""
    values: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        for name, value in per_query.get((arm, q), {}).items():
            if value is not None:
                values[name].append(value)
    return {name: float(np.mean(v)) for name, v in sorted(values.items())}


def _dump(value: object) -> dict[str, Any]:
    if isinstance(value, BaseModel):
        return value.model_dump()
    return dict(vars(value))


def _cost(rows: Sequence[ResultRow], scoring: ScoringSettings) -> CostSummary:
    cost = CostSummary(rows=len(rows))
    for r in rows:
        cost.calls += r.usage.calls
        cost.cache_hits += r.usage.cache_hits
        cost.input_tokens += r.usage.input_tokens
        cost.output_tokens += r.usage.output_tokens
        cost.embedded_texts += r.usage.embedded_texts
    price = price_for(scoring.prices, scoring.answer_model)
    if price is not None:
        cost.money = (cost.input_tokens * price.input_per_1m
                      + cost.output_tokens * price.output_per_1m) / 1e6  # fmt: skip
    latencies = [r.latency_ms for r in rows]
    retrievals = [r.retrieval_ms for r in rows]
    cost.latency_ms_p50 = round(percentile(latencies, 50), 3)
    cost.latency_ms_p95 = round(percentile(latencies, 95), 3)
    cost.retrieval_ms_p50 = round(percentile(retrievals, 50), 3)
    cost.retrieval_ms_p95 = round(percentile(retrievals, 95), 3)
    return cost


def _deltas(
    arm: str,
    base: str,
    questions: Sequence[str],
    per_query: Mapping[tuple[str, str], Scores],
    stats: StatsSettings,
    category: str | None,
) -> list[Delta]:
    names: set[str] = set()
    for q in questions:
        names |= set(per_query.get((arm, q), {})) & set(per_query.get((base, q), {}))
    out: list[Delta] = []
    for name in sorted(names):
        a: list[float] = []
        b: list[float] = []
        for q in questions:
            va = per_query.get((arm, q), {}).get(name)
            vb = per_query.get((base, q), {}).get(name)
            if va is not None and vb is not None:
                a.append(va)
                b.append(vb)
        if not a:
            continue
        iv = paired_bootstrap(a, b, resamples=stats.resamples, confidence=stats.confidence,
                              seed=stats.seed)  # fmt: skip
        out.append(Delta(arm=arm, baseline=base, metric=name, category=category,
                         estimate=iv.estimate, low=iv.low, high=iv.high, n=iv.n,
                         better=_better(name, iv.low, iv.high)))  # fmt: skip
    return out


def _better(metric: str, low: float, high: float) -> bool | None:
    if low > 0 or high < 0:
        up = low > 0
        return up != lower_is_better(metric)
    return None


def _precision_delta(
    arm: str,
    base: str,
    rows: Sequence[ResultRow],
    items: Mapping[str, EvalItem],
    stats: StatsSettings,
) -> Delta | None:
    """Abstention precision (declines that were right) of ``arm`` minus ``base`` (§9.2)."""
    counts: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        if r.arm not in (arm, base) or r.question_id not in items or r.answer is None:
            continue
        c = counts.setdefault((r.arm, r.question_id), [0.0, 0.0])
        if r.abstained:
            c[1] += 1
            c[0] += 0.0 if items[r.question_id].answerable else 1.0
    questions = sorted({q for (_, q) in counts} & {q for (a, q) in counts if a == base}
                       & {q for (a, q) in counts if a == arm})  # fmt: skip
    if not questions:
        return None
    num_a = [counts[(arm, q)][0] for q in questions]
    den_a = [counts[(arm, q)][1] for q in questions]
    num_b = [counts[(base, q)][0] for q in questions]
    den_b = [counts[(base, q)][1] for q in questions]
    iv = paired_bootstrap_ratio(num_a, den_a, num_b, den_b, resamples=stats.resamples,
                                confidence=stats.confidence, seed=stats.seed)  # fmt: skip
    if iv is None:
        return None
    return Delta(arm=arm, baseline=base, metric="abstention/precision", estimate=iv.estimate,
                 low=iv.low, high=iv.high, n=iv.n,
                 better=_better("abstention/precision", iv.low, iv.high))  # fmt: skip


def _pairwise(comp: Comparison, judgements: Sequence[JudgementRow]) -> None:
    verdicts: dict[str, list[PairwiseVerdict]] = defaultdict(list)
    for j in judgements:
        if j.error is not None:
            comp.judge_failures[j.judge] = comp.judge_failures.get(j.judge, 0) + 1
        if j.judge == "pairwise":
            verdicts[j.arm].append(PairwiseVerdict.model_validate(j.verdict))
    for arm, vs in sorted(verdicts.items()):
        comp.pairwise[arm] = _dump(summarize_pairwise(vs))
