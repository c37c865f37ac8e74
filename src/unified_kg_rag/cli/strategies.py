"""``ukr strategies``: each strategy, its one line, and whether the index serves it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from unified_kg_rag.cli.common import (
    ConfigOpt,
    JsonOpt,
    ProjectOpt,
    StoresOpt,
    VerboseOpt,
    load,
    out_console,
    run,
)

if TYPE_CHECKING:
    from unified_kg_rag.retrieval.catalog import StrategyCatalog

__all__ = ["strategies_command"]


def strategies_command(
    index: Annotated[
        str | None, typer.Option("--index", "-i", help="Index to check. [default: query.index]")
    ] = None,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """List the strategies of `ukr query --strategy`, saying which the index serves.

    A strategy the index cannot serve names the methodology it lacks and how to build it.
    Loads no model.
    """

    async def main() -> StrategyCatalog:
        from unified_kg_rag.bootstrap import build_app
        from unified_kg_rag.retrieval.catalog import strategy_catalog

        project_dir, config = load(project, config_file, verbose=verbose, stores=stores)
        async with build_app(config, project_dir) as app:
            return await strategy_catalog(app.index(index), app.config.query)

    catalog = run(main, verbose=verbose)
    if json_out:
        typer.echo(catalog.model_dump_json(indent=2))
        return
    held = ", ".join(catalog.methodologies) or "text units only"
    table = Table(title=f"index '{escape(catalog.index)}' (holds: {escape(held)})",
                  box=None, show_lines=False)  # fmt: skip
    table.add_column("strategy", style="bold")
    table.add_column("serves")
    table.add_column("what it does")
    for info in catalog.strategies:
        serves = "yes" if info.served else (
            f"no: needs {' or '.join(info.missing)}" if info.missing else "no")
        table.add_row(escape(info.name), escape(serves), escape(info.description))
    out_console.print(table)
    if catalog.note:
        out_console.print(escape(catalog.note), soft_wrap=True)
    by_how: dict[str, list[str]] = {}
    for info in catalog.strategies:
        if info.missing:
            by_how.setdefault(info.how, []).append(info.name)
    for how, names in by_how.items():  # one line per remedy, not per strategy
        out_console.print(f"[bold]{escape(', '.join(names))}[/]: {escape(how)}",
                          soft_wrap=True)  # fmt: skip
