"""``ukr index PATH...``: index files and folders into an index of the project."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    err_console,
    load,
    out_console,
    run,
)
from unified_kg_rag.cli.progress import RichProgress
from unified_kg_rag.ingestion.report import IndexReport

__all__ = ["index_command", "render_report"]


def render_report(report: IndexReport) -> None:
    """Print an indexing summary table (and the failed documents) on stdout."""
    table = Table(title=f"Index '{report.index}'", show_header=False, box=None)
    table.add_row("documents found", str(report.documents_found))
    table.add_row(
        "  new / changed / retried",
        f"{report.documents_new} / {report.documents_changed} / {report.documents_retried}",
    )
    table.add_row("  unchanged (skipped)", str(report.documents_unchanged))
    table.add_row("  failed", str(len(report.failed)))
    table.add_row("text units written", str(report.text_units_written))
    table.add_row(
        "  embedded / reused", f"{report.text_units_embedded} / {report.text_units_reused}"
    )
    if report.text_units_removed:
        table.add_row("  stale removed", str(report.text_units_removed))
    if report.skipped:
        table.add_row("files skipped", str(len(report.skipped)))
    if report.documents_missing:
        table.add_row("documents not found (kept)", str(report.documents_missing))
    table.add_row("time", f"{report.elapsed_s:.1f} s")
    out_console.print(table)
    for f in report.failed:
        out_console.print(f"[red]failed[/]: {escape(f.path)}: {escape(f.reason)}", soft_wrap=True)


def index_command(
    paths: Annotated[
        list[Path], typer.Argument(help="Files and folders to index.", show_default=False)
    ],
    index: Annotated[
        str | None, typer.Option("--index", "-i", help="Index to write. [default: query.index]")
    ] = None,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Index files and folders: parse, chunk, embed and store them (only what changed).

    Folders are walked recursively; hidden files and unsupported extensions are skipped.
    Exit status 3 when any document failed (the others are indexed).
    """

    async def main() -> IndexReport:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.ingestion.pipeline import IndexPipeline

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        async with build_app(config, project_dir) as app:
            index_stores = app.index(index)
            with RichProgress(err_console, enabled=not (quiet or json_out)) as progress:
                pipeline = IndexPipeline(
                    index_stores,
                    embedder=app.embedder,
                    chunk_tokenizer=app.chunk_tokenizer,
                    parsers=app.parsers,
                    config=config,
                    progress=progress,
                )
                return await pipeline.run(paths)

    report = run(
        main,
        verbose=verbose,
        interrupted="Interrupted: every committed batch is kept; run the same command again "
        "to finish (stored vectors are reused).",
    )
    if json_out:
        typer.echo(report.model_dump_json(indent=2))
    else:
        render_report(report)
    raise typer.Exit(report.exit_code)
