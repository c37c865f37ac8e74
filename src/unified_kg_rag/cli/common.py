"""What every command shares: options, project and config resolution, logging, error mapping.

Exit codes (STYLE.md §10): 0 ok, 1 unexpected, 2 configuration or usage, 3 some inputs
failed, 130 interrupted (143 when stopped by SIGTERM). Errors print one line,
``ErrorType: message``, on stderr; tracebacks only with ``--verbose``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import os
import re
import signal
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.util.errors import UkrError
from unified_kg_rag.util.log_format import LogFormat, configure_logging
from unified_kg_rag.util.text import counted

__all__ = [
    "ConfigOpt",
    "JsonOpt",
    "ProjectOpt",
    "QuietOpt",
    "StoresOpt",
    "VerboseOpt",
    "YesOpt",
    "counted",
    "err_console",
    "load",
    "log_json_asked",
    "out_console",
    "printable",
    "project_path",
    "run",
    "set_log_json",
]

T = TypeVar("T")

_LOG_JSON: contextvars.ContextVar[bool] = contextvars.ContextVar("ukr_log_json", default=False)


def set_log_json(flag: bool) -> None:
    """Record the root option ``ukr --log-json`` (the root callback sets it on every call)."""
    _LOG_JSON.set(flag)


def log_json_asked() -> bool:
    """Whether ``ukr --log-json`` was given to the command running."""
    return _LOG_JSON.get()


out_console = Console(soft_wrap=True, highlight=False, emoji=False)
err_console = Console(stderr=True, highlight=False, emoji=False)

ProjectOpt = Annotated[
    Path | None,
    typer.Option(
        "--project",
        "-C",
        envvar="UKR_PROJECT_DIR",
        help="Project directory holding ukr.yaml and the .ukr/ store. [default: current directory]",
        show_default=False,
        file_okay=False,
    ),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--config", help="Configuration file to read instead of PROJECT/ukr.yaml.", dir_okay=False
    ),
]
StoresOpt = Annotated[
    str | None,
    typer.Option(
        "--stores",
        help="Store backend for this command (`sqlite` or `postgres`), overriding "
        "`stores.kind`. [default: stores.kind]",
        show_default=False,
    ),
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout and nothing else.")
]
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
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Log at DEBUG and show tracebacks.")
]


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str, *, keep_newlines: bool = False) -> str:
    """Return ``text`` safe for a terminal.

    Control characters (ANSI escapes included) are shown as ``?``; unless ``keep_newlines``,
    newlines and tabs become spaces.
    """
    text = _CONTROL.sub("?", text)
    return text if keep_newlines else text.replace("\n", " ").replace("\t", " ")


def project_path(project: Path | None, *, create: bool = False) -> Path:
    """Return the project directory: ``--project``/``UKR_PROJECT_DIR`` or the current one.

    Args:
        project: ``--project`` (None: the current directory).
        create: the command may create the folder (``ukr index`` into a new project).

    Raises:
        UsageError: the folder given does not exist and ``create`` is false (naming
            ``UKR_PROJECT_DIR`` when the value came from it).
    """
    path = (project or Path(os.getcwd())).resolve()
    if project is not None and not create and not path.is_dir():
        from unified_kg_rag.util.errors import UsageError

        env = os.environ.get("UKR_PROJECT_DIR")
        field = "UKR_PROJECT_DIR" if env and Path(env) == project else "--project"
        reason = "not a directory" if path.exists() else "no such directory"
        raise UsageError(f"{project}: {reason}", field=field)
    return path


def load(
    project: Path | None,
    config_file: Path | None,
    *,
    verbose: bool = False,
    stores: str | None = None,
    create: bool = False,
) -> tuple[Path, UkrConfig]:
    """Resolve the project directory, load its configuration and set up the CLI's logging.

    The loading itself is `bootstrap.load_project_config`, shared with the service.

    Args:
        project: ``--project`` (None: the current directory); it must exist unless
            ``create``.
        config_file: ``--config``.
        verbose: log at DEBUG.
        stores: ``--stores``: the store backend, overriding ``stores.kind``.
        create: the command creates a missing project folder (``ukr index``).

    Raises:
        ConfigurationError: the configuration is invalid.
        UsageError: ``project`` does not exist and ``create`` is false.
    """
    from unified_kg_rag.bootstrap import load_project_config

    project_dir = project_path(project, create=create)
    config = load_project_config(project_dir, config_file=config_file, stores=stores)
    level = logging.DEBUG if verbose else getattr(logging, config.logging.level)
    _log_to_stderr(level, config.logging.format)
    return project_dir, config


def _log_to_stderr(level: int, log_format: LogFormat = "text") -> None:
    """The CLI's logging on stderr: ``LEVEL name: message`` lines, or JSON lines.

    JSON when ``logging.format`` is ``json`` or the root option ``ukr --log-json`` was given
    (`util.log_format`).
    """
    configure_logging(level, "json" if log_json_asked() else log_format, stream=sys.stderr)


def run(
    main: Callable[[], Coroutine[Any, Any, T]],
    *,
    verbose: bool = False,
    interrupted: str | Callable[[], str] = "Interrupted.",
) -> T:
    """Run a command's coroutine; map errors to one stderr line and an exit code.

    Args:
        main: the command's coroutine function.
        verbose: print tracebacks.
        interrupted: what to say on Ctrl-C (exit 130), or a function returning it when the
            command stops (to say what it kept).

    SIGTERM stops the command like Ctrl-C (exit 143 instead of 130).

    Raises:
        typer.Exit: always on failure, with the mapped exit code.
    """
    async def main_stopping_on_sigterm() -> T:
        # SIGTERM (docker stop, systemd, Kubernetes, timeout) unwinds like Ctrl-C, so leases
        # are given up and the command exits 143 after saying what was kept
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            if task is not None:
                loop.add_signal_handler(signal.SIGTERM, task.cancel)
        return await main()

    try:
        return asyncio.run(main_stopping_on_sigterm())
    except asyncio.CancelledError:
        said = interrupted() if callable(interrupted) else interrupted
        err_console.print(said.replace("Interrupted", "Terminated", 1), soft_wrap=True)
        raise typer.Exit(143) from None
    except UkrError as exc:
        if verbose:
            err_console.print_exception()
        err_console.print(f"[bold red]{type(exc).__name__}[/]: {escape(str(exc))}", soft_wrap=True)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        said = interrupted() if callable(interrupted) else interrupted
        err_console.print(said, soft_wrap=True)
        raise typer.Exit(130) from None
    except typer.Exit:
        raise
    except Exception as exc:
        if verbose:
            err_console.print_exception()
        message = " ".join(str(exc).split()) or type(exc).__name__
        err_console.print(f"[bold red]{type(exc).__name__}[/]: {escape(message)}", soft_wrap=True)
        if not verbose:
            err_console.print("(run with --verbose for the traceback)")
        raise typer.Exit(1) from None
