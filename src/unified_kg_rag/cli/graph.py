"""``ukr graph``: export an index's graph to a file and chart its figures, with no server.

``ukr graph export`` writes the whole graph, a label's neighbourhood, or the trace of an
answer saved by ``ukr query --json``, as JSON (graphology), GraphML, GEXF or one standalone
HTML page (`retrieval.graph_view.export`). ``ukr graph stats`` prints counts, community sizes
per level, the degree distribution and the most connected nodes, and draws them as SVG and
PNG charts (`retrieval.graph_view.stats`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.markup import escape
from rich.table import Table

from unified_kg_rag.cli.common import (
    ConfigOpt,
    JsonOpt,
    ProjectOpt,
    StoresOpt,
    VerboseOpt,
    err_console,
    load,
    out_console,
    printable,
    run,
)
from unified_kg_rag.cli.help_format import UkrCommand, UkrGroup

if TYPE_CHECKING:  # the application modules load when a command runs, not for `ukr --help`
    from unified_kg_rag.retrieval.graph_view import GraphSlice
    from unified_kg_rag.retrieval.graph_view.stats import GraphStats

__all__ = ["graph_app"]

graph_app = typer.Typer(
    help="Export an index's knowledge graph (JSON, GraphML, GEXF, standalone HTML) and chart "
    "its figures, without a server.",
    no_args_is_help=True, rich_markup_mode="markdown", cls=UkrGroup,
)  # fmt: skip

IndexOpt = Annotated[
    str | None,
    typer.Option("--index", "-i", help="Index to read. [default: query.index]",
                 show_default=False),
]  # fmt: skip
ExportIndexOpt = Annotated[
    str | None,
    typer.Option("--index", "-i", help="Index to read. [default: query.index; with --trace, "
                  "the answer's index]", show_default=False),
]  # fmt: skip
GraphOpt = Annotated[
    Literal["entities", "concepts"] | None,
    typer.Option("--graph", help="entities (the LLM graph) or concepts (the lazy graph). "
                 "[default: entities when the index holds it]", show_default=False),
]  # fmt: skip


@graph_app.command("export", cls=UkrCommand)
def export_command(
    output: Annotated[
        Path, typer.Option("--output", "-o", dir_okay=False, help="File to write.")
    ],
    fmt: Annotated[
        Literal["json", "graphml", "gexf", "html"],
        typer.Option("--format", "-f", help="json (graphology's serialized graph), graphml, "
                     "gexf, or html (one self-contained page with the web app's viewer)."),
    ] = "json",
    index: ExportIndexOpt = None,
    graph: GraphOpt = None,
    label: Annotated[
        str | None,
        typer.Option("--label", help="Export this node's neighbourhood (its label or id) "
                     "instead of the whole graph."),
    ] = None,
    max_depth: Annotated[
        int | None,
        typer.Option("--max-depth", min=0, max=5, help="Hops around --label (default 2) or "
                     "around the traced nodes (default 1).", show_default=False),
    ] = None,
    max_nodes: Annotated[
        int | None,
        typer.Option("--max-nodes", min=1, help="Node cap (default 200 with --label or "
                     "--trace; every node otherwise).", show_default=False),
    ] = None,
    trace: Annotated[
        Path | None,
        typer.Option("--trace", dir_okay=False, help="Export the trace of an answer: a file "
                     "written by `ukr query --json` (its entities, relationships, concepts and "
                     "communities, inside their neighbourhood)."),
    ] = None,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Write the graph (or a label's neighbourhood, or an answer's trace) to a file."""

    async def main() -> GraphSlice:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.retrieval.graph_view.export import (
            export_slice,
            read_trace,
            write_export,
        )
        from unified_kg_rag.util.errors import UsageError

        if not output.parent.is_dir():
            raise UsageError(f"{output.parent}: no such directory", field="--output")
        sources, traced_index = None, None
        if trace is not None:
            traced_index, sources = read_trace(trace)
        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        async with build_app(config, project_dir) as app:
            reader = app.graph_reader(index or traced_index)
            piece = await export_slice(reader, graph=graph, label=label, max_depth=max_depth,
                                       max_nodes=max_nodes, trace=sources)  # fmt: skip
        write_export(piece, fmt, output)
        return piece

    piece = run(main, verbose=verbose)
    attrs = piece.attributes
    cut = " (truncated: the node cap left nodes out)" if attrs.truncated else ""
    err_console.print(
        f"wrote {escape(str(output))}: {len(piece.nodes)} nodes, {len(piece.edges)} edges of "
        f"the {attrs.graph} graph of index {escape(attrs.index)!s}{cut}", soft_wrap=True,
    )  # fmt: skip
    for note in attrs.notes or ():
        err_console.print(f"note: {escape(printable(note))}", soft_wrap=True)


@graph_app.command("stats", cls=UkrCommand)
def stats_command(
    index: IndexOpt = None,
    graph: GraphOpt = None,
    top: Annotated[
        int, typer.Option("--top", min=1, max=1000, help="How many of the most connected "
                          "nodes to list.")
    ] = 20,
    charts: Annotated[
        Path | None,
        typer.Option("--charts", file_okay=False, help="Folder to draw the charts into "
                     "(community_sizes and degree_distribution, each as .svg and .png)."),
    ] = None,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Print the graph's figures: nodes, edges, community sizes, degrees, top nodes."""

    async def main() -> tuple[GraphStats, list[Path]]:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.retrieval.graph_view.stats import graph_stats, write_charts

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        async with build_app(config, project_dir) as app:
            reader = app.graph_reader(index)
            view = await reader.view(graph)
            stats = graph_stats(view, reader.stores.name, top=top)
        return stats, (write_charts(stats, charts) if charts is not None else [])

    stats, written = run(main, verbose=verbose)
    if json_out:
        typer.echo(stats.model_dump_json(indent=2))
    else:
        _render(stats)
    for path in written:
        err_console.print(f"wrote {escape(str(path))}", soft_wrap=True)


def _render(stats: GraphStats) -> None:
    out_console.print(f"{stats.graph} graph of index {escape(stats.index)}: {stats.nodes} "
                      f"nodes, {stats.edges} edges", soft_wrap=True)  # fmt: skip
    levels = Table(title="Community sizes per level", box=None)
    for col in ("level", "communities", "min", "median", "max"):
        levels.add_column(col, justify="right")
    for lv in stats.communities:
        levels.add_row(str(lv.level), str(lv.count), str(lv.min), f"{lv.median:g}", str(lv.max))
    if stats.communities:
        out_console.print(levels)
    else:
        out_console.print("no communities")
    degrees = Table(title="Degree distribution", box=None)
    degrees.add_column("degree", justify="right")
    degrees.add_column("nodes", justify="right")
    for b in stats.degree_buckets:
        degrees.add_row(str(b.low) if b.low == b.high else f"{b.low}-{b.high}", str(b.count))
    out_console.print(degrees)
    top = Table(title="Most connected nodes", box=None)
    for col in ("label", "type", "degree"):
        top.add_column(col, justify="right" if col == "degree" else "left")
    for node in stats.top:
        top.add_row(escape(printable(node.label)), escape(printable(node.entity_type)),
                    str(node.degree))  # fmt: skip
    out_console.print(top)
