"""``ukr delete DOC_ID|PATH...``: remove documents and what is derived from them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from unified_kg_rag.cli.common import (
    ConfigOpt,
    JsonOpt,
    ProjectOpt,
    QuietOpt,
    StoresOpt,
    VerboseOpt,
    YesOpt,
    err_console,
    load,
    printable,
    run,
)
from unified_kg_rag.cli.progress import RichProgress
from unified_kg_rag.cli.reports import render_delete
from unified_kg_rag.util.correlation import as_run

if TYPE_CHECKING:  # loaded when the command runs
    from unified_kg_rag.ingestion.report import DeleteReport

__all__ = ["delete_command"]



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
            await app.connect_cluster()  # off the event loop: Ctrl-C is seen meanwhile
            with RichProgress(err_console, enabled=not (quiet or json_out)) as progress:
                pipeline = app.index_pipeline(index, progress=progress)
                return await pipeline.delete(targets, confirm=yes)

    report = run(
        as_run(main),
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
