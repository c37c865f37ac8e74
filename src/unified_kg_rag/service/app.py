"""The HTTP API of one project, versioned under ``/v1`` (FastAPI; `ukr serve` runs it).

Thin over the application layer, like the CLI: every route calls `bootstrap.App` or a
function the CLI calls too. One `App` lives for the server's lifetime, so the embedding
model and the loaded concept graphs are kept between requests. The routes live one module
per concern (`meta`, `documents`, `query`, `reading`, `job_routes`, `graph`, `metrics`, the chat
protocols `openai_compat` and `ollama`, `api_docs`, the Swagger UI page at ``/docs``, and
`web`, the browser app's bundle at ``/``);
errors are typed JSON (`errors`), access is by scope (`auth`, over the key ring of `keys`).
Index, delete and reset jobs run in the background of the process (`jobs`); a shutdown
(SIGTERM) interrupts them and records it (`job_store`).

The middlewares, outermost first: the access log and request metrics (`access`), the
cross-site and DNS-rebinding guards (`origin`), CORS (only with ``service.cors_origins``),
the body and query-string limits (`limits`).

``ukr serve --workers N`` runs N processes, which import `app_from_env`: the project, the
configuration file and the store override travel in the environment variables
``UKR_SERVE_PROJECT``, ``UKR_SERVE_CONFIG`` and ``UKR_SERVE_STORES``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from unified_kg_rag import __version__
from unified_kg_rag.bootstrap import build_app, load_project_config
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.service import (
    api_docs,
    documents,
    graph,
    job_routes,
    meta,
    metrics,
    ollama,
    openai_compat,
    query,
    reading,
    web,
)
from unified_kg_rag.service.access import ACCESS_LOGGER, AccessMiddleware
from unified_kg_rag.service.errors import ERROR_RESPONSES, install_error_handlers
from unified_kg_rag.service.job_store import JobStore
from unified_kg_rag.service.jobs import JobManager
from unified_kg_rag.service.keys import KeyRing, load_key_ring
from unified_kg_rag.service.limits import LimitsMiddleware
from unified_kg_rag.service.metrics import ServiceMetrics
from unified_kg_rag.service.origin import OriginGuardMiddleware
from unified_kg_rag.util.log_format import configure_logging

__all__ = ["SERVE_ENV", "app_from_env", "create_app"]

SERVE_ENV = ("UKR_SERVE_PROJECT", "UKR_SERVE_CONFIG", "UKR_SERVE_STORES")
"""The environment variables `app_from_env` reads: project, configuration file, stores."""

logger = logging.getLogger(__name__)


def create_app(
    project_dir: Path,
    *,
    config_file: Path | None = None,
    stores: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> FastAPI:
    """Return the service of the project at ``project_dir``.

    The configuration and the API keys are read now (a bad one fails before the server
    binds); the providers are built when the server starts and closed when it stops.

    Args:
        project_dir: the project directory.
        config_file: a configuration file to read instead of ``PROJECT/ukr.yaml``.
        stores: a store backend overriding ``stores.kind``.
        environ: where the keys of ``service.api_keys_env`` are read (default: the process's
            environment; the configuration's ``UKR_`` variables are always the process's).

    Returns:
        The app; ``state`` holds ``config``, ``project_dir``, ``keys`` (the `KeyRing`),
        ``metrics`` (`ServiceMetrics`) and, while serving, ``ukr`` (the `App`).

    Raises:
        ConfigurationError: the configuration, the key file or the keys' variable is invalid.
    """
    config = load_project_config(project_dir, config_file=config_file, stores=stores)
    keys = load_key_ring(project_dir, config, environ)
    service_metrics = ServiceMetrics(config.service.metrics_refresh_s)

    @asynccontextmanager
    async def lifespan(api: FastAPI) -> AsyncIterator[None]:
        _log_start(project_dir, config, keys)
        async with build_app(config, project_dir) as app:
            api.state.ukr = app
            api.state.jobs = jobs = JobManager(app, JobStore(project_dir), service_metrics)
            await jobs.announce_interrupted()
            refresher = asyncio.create_task(service_metrics.keep_counts_fresh(app))
            try:
                yield
            finally:
                refresher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await refresher
                await jobs.aclose()

    # FastAPI's /docs and /redoc load their scripts from a CDN: `api_docs` serves /docs offline
    api = FastAPI(title="unified-kg-rag", version=__version__, lifespan=lifespan,
                  docs_url=None, redoc_url=None)
    api.state.config = config
    api.state.project_dir = project_dir
    api.state.started_at = time.time()  # the chat protocols' model timestamps
    api.state.keys = keys
    api.state.metrics = service_metrics
    install_error_handlers(api)
    for module in (meta, documents, query, reading, job_routes, graph, metrics):
        api.include_router(module.router, responses=ERROR_RESPONSES)
    for module in (openai_compat, ollama):  # errors in their protocols' own shapes
        api.include_router(module.router)
    api.include_router(api_docs.router)  # Swagger UI at /docs from local files (no key)
    api.include_router(web.router)  # the web app's bundle at / (no key: the app sends one)
    service = config.service
    api.add_middleware(LimitsMiddleware, config=service)
    if service.cors_origins:
        api.add_middleware(
            CORSMiddleware, allow_origins=service.cors_origins,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type", "Last-Event-ID"],
        )  # fmt: skip
    api.add_middleware(OriginGuardMiddleware, keys=keys, allowed_hosts=service.allowed_hosts,
                       cors_origins=service.cors_origins, state=api.state)  # fmt: skip
    api.add_middleware(AccessMiddleware, metrics=service_metrics, log=service.access_log,
                       log_questions=service.log_questions)  # fmt: skip
    return api


def app_from_env() -> FastAPI:
    """`create_app` of the project the environment names (a worker of ``--workers N``).

    Sets up the worker's logging as ``ukr serve`` does (``logging.level``,
    ``logging.format``; ``ukr --log-json serve`` passes ``UKR_LOGGING__FORMAT=json``).

    Raises:
        ConfigurationError: the configuration is invalid.
        KeyError: ``UKR_SERVE_PROJECT`` is not set.
    """
    project, config_file, stores = (os.environ.get(name) or None for name in SERVE_ENV)
    if project is None:
        raise KeyError("UKR_SERVE_PROJECT")
    api = create_app(Path(project), config_file=Path(config_file) if config_file else None,
                     stores=stores)
    # a worker process starts without the parent's handlers: the same logging as `ukr serve`
    config: UkrConfig = api.state.config
    configure_logging(getattr(logging, config.logging.level), config.logging.format)
    if config.service.access_log:
        logging.getLogger(ACCESS_LOGGER).setLevel(logging.INFO)
    return api


def _log_start(project_dir: Path, config: UkrConfig, keys: KeyRing) -> None:
    """One line on what the server admits: key names (never keys), CORS origins."""
    names = [k.name for k in keys.keys]
    logger.info("serving %s: %s; CORS %s", project_dir,
                f"{len(names)} API key(s) ({', '.join(names)})" if keys.required
                else "no API keys (every caller is admitted)",
                ", ".join(config.service.cors_origins) or "off")  # fmt: skip
