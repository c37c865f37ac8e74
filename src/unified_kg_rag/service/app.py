"""The HTTP API of one project, versioned under ``/v1`` (FastAPI; `ukr serve` runs it).

Thin over the application layer, like the CLI: every route calls `bootstrap.App` or a
function the CLI calls too. One `App` lives for the server's lifetime, so the embedding
model and the loaded concept graphs are kept between requests. The routes live one module
per concern (`meta`, `documents`, `query`, `job_routes`, `graph`, and the chat protocols
`openai_compat` and `ollama`); errors are typed JSON (`errors`),
access is by scope (`auth`). Index, delete and reset jobs run in the background of the
process (`jobs`); a shutdown (SIGTERM) interrupts them and records it (`job_store`).

``ukr serve --workers N`` runs N processes, which import `app_from_env`: the project, the
configuration file and the store override travel in the environment variables
``UKR_SERVE_PROJECT``, ``UKR_SERVE_CONFIG`` and ``UKR_SERVE_STORES``.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI

from unified_kg_rag import __version__
from unified_kg_rag.bootstrap import build_app, load_project_config
from unified_kg_rag.service import (
    documents,
    graph,
    job_routes,
    meta,
    ollama,
    openai_compat,
    query,
)
from unified_kg_rag.service.errors import install_error_handlers
from unified_kg_rag.service.job_store import JobStore
from unified_kg_rag.service.jobs import JobManager

__all__ = ["SERVE_ENV", "app_from_env", "create_app"]

SERVE_ENV = ("UKR_SERVE_PROJECT", "UKR_SERVE_CONFIG", "UKR_SERVE_STORES")
"""The environment variables `app_from_env` reads: project, configuration file, stores."""


def create_app(
    project_dir: Path, *, config_file: Path | None = None, stores: str | None = None
) -> FastAPI:
    """Return the service of the project at ``project_dir``.

    The configuration is read now (a bad one fails before the server binds); the providers
    are built when the server starts and closed when it stops.

    Raises:
        ConfigurationError: the configuration is invalid.
    """
    config = load_project_config(project_dir, config_file=config_file, stores=stores)

    @asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[None]:
        async with build_app(config, project_dir) as app:
            api.state.ukr = app
            api.state.jobs = jobs = JobManager(app, JobStore(project_dir))
            await jobs.announce_interrupted()
            try:
                yield
            finally:
                await jobs.aclose()

    api = FastAPI(title="unified-kg-rag", version=__version__, lifespan=lifespan)
    api.state.config = config
    api.state.project_dir = project_dir
    api.state.started_at = time.time()  # the chat protocols' model timestamps
    install_error_handlers(api)
    for module in (meta, documents, query, job_routes, graph, openai_compat, ollama):
        api.include_router(module.router)
    return api


def app_from_env() -> FastAPI:
    """`create_app` of the project the environment names (a worker of ``--workers N``).

    Raises:
        ConfigurationError: the configuration is invalid.
        KeyError: ``UKR_SERVE_PROJECT`` is not set.
    """
    project, config_file, stores = (os.environ.get(name) or None for name in SERVE_ENV)
    if project is None:
        raise KeyError("UKR_SERVE_PROJECT")
    return create_app(Path(project), config_file=Path(config_file) if config_file else None,
                      stores=stores)
