"""The figures of an evaluation report, drawn with matplotlib from ``comparison.json``.

What belongs here: the four charts (recall@k per arm, the forest plot of differences from
the baseline, cost against quality, a quality metric per question category), each returned
as PNG and SVG bytes. matplotlib (the ``viz`` extra) is imported when `draw_figures` runs;
without it that call raises ImportError and the report keeps its tables. Figures use
matplotlib's object API on the Agg canvas with settings scoped to the call (no pyplot, no
process-wide backend switch), so drawing is reproducible: same input, same bytes.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from unified_kg_rag.evaluation.report_tables import (
    MAIN_METRICS,
    arms,
    as_list,
    as_map,
    headline_metrics,
)

if TYPE_CHECKING:  # matplotlib loads when a figure is drawn
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure as MplFigure

__all__ = ["FIGURE_NAMES", "Figure", "draw_figures"]

FIGURE_NAMES = ("recall_at_k", "deltas", "cost_quality", "categories")
"""File stems of the figures, in report order."""

_DPI = 100
_PANELS_PER_ROW = 4
_GOOD, _BAD, _NEUTRAL = "#1a7f37", "#cf222e", "#6e7781"


@dataclass(frozen=True)
class Figure:
    """One drawn figure.

    Attributes:
        name: file stem (one of `FIGURE_NAMES`).
        title: what it shows (caption and alt text).
        png: the PNG bytes (``_DPI`` dots per inch).
        svg: the SVG bytes (text as text).
    """

    name: str
    title: str
    png: bytes
    svg: bytes


def draw_figures(comparison: Mapping[str, Any]) -> list[Figure]:
    """Draw the figures whose data the comparison holds, in `FIGURE_NAMES` order.

    Args:
        comparison: ``comparison.json`` as a JSON object.

    Returns:
        The figures drawn; one whose data is absent (no recall, no delta, no category) is
        skipped.

    Raises:
        ImportError: matplotlib is not installed.
    """
    import matplotlib

    drawers = (_recall_at_k, _deltas, _cost_quality, _categories)
    figures: list[Figure] = []
    with matplotlib.rc_context({
        "svg.fonttype": "none",  # text stays text: smaller files, searchable, the page's font
        "svg.hashsalt": "ukr-eval-report",  # stable element ids: same run, same bytes
        "text.parse_math": False,  # an arm named "a$b$" is a name, not TeX
        "font.size": 9.0,
        "font.sans-serif": ["DejaVu Sans", "Arial", "Helvetica"],  # one short list per text
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
    }):
        for name, draw in zip(FIGURE_NAMES, drawers, strict=True):
            drawn = draw(comparison)
            if drawn is not None:
                fig, title = drawn
                figures.append(Figure(name, title, *_save(fig)))
    return figures


def _new(width_in: float, height_in: float) -> tuple[MplFigure, Axes]:
    fig, axes = _panels(1, 1, width_in, height_in)
    return fig, axes[0]


def _panels(
    rows: int, cols: int, width_in: float, height_in: float
) -> tuple[MplFigure, list[Axes]]:
    """A figure of ``rows`` x ``cols`` axes sharing both axes, flattened row by row."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(width_in, height_in), layout="constrained")
    FigureCanvasAgg(fig)
    grid = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
    return fig, [ax for row in grid for ax in row]


def _save(fig: MplFigure) -> tuple[bytes, bytes]:
    png, svg = io.BytesIO(), io.BytesIO()
    fig.savefig(png, format="png", dpi=_DPI, metadata={"Software": None})
    fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    return png.getvalue(), svg.getvalue()


def _colors(comparison: Mapping[str, Any]) -> dict[str, str]:
    """One colour per arm, the same in every figure (matplotlib's tab10 cycle)."""
    palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf"]  # fmt: skip
    return {str(a.get("arm")): palette[n % len(palette)] for n, a in enumerate(arms(comparison))}


def _label(name: str) -> str:
    """A legend label (matplotlib hides labels starting with ``_``)."""
    return f" {name}" if name.startswith("_") else name


def _point(summary: object) -> tuple[float, float, float] | None:
    """``(value, below, above)``: a summary's mean and its interval's distances from it."""
    s = as_map(summary)
    mean = s.get("mean", s.get("estimate"))
    if not isinstance(mean, int | float):
        return None
    low, high = s.get("low", mean), s.get("high", mean)
    low = low if isinstance(low, int | float) else mean
    high = high if isinstance(high, int | float) else mean
    return float(mean), max(0.0, float(mean - low)), max(0.0, float(high - mean))


