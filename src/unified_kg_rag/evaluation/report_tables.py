"""The tables of an evaluation report, built from a run's saved JSON (seed 000 §9).

What belongs here: turning ``manifest.json`` and ``comparison.json``, read as plain JSON
objects (so a report reads what any version wrote, and a field it lacks is left out rather
than failing), into captioned tables of formatted text. No file I/O
(`evaluation.report`), no drawing (`evaluation.report_figures`), no markup
(`evaluation.report_render`).

Numbers: means and interval bounds with 3 decimals (``0.500 [0.250, 0.750]``), differences
signed (``+0.120 [+0.010, +0.230]``), counts with thousands separators, a missing value as
``—``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAIN_METRICS",
    "MARKERS",
    "Section",
    "Table",
    "abstention_tables",
    "arm_label",
    "arms",
    "as_list",
    "as_map",
    "category_table",
    "cost_table",
    "delta_tables",
    "fmt",
    "gate_table",
    "headline_metrics",
    "interval",
    "join",
    "main_table",
    "metric_order",
    "pairwise_tables",
]

MAIN_METRICS = (
    "recall@2", "recall@5", "recall@10", "recall_in_context", "mrr", "ndcg@10",
    "graph_recall", "answer_in_context", "em", "f1", "answer_contains", "judge/correctness",
    "assertion/recall", "abstained",
)  # fmt: skip
"""The metrics of the main table, the forest plot and the headline deltas, in that order."""

MARKERS: dict[bool | None, str] = {True: "▲ better", False: "▼ worse", None: "· inconclusive"}
"""A delta's verdict (its ``better`` field): the interval excludes 0 on the good side, on
the bad side, or holds it."""

MISSING = "—"


@dataclass(frozen=True)
class Table:
    """One captioned table of formatted cells.

    Attributes:
        caption: what the table shows (HTML ``<caption>``, a bold line in Markdown).
        header: column names.
        rows: cells, each row as long as ``header``.
        align: one letter per column, ``l`` left or ``r`` right; None: the first column
            left, the others (numbers) right.
    """

    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    align: str | None = None

    def aligned_left(self, column: int) -> bool:
        """Whether ``column`` (0-based) is left-aligned."""
        if self.align is None:
            return column == 0
        return self.align[column : column + 1] != "r"


@dataclass(frozen=True)
class Section:
    """A titled part of the report: warnings, then text lines, then tables, then figures.

    Attributes:
        title: the heading.
        warnings: lines shown as warnings.
        text: plain lines.
        tables: the tables.
        figures: names of the figures (`report_figures.FIGURE_NAMES`) drawn after them.
    """

    title: str
    warnings: tuple[str, ...] = ()
    text: tuple[str, ...] = ()
    tables: tuple[Table, ...] = ()
    figures: tuple[str, ...] = ()


def as_map(value: object) -> Mapping[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a field absent or malformed)."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Any]:
    """``value`` if it is a JSON array, else an empty list."""
    return list(value) if isinstance(value, list | tuple) else []


def fmt(value: object, *, signed: bool = False) -> str:
    """Format one value: floats with 3 decimals, ints with separators, None as ``—``."""
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:+.3f}" if signed else f"{value:.3f}"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {fmt(v)}" for k, v in value.items()) or MISSING
    if isinstance(value, list | tuple):
        return ", ".join(fmt(v) for v in value) or MISSING
    return str(value)


def interval(summary: Mapping[str, Any], key: str = "mean", *, signed: bool = False) -> str:
    """``0.500 [0.250, 0.750]`` from a summary with ``key``, ``low`` and ``high``."""
    value = summary.get(key)
    if not isinstance(value, int | float):
        return MISSING
    low, high = summary.get("low"), summary.get("high")
    if not isinstance(low, int | float) or not isinstance(high, int | float):
        return fmt(float(value), signed=signed)
    return (f"{fmt(float(value), signed=signed)} "
            f"[{fmt(float(low), signed=signed)}, {fmt(float(high), signed=signed)}]")  # fmt: skip


def metric_order(names: Iterable[str]) -> list[str]:
    """``names`` with the `MAIN_METRICS` first in their order, the others sorted after."""
    present = set(names)
    main = [m for m in MAIN_METRICS if m in present]
    return main + sorted(present - set(main))


def arm_label(arm: Mapping[str, Any]) -> str:
    """The arm's name, marked ``(no retrieval)`` for the closed-book arm."""
    name = str(arm.get("arm", ""))
    return f"{name} (no retrieval)" if arm.get("closed_book") else name


