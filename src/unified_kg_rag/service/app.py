"""The HTTP API of one project, versioned under ``/v1`` (FastAPI; `ukr serve` runs it).

Thin over the application layer, like the CLI: every route calls `bootstrap.App`
(`App.chain`, `App.status`) or a function the CLI calls too (`retrieval.catalog`). One `App`
lives for the server's lifetime, so the embedding model and the loaded concept graphs are
kept between requests.

Errors are JSON, ``{"error": {"type", "message", "field"}}``, with the status of their kind:
a usage or configuration error 400, a strategy the index does not serve or a build holding
the index 409, a store failure 503, a model failure 502, anything else 500. Nothing in an
error names a key or a secret (the messages are the CLI's one-line messages).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from unified_kg_rag import __version__
from unified_kg_rag.bootstrap import App, build_app, load_project_config
from unified_kg_rag.domain.models import MetadataValue, RAGOutput, SearchMode
from unified_kg_rag.ingestion.status import StatusReport
from unified_kg_rag.retrieval.catalog import StrategyCatalog, strategy_catalog
from unified_kg_rag.retrieval.chain import RAGInput
from unified_kg_rag.util.errors import (
    BuildInProgress,
    MethodologyNotIndexedError,
    ModelError,
    StoreError,
    UkrError,
)

__all__ = ["QueryRequest", "create_app", "error_status"]


class QueryRequest(BaseModel):
    """The body of ``POST /v1/query``: what ``ukr query`` takes as arguments and options.

    Attributes:
        question: the question.
        index: the index to ask (default: ``query.index``).
        strategy: the strategy (default: ``query.strategy``).
        filters: equality filters on text-unit fields; a list means "any of these".
        top_k: sources per type (``query.top_k``).
        mode: ``hybrid``, ``lexical`` or ``vector`` (``query.search_mode``).
        deadline_s: longest the whole query may take, seconds.
        conversation_id: keeps the turns of one conversation.
        user_id: whose conversation it is.
    """

    question: str = Field(max_length=20_000)
    index: str | None = None
    strategy: str | None = None
    filters: dict[str, MetadataValue | list[MetadataValue]] = Field(default_factory=dict)
    top_k: int | None = Field(default=None, ge=1)
    mode: SearchMode | None = None
    deadline_s: float | None = Field(default=None, gt=0)
    conversation_id: str | None = None
    user_id: str = "default"


def error_status(error: UkrError) -> int:
    """Return the HTTP status of an error kind (module docstring)."""
    if isinstance(error, MethodologyNotIndexedError | BuildInProgress):
        return 409
    if isinstance(error, StoreError):
        return 503
    if isinstance(error, ModelError):
        return 502
    return 400 if error.exit_code == 2 else 500


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
            yield

    api = FastAPI(title="unified-kg-rag", version=__version__, lifespan=lifespan)

    @api.exception_handler(UkrError)
    async def ukr_error(_: Request, error: UkrError) -> JSONResponse:
        body: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
        field = getattr(error, "field", None)
        if field:
            body["field"] = field
        return JSONResponse({"error": body}, status_code=error_status(error))

    def app_of(request: Request) -> App:
        app: App = request.app.state.ukr
        return app

    @api.get("/v1/health")
    async def health() -> dict[str, str]:
        """The server is up."""
        return {"status": "ok"}

    @api.get("/v1/version")
    async def version() -> dict[str, str]:
        """The package version."""
        return {"name": "unified-kg-rag", "version": __version__}

    @api.get("/v1/indexes")
    async def indexes(request: Request) -> list[StrategyCatalog]:
        """Every index: its methodologies, text units and the strategies it serves."""
        app = app_of(request)
        return [await strategy_catalog(app.index(name))
                for name in await app.backend.list_indexes()]  # fmt: skip

    @api.get("/v1/status")
    async def status(request: Request) -> StatusReport:
        """What ``ukr status --json`` prints: documents by status, counts, drift."""
        return await app_of(request).status()

    @api.post("/v1/query")
    async def query(body: QueryRequest, request: Request) -> RAGOutput:
        """Answer a question with numbered sources, as ``ukr query --json`` does."""
        overrides: dict[str, object] = {
            "top_k": body.top_k, "search_mode": body.mode, "deadline_s": body.deadline_s
        }
        request_in = RAGInput(
            question=body.question, strategy=body.strategy, filters=dict(body.filters),
            conversation_id=body.conversation_id, user_id=body.user_id,
            overrides={k: v for k, v in overrides.items() if v is not None},
        )  # fmt: skip
        return await app_of(request).chain(body.index).ainvoke(request_in)

    return api
