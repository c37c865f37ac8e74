"""``ukr serve``: the project's HTTP API (`service.app`) on a local port."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Annotated, Any

import typer

from unified_kg_rag.cli.common import (
    ConfigOpt,
    ProjectOpt,
    StoresOpt,
    VerboseOpt,
    load,
    log_json_asked,
    run,
)
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.util.errors import UsageError

if TYPE_CHECKING:  # the web framework loads when the command runs
    from fastapi import FastAPI

__all__ = ["serve_command"]

logger = logging.getLogger(__name__)


def serve_command(
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to bind.")] = 8420,
    insecure: Annotated[
        bool,
        typer.Option("--insecure", help="Bind an address other than loopback although the "
                     "service has no API keys (`ukr keys add`, or service.api_keys_env): "
                     "anyone who reaches it can read and change the index."),
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
    """Serve the project over HTTP: queries, documents, jobs, graph, chat APIs, metrics.

    The /v1 API (queries, uploads, index and delete jobs, the graph), the OpenAI- and
    Ollama-compatible chat APIs (/v1/chat/completions, /api/chat); OpenAPI at /docs,
    Prometheus metrics at /metrics. Binds 127.0.0.1:8420 by default; any other address
    needs API keys (`ukr keys add`) or --insecure. One access-log line per request on stderr
    (service.access_log). Stops gracefully on Ctrl-C or SIGTERM: a running job is stopped
    like Ctrl-C stops `ukr index` (what it stored is kept) and recorded `interrupted`; the
    next start says how to resume it (POST /v1/jobs/ID/resume).
    """
    from unified_kg_rag.service.origin import is_loopback_host

    async def build() -> FastAPI:
        from unified_kg_rag.service.app import create_app

        project_dir, _ = load(project, config_file, verbose=verbose, stores=stores)
        api = create_app(project_dir, config_file=config_file, stores=stores)
        if not is_loopback_host(host) and not api.state.keys.required:
            if not insecure:
                raise UsageError(f"{host} is not a loopback address and the service has no "
                                 "API keys; add one with `ukr keys add NAME --scope read`, "
                                 "bind 127.0.0.1, or pass --insecure", field="--host")  # fmt: skip
            logger.warning("INSECURE: serving %s without API keys: anyone who can reach it "
                           "can read the index and change it", host)  # fmt: skip
        if insecure and not is_loopback_host(host):  # it answers anyone: no Host check
            api.state.any_host = True
        _check_port_free(host, port)
        return api

    api = run(build, verbose=verbose)
    keys = api.state.keys
    typer.echo(f"serving {api.state.project_dir} on http://{host}:{port} (API keys: "
               f"{len(keys.keys) if keys.required else 'none'}; OpenAPI at /docs)", err=True)
    import uvicorn

    from unified_kg_rag.service.access import ACCESS_LOGGER

    if api.state.config.service.access_log:  # INFO lines, whatever logging.level says
        logging.getLogger(ACCESS_LOGGER).setLevel(logging.INFO)

    # the service writes its own access log (service.access_log); uvicorn's would repeat it
    options: dict[str, Any] = {"host": host, "port": port, "timeout_graceful_shutdown": 5,
                               "log_level": "debug" if verbose else "info",
                               "access_log": False}
    if _json_logs(api.state.config):  # uvicorn's records go through the JSON handler too
        options["log_config"] = None
        os.environ["UKR_LOGGING__FORMAT"] = "json"  # for the workers of --workers N
    if workers == 1:
        uvicorn.run(api, **options)
        return
    from unified_kg_rag.service.app import SERVE_ENV

    # each worker process builds its own app from the environment (uvicorn needs an import
    # string to start workers)
    state = api.state
    values = (str(state.project_dir), str(config_file or ""), stores or "")
    os.environ.update(dict(zip(SERVE_ENV, values, strict=True)))
    if getattr(state, "any_host", False):  # the workers build their apps from the environment
        os.environ["UKR_SERVICE__ALLOWED_HOSTS"] = '["*"]'

    uvicorn.run("unified_kg_rag.service.app:app_from_env", factory=True, workers=workers,
                **options)


def _json_logs(config: UkrConfig) -> bool:
    """Whether the logs are JSON lines (``logging.format: json`` or ``ukr --log-json``)."""
    return log_json_asked() or config.logging.format == "json"


def _check_port_free(host: str, port: int) -> None:
    """Refuse at once a ``host:port`` that cannot be bound (in use, not an address here).

    uvicorn would log the error and exit 3, the exit code of failed documents.

    Raises:
        UsageError: the address cannot be bound (exit 2).
    """
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        family, kind, proto, _, address = infos[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as error:
        raise UsageError(f"cannot listen on {host}:{port}: {error.strerror or error}",
                         field="--port") from error

