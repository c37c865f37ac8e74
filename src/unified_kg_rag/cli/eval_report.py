"""``ukr eval report RUN_DIR``: write a saved run's report (Markdown and self-contained HTML).

The command function only; ``cli/evaluate.py`` registers it on ``eval_app`` as ``report``.
It reads the run folder alone: no project, configuration, index or model.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from unified_kg_rag.cli.common import JsonOpt, VerboseOpt, out_console, printable, run

if TYPE_CHECKING:  # loaded when the command runs
    from unified_kg_rag.evaluation.report import ReportFiles

__all__ = ["report_command"]


def report_command(
    run_dir: Annotated[
        Path,
        typer.Argument(
            help="Run folder written by `ukr eval` (manifest.json, comparison.json).",
            file_okay=False,
        ),
    ],
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Folder to write the report into. [default: RUN_DIR]",
            show_default=False, file_okay=False,
        ),
    ] = None,
    title: Annotated[
        str | None,
        typer.Option("--title", help="Report title. [default: Evaluation RUN_ID]",
                     show_default=False),
    ] = None,
    open_report: Annotated[
        bool, typer.Option("--open", help="Open report.html in the default browser.")
    ] = False,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Write report.md and report.html (tables, intervals, figures) for a saved run."""

    async def main() -> ReportFiles:
        from unified_kg_rag.evaluation.report import write_report

        return await asyncio.to_thread(write_report, run_dir, out_dir=out, title=title)

    files = run(main, verbose=verbose)
    if json_out:
        typer.echo(files.model_dump_json(indent=2))
    else:
        figures = len(files.figures)
        out_console.print(
            f"Wrote {printable(str(files.markdown))} and {printable(str(files.html))} "
            f"({figures} figure{'' if figures == 1 else 's'})", markup=False,
        )
    if open_report:
        import webbrowser

        webbrowser.open(files.html.resolve().as_uri())
