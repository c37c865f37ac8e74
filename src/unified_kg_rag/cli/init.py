"""``ukr init [DIR]``: write a commented ``ukr.yaml`` with every setting at its default."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from unified_kg_rag.cli.common import err_console, out_console
from unified_kg_rag.config.load import CONFIG_FILE_NAME
from unified_kg_rag.config.template import render_template

__all__ = ["init_command"]


def init_command(
    directory: Annotated[
        Path,
        typer.Argument(help="Project directory (created if missing).", file_okay=False),
    ] = Path("."),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing ukr.yaml.")] = False,
) -> None:
    """Write DIR/ukr.yaml: every setting at its default, each with its description."""
    target = directory / CONFIG_FILE_NAME
    if target.exists() and not force:
        err_console.print(f"UsageError: {target} exists; use --force to overwrite it")
        raise typer.Exit(2)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        target.write_text(render_template(), encoding="utf-8")
    except OSError as exc:
        err_console.print(f"UsageError: {target}: {exc.strerror or exc}")
        raise typer.Exit(2) from None
    here = directory.resolve() == Path.cwd().resolve()
    flag = "" if here else f" -C {shlex.quote(str(directory))}"
    out_console.print(f'Wrote {target}. Next: ukr index PATH{flag}, then ukr query "..."{flag}')
