"""The ``ukr`` command-line application: one Typer app, one module per command."""

from __future__ import annotations

from typing import NoReturn

import typer

from unified_kg_rag import __version__
from unified_kg_rag.cli.common import set_log_json
from unified_kg_rag.cli.config_show import config_app
from unified_kg_rag.cli.delete import delete_command
from unified_kg_rag.cli.evaluate import eval_app
from unified_kg_rag.cli.graph import graph_app
from unified_kg_rag.cli.help_format import UkrCommand, UkrGroup
from unified_kg_rag.cli.index import index_command
from unified_kg_rag.cli.init import init_command
from unified_kg_rag.cli.keys import keys_app
from unified_kg_rag.cli.mcp import mcp_command
from unified_kg_rag.cli.prompt_tune import prompt_tune_command
from unified_kg_rag.cli.prompts import prompts_app
from unified_kg_rag.cli.query import query_command, strategies_epilog
from unified_kg_rag.cli.serve import serve_command
from unified_kg_rag.cli.status import status_command
from unified_kg_rag.cli.strategies import strategies_command

__all__ = ["app", "main"]

app = typer.Typer(
    name="ukr",
    help="unified-kg-rag: index documents into hybrid (BM25 + vector) search indexes and "
    "answer questions over them with numbered sources. Offline by default.",
    rich_markup_mode="markdown",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=UkrGroup,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"ukr {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    log_json: bool = typer.Option(
        False, "--log-json", help="Write log records to stderr as JSON lines (time, level, "
        "logger, message, query or run id ...), whatever `logging.format` says."
    ),
) -> None:
    """unified-kg-rag command line."""
    set_log_json(log_json)


app.command("init", cls=UkrCommand)(init_command)
app.command("index", cls=UkrCommand)(index_command)
app.command("delete", cls=UkrCommand)(delete_command)
app.command("query", cls=UkrCommand, epilog=strategies_epilog())(query_command)
app.command("strategies", cls=UkrCommand)(strategies_command)
app.command("status", cls=UkrCommand)(status_command)
app.command("serve", cls=UkrCommand)(serve_command)
app.command("mcp", cls=UkrCommand)(mcp_command)
app.command("prompt-tune", cls=UkrCommand)(prompt_tune_command)
app.add_typer(config_app, name="config")
app.add_typer(eval_app, name="eval")
app.add_typer(graph_app, name="graph")
app.add_typer(keys_app, name="keys")
app.add_typer(prompts_app, name="prompts")


def main() -> None:
    """Console-script entry point.

    A usage error (an unknown option or command, a value out of range) prints one line,
    ``UsageError: …`` with the command's ``--help`` hint, and exits 2, like every other
    error (the default is a framed block after the usage text).
    """
    from typer.exceptions import TyperException

    try:
        code = app(standalone_mode=False)
    except typer.Abort:
        _fail("Interrupted.", 130)
    except TyperException as exc:  # click's usage errors, as typer ships them
        ctx = getattr(exc, "ctx", None)
        where = getattr(ctx, "command_path", "") or "ukr"
        message = " ".join(str(getattr(exc, "format_message", exc.__str__)()).split())
        code = int(getattr(exc, "exit_code", 2))
        if not message:  # `ukr` alone: the help was the answer
            raise SystemExit(code) from None
        _fail(f"UsageError: {message} (see '{where} --help')", code)
    raise SystemExit(code if isinstance(code, int) else 0)


def _fail(line: str, code: int) -> NoReturn:
    typer.echo(line, err=True)
    raise SystemExit(code)
