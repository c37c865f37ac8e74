"""``ukr delete DOC_ID|PATH...``: remove documents and what is derived from them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from unified_kg_rag.cli.common import (
    ConfigOpt,
    JsonOpt,
    ProjectOpt,
    QuietOpt,
    StoresOpt,
    VerboseOpt,
    counted,
    err_console,
    load,
    out_console,
    printable,
    run,
)
from unified_kg_rag.cli.progress import RichProgress

if TYPE_CHECKING:  # loaded when the command runs
    from unified_kg_rag.ingestion.report import DeleteReport

__all__ = ["YesOpt", "delete_command", "render_delete"]

YesOpt = Annotated[
    bool,
    typer.Option(
        "--yes",
        "-y",
        help="Delete even when many documents would go at once (an emptied folder, or more "
        "than `indexing.max_delete_share` of the documents); without it such a run stops "
        "before writing anything.",
    ),
]


def render_delete(report: DeleteReport) -> None:
    """Print what a deletion did on stdout, and the unknown targets on stderr."""
    from unified_kg_rag.cli.index import render_graph

    if report.archives is not None:
        from unified_kg_rag.cli.index import render_report

        out_console.print("Message archives dropped; the others rendered again:")
        render_report(report.archives)
        if not report.deleted and not report.unknown:
            return
    table = Table(title=f"Index '{report.index}'", show_header=False, box=None)
    table.add_row("documents deleted", str(len(report.deleted)))
    table.add_row("  text units removed", str(report.text_units_removed))
    if report.records_removed:
        table.add_row("  extraction records removed", str(report.records_removed))
    if report.usage.calls or report.usage.cache_hits:
        u = report.usage
        table.add_row("model calls", f"{u.calls} ({u.cache_hits} cached), {u.input_tokens:,} "
                      f"tokens in, {u.output_tokens:,} out")
    table.add_row("time", f"{report.elapsed_s:.1f} s")
    out_console.print(table)
    for doc in report.deleted:
        out_console.print(f"deleted: {escape(printable(doc.path))} ({doc.document_id[:12]})",
                          soft_wrap=True)
    if report.lazy is not None and not report.lazy.skipped_reason:
        out_console.print(f"concept graph (lazy): rebuilt over {report.lazy.text_units} text "
                          f"units, {counted(report.lazy.concepts, 'concept')}")
    if report.graph is not None:
        render_graph(report.graph)
    if report.unknown:
        named = "; ".join(f"{printable(u.path)}: {u.reason}" for u in report.unknown)
        err_console.print(f"[bold red]not deleted[/]: {escape(named)}", soft_wrap=True)


def delete_command(
    targets: Annotated[
        list[str],
        typer.Argument(
            help="Document ids, file paths, or paths relative to the indexed "
            "folder when only one document has it; the path of a message archive drops it "
            "from the index's message corpus.",
            show_default=False,
        ),
    ],
    index: Annotated[
        str | None, typer.Option("--index", "-i", help="Index to delete from. [default: "
                                 "query.index]")
    ] = None,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    yes: YesOpt = False,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Delete documents from an index: their text units and every item derived only from them.

    Entities, relationships, communities and reports are derived again from the surviving
    documents (with the LLM that built the graph: summaries and reports that changed are
    asked again), and the extraction records only the deleted text had are removed. A
    document whose file is still in a folder you index comes back on the next `ukr index`:
    delete or exclude the file too. Deleting more than `indexing.max_delete_share` of the
    index asks for `--yes`. Exit status 3 when a target named no document (the others are
    deleted). Naming a message archive (a `chat.db` indexed before) drops it: the other
    archives are read again and the transcripts they no longer render are deleted.
    """

    async def main() -> DeleteReport:
        from unified_kg_rag.bootstrap import build_app

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        async with build_app(config, project_dir) as app:
            with RichProgress(err_console, enabled=not (quiet or json_out)) as progress:
                pipeline = app.index_pipeline(index, progress=progress)
                return await pipeline.delete(targets, confirm=yes)

    report = run(
        main,
        verbose=verbose,
        interrupted="Interrupted: run the same command again to finish the deletion (the "
        "documents are recorded `deleting` and every later run completes their removal).",
    )
    if json_out:
        typer.echo(report.model_dump_json(indent=2))
        if report.unknown:
            named = "; ".join(f"{printable(u.path)}: {u.reason}" for u in report.unknown)
            err_console.print(f"not deleted: {escape(named)}", soft_wrap=True)
    else:
        render_delete(report)
    raise typer.Exit(report.exit_code)
