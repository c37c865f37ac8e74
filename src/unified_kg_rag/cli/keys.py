"""``ukr keys``: the HTTP service's API keys (add, list, remove), kept in the key file.

The key file is ``service.api_keys_file`` (default ``.ukr/api_keys.json``); it holds each
key's SHA-256, never the key (`service.keys`). A running service reads changes on its next
request.
"""

from __future__ import annotations

from typing import Annotated

import typer

from unified_kg_rag.cli.common import ConfigOpt, JsonOpt, ProjectOpt, VerboseOpt, load, run
from unified_kg_rag.cli.help_format import UkrCommand, UkrGroup

__all__ = ["keys_app"]

keys_app = typer.Typer(
    help="Manage the HTTP service's API keys (scopes read < write < admin).",
    no_args_is_help=True, rich_markup_mode="markdown", cls=UkrGroup,
)  # fmt: skip

NameArg = Annotated[str, typer.Argument(help="The key's name (letters, digits, . _ -).")]


@keys_app.command("add", cls=UkrCommand)
def add_command(
    name: NameArg,
    scope: Annotated[
        str,
        typer.Option("--scope", help="What the key may do: read (questions, listings, "
                     "metrics), write (also index and delete), admin (everything)."),
    ] = "read",
    project: ProjectOpt = None,
    config_file: ConfigOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Make an API key and print it once on stdout; only its hash is stored."""
    from unified_kg_rag.cli.common import err_console
    from unified_kg_rag.service.keys import SCOPES, add_key, keys_file_path
    from unified_kg_rag.util.errors import UsageError

    async def main() -> tuple[str, str]:
        chosen = next((s for s in SCOPES if s == scope), None)
        if chosen is None:
            raise UsageError(f"{scope!r} is not a scope; use read, write or admin",
                             field="--scope")  # fmt: skip
        project_dir, config = load(project, config_file, verbose=verbose)
        path = keys_file_path(project_dir, config)
        return add_key(path, name, chosen), str(path)

    key, path = run(main, verbose=verbose)
    typer.echo(key)
    err_console.print(f"Key {name!r} ({scope}) stored in {path}; it is shown only now.",
                      markup=False, soft_wrap=True)  # fmt: skip


@keys_app.command("list", cls=UkrCommand)
def list_command(
    project: ProjectOpt = None,
    config_file: ConfigOpt = None,
    json_out: JsonOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """List the keys of the key file: name, scopes, created (never a key or its hash)."""
    import datetime as dt

    from unified_kg_rag.service.keys import ApiKey, dump_keys, keys_file_path, read_keys

    async def main() -> list[ApiKey]:
        project_dir, config = load(project, config_file, verbose=verbose)
        return read_keys(keys_file_path(project_dir, config))

    keys = run(main, verbose=verbose)
    if json_out:
        typer.echo(dump_keys(keys))
        return
    if not keys:
        typer.echo("no API keys (add one with `ukr keys add NAME --scope read`)", err=True)
    for key in keys:
        created = dt.datetime.fromtimestamp(key.created_at, dt.UTC).strftime("%Y-%m-%d %H:%M")
        typer.echo(f"{key.name}\t{'+'.join(key.scopes)}\t{created} UTC")


@keys_app.command("remove", cls=UkrCommand)
def remove_command(
    name: NameArg,
    project: ProjectOpt = None,
    config_file: ConfigOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Remove a key: a running service refuses it from its next request."""
    from unified_kg_rag.service.keys import keys_file_path, remove_key

    async def main() -> None:
        project_dir, config = load(project, config_file, verbose=verbose)
        remove_key(keys_file_path(project_dir, config), name)

    run(main, verbose=verbose)
    typer.echo(f"Removed key {name!r}.", err=True)
