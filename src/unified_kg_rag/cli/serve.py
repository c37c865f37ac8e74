"""``ukr serve``: the project's HTTP API (`service.app`) on a local port."""

from __future__ import annotations

import ipaddress
import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from unified_kg_rag.cli.common import ConfigOpt, ProjectOpt, StoresOpt, VerboseOpt, load, run
from unified_kg_rag.util.errors import UsageError

if TYPE_CHECKING:  # the web framework loads when the command runs
    from fastapi import FastAPI

__all__ = ["serve_command"]


def serve_command(
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to bind.")] = 8420,
    insecure: Annotated[
        bool,
        typer.Option("--insecure", help="Bind an address other than loopback although the "
                     "service has no API keys yet: anyone who reaches it can read the index."),
    ] = False,
    workers: Annotated[
        int,
        typer.Option("--workers", min=1, max=64,
                     help="Server processes (uvicorn workers). Every worker sees and can "
                     "cancel every job (their records are in the project); one job writes an "
                     "index at a time across them (the index's lease)."),
    ] = 1,
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Serve the project's HTTP API under /v1: queries, documents, index and delete jobs.

    OpenAPI at /docs. Binds 127.0.0.1:8420 by default; any other address needs --insecure
    until API keys exist. Stops gracefully on Ctrl-C or SIGTERM: a running job is stopped
    like Ctrl-C stops `ukr index` (what it stored is kept) and recorded `interrupted`; the
    next start says how to resume it (POST /v1/jobs/ID/resume).
    """

    async def build() -> FastAPI:
        if not insecure and not _loopback(host):
            raise UsageError(f"{host} is not a loopback address and the service has no API "
                             "keys yet; bind 127.0.0.1 or pass --insecure", field="--host")
        from unified_kg_rag.service.app import create_app

        project_dir, _ = load(project, config_file, verbose=verbose, stores=stores)
        return create_app(project_dir, config_file=config_file, stores=stores)

    api = run(build, verbose=verbose)
    import uvicorn

    options: dict[str, Any] = {"host": host, "port": port, "timeout_graceful_shutdown": 5,
                               "log_level": "debug" if verbose else "info"}
    if workers == 1:
        uvicorn.run(api, **options)
        return
    from unified_kg_rag.service.app import SERVE_ENV

    # each worker process builds its own app from the environment (uvicorn needs an import
    # string to start workers)
    state = api.state
    values = (str(state.project_dir), str(config_file or ""), stores or "")
    os.environ.update(dict(zip(SERVE_ENV, values, strict=True)))
    uvicorn.run("unified_kg_rag.service.app:app_from_env", factory=True, workers=workers,
                **options)


def _loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
