"""``ukr prompts list`` and ``ukr prompts show``: the prompt templates in effect.

Both read the configuration's overrides (``prompts.dir``, ``prompts.files`` and the older
``*.prompt_file`` fields) with their placeholder check, and load no model.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from unified_kg_rag.cli.common import (
    ConfigOpt,
    JsonOpt,
    ProjectOpt,
    VerboseOpt,
    err_console,
    load,
    out_console,
)
from unified_kg_rag.cli.help_format import UkrCommand, UkrGroup
from unified_kg_rag.config.prompts import load_prompt_library
from unified_kg_rag.domain.prompts.library import PromptLibrary
from unified_kg_rag.util.errors import UkrError

__all__ = ["prompts_app"]

prompts_app = typer.Typer(
    help="The prompt templates in effect (packaged, or your override files).",
    no_args_is_help=True, rich_markup_mode="markdown", cls=UkrGroup,
)  # fmt: skip


def _library(project: ProjectOpt, config_file: ConfigOpt, verbose: bool) -> PromptLibrary:
    try:
        project_dir, config = load(project, config_file, verbose=verbose)
        return load_prompt_library(config, project_dir)
    except UkrError as exc:
        err_console.print(f"{type(exc).__name__}: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None


@prompts_app.command("list", cls=UkrCommand)
def list_command(
    project: ProjectOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """List every prompt: name, version, placeholders and source (packaged or override file).

    A placeholder in brackets may be left out of an override (it carries a setting).
    """
    library = _library(project, config_file, verbose)
    rows: list[dict[str, Any]] = []
    for name in library.names():
        base, _, version = name.rpartition(".")
        required = library.required(name)
        rows.append({
            "name": base, "version": version,
            "placeholders": sorted(library.placeholders(name)),
            "required": sorted(required), "source": library.source(name),
        })  # fmt: skip
    if json_out:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(box=None, show_lines=False)
    for column in ("name", "version", "placeholders", "source"):
        table.add_column(column, style="bold" if column == "name" else None)
    for row in rows:
        shown = " ".join(p if p in row["required"] else f"[{p}]" for p in row["placeholders"])
        table.add_row(escape(row["name"]), row["version"], escape(shown), escape(row["source"]))
    out_console.print(table)


@prompts_app.command("show", cls=UkrCommand)
def show_command(
    name: Annotated[str, typer.Argument(help="Prompt name, with or without its version.")],
    packaged: Annotated[
        bool, typer.Option("--packaged", help="Show the packaged text, not an override.")
    ] = False,
    project: ProjectOpt = None,
    config_file: ConfigOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Print the text of prompt NAME in effect (the override's when there is one)."""
    library = _library(project, config_file, verbose)
    try:
        text = library.packaged(name) if packaged else library.get(name)
    except UkrError as exc:
        err_console.print(f"{type(exc).__name__}: {exc}", markup=False, soft_wrap=True)
        raise typer.Exit(2) from None
    typer.echo(text, nl=not text.endswith("\n"))