def _confidence(comparison: Mapping[str, Any]) -> str:
    level = as_map(comparison.get("stats")).get("confidence")
    return f"{level:.0%}" if isinstance(level, int | float) else "the"


def _recall_at_k(comparison: Mapping[str, Any]) -> tuple[MplFigure, str] | None:
    ks = [k for k in (2, 5, 10) if any(f"recall@{k}" in as_map(a.get("metrics"))
                                        for a in arms(comparison))]  # fmt: skip
    if not ks:
        return None
    colors = _colors(comparison)
    curves = []
    for a in arms(comparison):
        pts = [(k, p) for k in ks if (p := _point(as_map(a.get("metrics")).get(f"recall@{k}")))]
        if pts:
            curves.append((str(a.get("arm")), pts))
    fig, ax = _new(6.0, 3.6)
    for n, (name, pts) in enumerate(curves):
        dodge = (n - (len(curves) - 1) / 2) * 0.08  # keep overlapping intervals apart
        ax.errorbar([k + dodge for k, _ in pts], [p[0] for _, p in pts],
                    yerr=[[p[1] for _, p in pts], [p[2] for _, p in pts]], marker="o",
                    capsize=3, color=colors.get(name), label=_label(name))  # fmt: skip
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("k (top documents retrieved)")
    ax.set_ylabel("recall@k (mean)")
    ax.set_ylim(0, 1.02)
    fig.legend(loc="outside right upper", fontsize="small")
    title = f"Recall@k per arm, bars: {_confidence(comparison)} interval"
    ax.set_title(title)
    return fig, title