def arms(comparison: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The comparison's arm summaries (objects only)."""
    return [as_map(a) for a in as_list(comparison.get("arms")) if isinstance(a, Mapping)]


def main_table(comparison: Mapping[str, Any]) -> Table | None:
    """One column per arm, one row per main metric (mean with interval), questions, failures.

    Arms are columns (a run compares a few arms on many metrics), so the table stays as wide
    as the arms, not as the metrics.
    """
    summaries = arms(comparison)
    present = {m for a in summaries for m in as_map(a.get("metrics"))}
    metrics = [m for m in MAIN_METRICS if m in present]
    if not summaries or not metrics:
        return None
    conf = _confidence(comparison)
    rows = (
        ("questions", *(fmt(a.get("questions")) for a in summaries)),
        ("failed", *(fmt(a.get("failed")) for a in summaries)),
        *((m, *(interval(as_map(as_map(a.get("metrics")).get(m))) for a in summaries))
          for m in metrics),
    )  # fmt: skip
    return Table(f"Mean per arm [{conf} interval]",
                 ("metric", *(arm_label(a) for a in summaries)), rows)  # fmt: skip


def delta_tables(comparison: Mapping[str, Any]) -> list[Table]:
    """The differences from the baseline: one table per arm, main metrics first."""
    baseline = str(comparison.get("baseline", ""))
    deltas = [as_map(d) for d in as_list(comparison.get("deltas"))]
    deltas = [d for d in deltas if d.get("category") is None]
    conf = _confidence(comparison)
    tables = []
    for arm in dict.fromkeys(str(d.get("arm", "")) for d in deltas):
        mine = {str(d.get("metric", "")): d for d in deltas if str(d.get("arm", "")) == arm}
        rows = tuple(
            (m, interval(mine[m], "estimate", signed=True), fmt(mine[m].get("n")),
             MARKERS.get(mine[m].get("better"), MARKERS[None]))
            for m in metric_order(mine)
        )  # fmt: skip
        tables.append(Table(f"{arm} minus {baseline} [{conf} paired interval]",
                            ("metric", "difference", "n", "verdict"), rows,
                            align="lrrl"))  # fmt: skip
    return tables


def headline_metrics(names: Iterable[str]) -> list[str]:
    """The answer metric and the retrieval metric a compact view shows, of ``names``."""
    present = set(names)
    out: list[str] = []
    for group in (("judge/correctness", "f1", "answer_contains", "em"),
                  ("recall@5", "recall@10", "recall@2", "recall_in_context")):  # fmt: skip
        out += [m for m in group if m in present][:1]
    return out


def category_table(comparison: Mapping[str, Any]) -> Table | None:
    """Per question category: each arm's difference from the baseline on the headline metrics."""
    deltas = [as_map(d) for d in as_list(comparison.get("by_category"))]
    counts = as_map(comparison.get("categories"))
    if not deltas:
        return None
    metrics = headline_metrics(str(d.get("metric", "")) for d in deltas)
    arm_names = list(dict.fromkeys(str(d.get("arm", "")) for d in deltas))
    cats = list(dict.fromkeys([*counts, *(str(d.get("category")) for d in deltas)]))
    index = {(str(d.get("category")), str(d.get("arm")), str(d.get("metric"))): d for d in deltas}
    columns = [(a, m) for a in arm_names for m in metrics]
    if not columns:
        return None
    rows = []
    for cat in cats:
        cells = []
        for a, m in columns:
            d = index.get((cat, a, m))
            cells.append(MISSING if d is None else
                         f"{fmt(_number(d.get('estimate')), signed=True)} "
                         f"{MARKERS.get(d.get('better'), MARKERS[None])[0]}")  # fmt: skip
        rows.append((cat, fmt(counts.get(cat)), *cells))
    baseline = str(comparison.get("baseline", ""))
    header = ("category", "questions", *(f"{a}: {m}" for a, m in columns))
    return Table(f"Difference from {baseline} per category (▲ better, ▼ worse, · inconclusive)",
                 header, tuple(rows))  # fmt: skip


def cost_table(comparison: Mapping[str, Any]) -> Table | None:
    """What each arm spent: model calls, tokens, cache hits, money, latency percentiles."""
    summaries = arms(comparison)
    if not summaries:
        return None
    costs = [as_map(a.get("cost")) for a in summaries]
    money = any(c.get("money") is not None for c in costs)
    header = ["arm", "rows", "calls", "cache hits", "tokens in", "tokens out",
              *(["money"] if money else []), "latency p50 ms", "latency p95 ms",
              "retrieval p50 ms", "retrieval p95 ms"]  # fmt: skip
    rows = []
    for a, c in zip(summaries, costs, strict=True):
        spent = [f"{c['money']:.4f}" if isinstance(c.get("money"), int | float) else MISSING]
        rows.append((arm_label(a), *(fmt(c.get(k)) for k in _COUNTS),
                     *(spent if money else []), *(_ms(c.get(k)) for k in _TIMES)))  # fmt: skip
    return Table("Cost per arm (totals over all rows; latency in milliseconds)",
                 tuple(header), tuple(rows))  # fmt: skip


_COUNTS = ("rows", "calls", "cache_hits", "input_tokens", "output_tokens")
_TIMES = ("latency_ms_p50", "latency_ms_p95", "retrieval_ms_p50", "retrieval_ms_p95")


def abstention_tables(comparison: Mapping[str, Any]) -> list[Table]:
    """Abstention counts and rates per arm, and the precision differences from the baseline."""
    with_stats = [(a, as_map(a.get("abstention"))) for a in arms(comparison)]
    with_stats = [(a, s) for a, s in with_stats if s]
    tables = []
    if with_stats:
        keys = list(dict.fromkeys(k for _, s in with_stats for k in s))
        rows = tuple((arm_label(a), *(fmt(s.get(k)) for k in keys)) for a, s in with_stats)
        tables.append(Table("Abstention per arm (declines against unanswerable questions)",
                            ("arm", *keys), rows))  # fmt: skip
    precision = [as_map(d) for d in as_list(comparison.get("abstention_precision"))]
    if precision:
        rows = tuple((str(d.get("arm", "")), str(d.get("baseline", "")),
                      interval(d, "estimate", signed=True), fmt(d.get("n")),
                      MARKERS.get(d.get("better"), MARKERS[None])) for d in precision)  # fmt: skip
        tables.append(Table("Abstention precision minus the baseline's",
                            ("arm", "baseline", "difference", "n", "verdict"), rows,
                            align="llrrl"))  # fmt: skip
    return tables


def pairwise_tables(comparison: Mapping[str, Any]) -> list[Table]:
    """Per arm judged against the baseline: each criterion's outcome, then its length buckets."""
    tables = []
    baseline = str(comparison.get("baseline", ""))
    for arm, summary in as_map(comparison.get("pairwise")).items():
        s = as_map(summary)
        criteria = as_map(s.get("criteria"))
        rows = tuple((str(name), *(fmt(as_map(c).get(k)) for k in _CRITERION))
                     for name, c in criteria.items())  # fmt: skip
        header = ("criterion", *(k.replace("_", " ") for k in _CRITERION))
        tables.append(Table(f"Pairwise judge: {arm} against {baseline} ({fmt(s.get('pairs'))} "
                            f"pairs, {fmt(s.get('failed'))} failed)", header, rows))  # fmt: skip
        length = as_map(s.get("length"))
        buckets = [as_map(b) for b in as_list(length.get("buckets"))]
        if buckets and criteria:
            names = list(criteria)
            rows = tuple((str(b.get("label", "")), fmt(b.get("pairs")),
                          *(fmt(as_map(b.get("win_rate")).get(n)) for n in names))
                         for b in buckets)  # fmt: skip
            corr = as_map(length.get("correlation"))
            rows += (("correlation r", MISSING, *(fmt(corr.get(n)) for n in names)),)
            tables.append(Table(f"Pairwise win rate of {arm} per length ratio "
                                f"({arm} tokens / {baseline} tokens)",
                                ("length ratio", "pairs", *names), rows))  # fmt: skip
    return tables


_CRITERION = ("win_rate", "position_consistency", "wins", "losses", "ties", "inconsistent",
              "failed")  # fmt: skip


def gate_table(comparison: Mapping[str, Any]) -> Table | None:
    """The ``--fail-if`` gates: PASS or FAIL with the two sides' values."""
    gates = [as_map(g) for g in as_list(comparison.get("gates"))]
    if not gates:
        return None
    rows = tuple((str(g.get("expression", "")), "FAIL" if g.get("violated") else "PASS",
                  fmt(_number(g.get("left"))), fmt(_number(g.get("right"))),
                  str(g.get("reason") or "")) for g in gates)  # fmt: skip
    return Table("Gates (--fail-if: a gate fails when its condition holds)",
                 ("gate", "result", "left", "right", "reason"), rows, align="llrrl")  # fmt: skip


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _ms(value: object) -> str:
    number = _number(value)
    return MISSING if number is None else f"{number:,.1f}"


def _confidence(comparison: Mapping[str, Any]) -> str:
    level = _number(as_map(comparison.get("stats")).get("confidence"))
    return MISSING if level is None else f"{level:.0%}"


def join(values: Sequence[object]) -> str:
    """Comma-separated values, ``—`` when empty."""
    return ", ".join(str(v) for v in values) or MISSING
