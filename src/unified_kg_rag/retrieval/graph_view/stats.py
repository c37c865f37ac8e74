"""Figures of a whole graph: counts, community sizes per level, degrees, the top nodes.

Pure functions over a `GraphView` (`graph_stats`), and static charts of them with matplotlib
(`write_charts`, Agg backend: no display needed). What ``ukr graph stats`` prints.
"""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from unified_kg_rag.retrieval.graph_view.loaded import GraphView
from unified_kg_rag.retrieval.graph_view.models import GraphKind

if TYPE_CHECKING:
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure

__all__ = [
    "CHART_NAMES",
    "DegreeBucket",
    "GraphStats",
    "LevelSizes",
    "TopNode",
    "graph_stats",
    "write_charts",
]

CHART_NAMES = ("community_sizes", "degree_distribution")
"""The charts `write_charts` draws, each as ``NAME.svg`` and ``NAME.png``."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class LevelSizes(_Model):
    """The community sizes (members) of one level.

    Attributes:
        level: the level (0: top).
        count: its communities.
        min: the smallest size.
        median: the median size.
        max: the largest size.
        sizes: ``[size, communities of that size]`` pairs, by size.
    """

    level: int
    count: int
    min: int
    median: float
    max: int
    sizes: list[tuple[int, int]]


class DegreeBucket(_Model):
    """Nodes whose degree lies in ``[low, high]`` (buckets double: 0, 1, 2-3, 4-7 ...)."""

    low: int
    high: int
    count: int


class TopNode(_Model):
    """One of the most connected nodes: id, label, type and degree."""

    id: str
    label: str
    entity_type: str
    degree: int


class GraphStats(_Model):
    """Figures of one index's graph.

    Attributes:
        index: the index.
        graph: ``entities`` or ``concepts``.
        nodes: its nodes.
        edges: its edges (relationships, or co-occurring concept pairs).
        communities: community sizes per level, top level first.
        degree_buckets: the degree histogram (doubling buckets, empty ones left out).
        degrees: ``[degree, nodes with that degree]`` pairs, by degree (exact).
        top: the most connected nodes, highest degree first (ties by label).
    """

    index: str
    graph: GraphKind
    nodes: int
    edges: int
    communities: list[LevelSizes]
    degree_buckets: list[DegreeBucket]
    degrees: list[tuple[int, int]]
    top: list[TopNode]


def graph_stats(view: GraphView, index: str, *, top: int = 20) -> GraphStats:
    """Return the figures of ``view``.

    A node's degree is its edges in the whole graph (parallel relationships count each; a
    self-loop counts once).

    Args:
        view: the graph.
        index: the index's name (reported).
        top: how many of the most connected nodes to list.
    """
    degrees = [view.degree(n) for n in range(len(view.ids))]
    by_level: dict[int, list[int]] = {}
    for c in view.communities:
        by_level.setdefault(c.level, []).append(c.size)
    levels = [
        LevelSizes(level=lv, count=len(sizes), min=min(sizes), max=max(sizes),
                   median=float(statistics.median(sizes)),
                   sizes=sorted(Counter(sizes).items()))
        for lv, sizes in sorted(by_level.items())
    ]  # fmt: skip
    buckets: Counter[int] = Counter(_bucket(d) for d in degrees)
    return GraphStats(
        index=index, graph=view.kind, nodes=len(view.ids),
        edges=sum(1 for links in view.links for link in links if link[3]),
        communities=levels,
        degree_buckets=[DegreeBucket(low=lo, high=max(lo * 2 - 1, lo), count=buckets[lo])
                        for lo in sorted(buckets)],
        degrees=sorted(Counter(degrees).items()),
        top=[TopNode(id=view.ids[n], label=view.labels[n], entity_type=view.types[n],
                     degree=view.degree(n)) for n in view.by_degree[:top]],
    )  # fmt: skip


def _bucket(degree: int) -> int:
    """The low end of ``degree``'s bucket: 0, 1, 2, 4, 8 ..."""
    return 0 if degree == 0 else 1 << (degree.bit_length() - 1)


def write_charts(stats: GraphStats, folder: Path) -> list[Path]:
    """Draw `CHART_NAMES` into ``folder`` (created), each as SVG and PNG; return the paths.

    ``community_sizes``: a box plot of the sizes of each level, every community a point
    (whole-number ticks). ``degree_distribution``: nodes per degree on log-log axes; degree 0
    cannot be shown on a log axis, so the title says how many nodes have it. Ticks are plain
    integers (1, 2, 5, 10, 20 ...), not ``3×10⁰``.

    Raises:
        OSError: the folder or a file cannot be written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    folder.mkdir(parents=True, exist_ok=True)
    title = f"{stats.index} · {stats.graph}"
    written: list[Path] = []

    fig, ax = plt.subplots(figsize=(7, 4.5))
    if stats.communities:
        per_level = [[size for size, n in lv.sizes for _ in range(n)] for lv in stats.communities]
        positions = list(range(1, len(per_level) + 1))
        ax.boxplot(per_level, positions=positions, widths=0.5, showfliers=False)
        for x, sizes in zip(positions, per_level, strict=True):
            ax.scatter([x] * len(sizes), sizes, s=12, alpha=0.5)
        ax.set_xticks(positions, [f"level {lv.level}\n{lv.count} communities"
                                  for lv in stats.communities])  # fmt: skip
        if max(lv.max for lv in stats.communities) > 50:
            ax.set_yscale("log")
            _integer_log_ticks(ax.yaxis)
        else:
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        ax.text(0.5, 0.5, "no communities", ha="center", va="center", transform=ax.transAxes)
    ax.set_ylabel("community size (members)")
    ax.set_title(f"Community sizes per level — {title}")
    written += _save(fig, folder / CHART_NAMES[0])
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4.5))
    points = [(d, n) for d, n in stats.degrees if d > 0]
    isolated = sum(n for d, n in stats.degrees if d == 0)
    if points:
        xs, ys = zip(*points, strict=True)
        ax.scatter(xs, ys, s=18)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _integer_log_ticks(ax.xaxis)
        _integer_log_ticks(ax.yaxis)
    else:
        ax.text(0.5, 0.5, "no edges", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("degree")
    ax.set_ylabel("nodes")
    note = (f"\n{isolated} node{'' if isolated == 1 else 's'} of degree 0 not shown "
            "(a log axis has no 0)" if isolated and points else "")  # fmt: skip
    ax.set_title(f"Degree distribution (log-log) — {title}{note}")
    written += _save(fig, folder / CHART_NAMES[1])
    plt.close(fig)
    return written


def _integer_log_ticks(axis: Axis) -> None:
    """Label a log ``axis`` 1, 2, 5, 10, 20, 50 ... in plain integers, minor ticks unlabelled."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0f}" if v >= 1 else ""))
    axis.set_minor_formatter(NullFormatter())


def _save(fig: Figure, stem: Path) -> list[Path]:
    fig.tight_layout()
    paths = [stem.with_suffix(".svg"), stem.with_suffix(".png")]
    fig.savefig(paths[0], format="svg", metadata={"Date": None})
    fig.savefig(paths[1], format="png", dpi=120, metadata={"Software": None})
    return paths
