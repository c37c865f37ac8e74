"""``ukr serve``: the project's HTTP API (`service.app`) on a local port."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING, Annotated

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
    project: ProjectOpt = None,
    stores: StoresOpt = None,
    config_file: ConfigOpt = None,
    verbose: VerboseOpt = False,
) -> None:
    """Serve the project's HTTP API: health, version, indexes, status and query under /v1.

    OpenAPI at /docs. Binds 127.0.0.1:8420 by default; any other address needs --insecure
    until API keys exist. Stops gracefully on Ctrl-C or SIGTERM.
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

    uvicorn.run(api, host=host, port=port, log_level="debug" if verbose else "info")


def _loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