def _deltas(comparison: Mapping[str, Any]) -> tuple[MplFigure, str] | None:
    """A forest plot per arm (small multiples sharing the metric axis), main metrics only."""
    deltas = [as_map(d) for d in as_list(comparison.get("deltas"))]
    deltas = [d for d in deltas if d.get("category") is None and d.get("metric") in MAIN_METRICS]
    if not deltas:
        return None
    present = {str(d.get("metric")) for d in deltas}
    metrics = [m for m in MAIN_METRICS if m in present]
    order = [str(a.get("arm")) for a in arms(comparison)]
    arm_names = sorted({str(d.get("arm")) for d in deltas},
                       key=lambda a: (order.index(a) if a in order else len(order), a))  # fmt: skip
    cols = min(len(arm_names), _PANELS_PER_ROW)
    rows = -(-len(arm_names) // cols)
    fig, grid = _panels(rows, cols, 1.6 + 2.3 * cols, rows * (0.8 + 0.24 * len(metrics)))
    y = {m: len(metrics) - 1 - n for n, m in enumerate(metrics)}
    for n, ax in enumerate(grid):
        if n >= len(arm_names):
            ax.set_visible(False)
            continue
        for d in deltas:
            p = _point(d)
            if str(d.get("arm")) != arm_names[n] or p is None:
                continue
            better = d.get("better")
            color = _GOOD if better is True else _BAD if better is False else _NEUTRAL
            ax.errorbar([p[0]], [y[str(d.get("metric"))]], xerr=[[p[1]], [p[2]]], fmt="o",
                        color=color, capsize=2, markersize=4)  # fmt: skip
        ax.axvline(0.0, color=_NEUTRAL, linewidth=1)
        ax.grid(axis="y", visible=False)
        ax.set_title(arm_names[n], fontsize="medium")
    grid[0].set_yticks(range(len(metrics)), list(reversed(metrics)))
    grid[0].set_ylim(-0.6, len(metrics) - 0.4)
    baseline = str(comparison.get("baseline", ""))
    conf = _confidence(comparison)
    fig.supxlabel(f"arm minus {baseline} (metric units), {conf} paired interval",
                  fontsize="medium")  # fmt: skip
    return fig, (f"Difference from {baseline} per arm and metric, {conf} paired interval "
                 "(green: better, red: worse, grey: inconclusive)")


def _quality_metric(summaries: list[Mapping[str, Any]], present: set[str]) -> str | None:
    """Return the quality axis's metric, or None.

    The judge's correctness; else F1, unless every arm is near 0 on it (long RAG answers);
    else whether the answer holds a gold answer; else recall@5.
    """

    def top(metric: str) -> float:
        means = [as_map(as_map(a.get("metrics")).get(metric)).get("mean") for a in summaries]
        return max((float(m) for m in means if isinstance(m, int | float)), default=0.0)

    for metric in ("judge/correctness", "f1", "answer_contains", "recall@5"):
        if metric in present and (metric != "f1" or top(metric) > 0.05):
            return metric
    return None


def _cost_quality(comparison: Mapping[str, Any]) -> tuple[MplFigure, str] | None:
    summaries = arms(comparison)
    present = {m for a in summaries for m in as_map(a.get("metrics"))}
    quality = _quality_metric(summaries, present)
    if quality is None:
        return None
    tokens = any(_per_row(a, "input_tokens") for a in summaries)
    xlabel = ("input tokens per answer (mean)" if tokens
              else "latency per answer, median (ms)")  # fmt: skip
    colors = _colors(comparison)
    points = []
    for a in summaries:
        p = _point(as_map(a.get("metrics")).get(quality))
        x = _per_row(a, "input_tokens") if tokens else as_map(a.get("cost")).get("latency_ms_p50")
        if p is not None and isinstance(x, int | float):
            points.append((str(a.get("arm")), float(x), p))
    if not points:
        return None
    fig, ax = _new(6.0, 3.6)
    for name, x, p in points:
        ax.errorbar([x], [p[0]], yerr=[[p[1]], [p[2]]], fmt="o", capsize=3,
                    color=colors.get(name), label=_label(name))  # fmt: skip
        ax.annotate(name, (x, p[0]), textcoords="offset points", xytext=(6, 4),
                    fontsize="small")  # fmt: skip
    ax.set_xlabel(xlabel)
    ax.set_ylabel(f"{quality} (mean)")
    ax.set_xlim(left=0)
    ax.set_ylim(0, 1.02)
    title = f"Cost and quality per arm: {quality} against {xlabel.split(' (')[0]}"
    ax.set_title(title, fontsize="medium")
    return fig, title


def _per_row(arm: Mapping[str, Any], key: str) -> float:
    cost = as_map(arm.get("cost"))
    rows, value = cost.get("rows"), cost.get(key)
    if isinstance(rows, int) and rows > 0 and isinstance(value, int | float):
        return float(value) / rows
    return 0.0


def _categories(comparison: Mapping[str, Any]) -> tuple[MplFigure, str] | None:
    means = {str(c): as_map(v) for c, v in as_map(comparison.get("category_means")).items()}
    names = {str(m) for per_arm in means.values() for arm in per_arm.values()
             for m in as_map(arm)}  # fmt: skip
    metrics = headline_metrics(names)
    if not means or not metrics:
        return None
    metric = metrics[0]
    arm_names = list(dict.fromkeys(str(a) for per_arm in means.values() for a in per_arm))
    cats = list(means)
    colors = _colors(comparison)
    width = 0.8 / max(1, len(arm_names))
    fig, ax = _new(max(6.0, min(12.0, 2.5 + 0.35 * len(cats) * len(arm_names))), 3.6)
    for n, arm in enumerate(arm_names):
        values = [as_map(means[c].get(arm)).get(metric) for c in cats]
        ys = [float(v) if isinstance(v, int | float) else math.nan for v in values]  # no bar
        xs = [i + (n - (len(arm_names) - 1) / 2) * width for i in range(len(cats))]
        ax.bar(xs, ys, width=width, color=colors.get(arm), label=_label(arm))
    counts = as_map(comparison.get("categories"))
    slanted = len(cats) > 6 or max(len(c) for c in cats) > 12
    ticks = [_tick(c, counts.get(c), " " if slanted else "\n") for c in cats]
    ax.set_xticks(range(len(cats)), ticks, rotation=30 if slanted else 0,
                  ha="right" if slanted else "center")  # fmt: skip
    ax.set_ylabel(f"{metric} (mean)")
    ax.set_ylim(0, 1.02)
    ax.grid(axis="x", visible=False)
    fig.legend(loc="outside right upper", fontsize="small")
    title = f"{metric} per question category and arm"
    ax.set_title(title, fontsize="medium")
    return fig, title


def _tick(category: str, count: object, sep: str) -> str:
    name = category if len(category) <= 30 else category[:29] + "…"
    return f"{name}{sep}(n={count})" if isinstance(count, int) else name

