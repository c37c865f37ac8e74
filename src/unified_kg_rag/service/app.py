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

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.sse import format_sse_event
from pydantic import BaseModel, Field

from unified_kg_rag import __version__
from unified_kg_rag.bootstrap import App, build_app, load_project_config
from unified_kg_rag.domain.models import (
    DocRecord,
    DocStatus,
    MetadataValue,
    RAGOutput,
    SearchMode,
)
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

__all__ = [
    "DocumentInfo",
    "DocumentPage",
    "QueryRequest",
    "create_app",
    "error_status",
    "stream_events",
]

logger = logging.getLogger(__name__)


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
        stream: answer as Server-Sent Events (`stream_events`) instead of one JSON body.
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
    stream: bool = False


class DocumentInfo(BaseModel):
    """One document of an index, as ``GET /v1/documents`` lists it.

    Attributes:
        document_id: its id (``ukr delete`` takes it, or a prefix of 8 characters or more).
        path: relative to the folder it was indexed from.
        source_scope: that folder.
        status: ``processed``, ``failed``, ``quarantined``, ``pending`` or ``deleting``.
        text_units: passages it holds.
        updated_at: when its record last changed, Unix seconds.
        error: why it failed, when it did.
        failures: failed runs in a row.
    """

    document_id: str
    path: str
    source_scope: str
    status: DocStatus
    text_units: int
    updated_at: float
    error: str | None = None
    failures: int = 0

    @classmethod
    def of(cls, record: DocRecord) -> DocumentInfo:
        """The listing of a registry record."""
        return cls(
            document_id=record.document_id, path=record.path, source_scope=record.source_scope,
            status=record.status, text_units=len(record.text_unit_ids),
            updated_at=record.updated_at, error=record.error, failures=record.failure_count,
        )  # fmt: skip


class DocumentPage(BaseModel):
    """A page of ``GET /v1/documents``: ``total`` matching, from ``offset``."""

    total: int
    offset: int
    documents: list[DocumentInfo]


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

    @api.get("/v1/documents")
    async def documents(
        request: Request,
        index: str | None = None,
        status: DocStatus | None = None,
        path_prefix: str = "",
        offset: int = Query(default=0, ge=0),
        limit: int = Query(default=100, ge=1, le=1000),
    ) -> DocumentPage:
        """The documents of an index, by path: status, passages, last change, last error."""
        records = await app_of(request).index(index).registry.list_records()
        chosen = sorted(
            (r for r in records
             if (status is None or r.status is status) and r.path.startswith(path_prefix)),
            key=lambda r: (r.path, r.source_scope),
        )  # fmt: skip
        return DocumentPage(
            total=len(chosen), offset=offset,
            documents=[DocumentInfo.of(r) for r in chosen[offset : offset + limit]],
        )  # fmt: skip

    @api.post("/v1/query", response_model=RAGOutput)
    async def query(body: QueryRequest, request: Request) -> RAGOutput | StreamingResponse:
        """Answer a question with numbered sources, as ``ukr query --json`` does.

        With ``stream: true`` the reply is ``text/event-stream``: ``delta`` events with the
        answer's text as it is written, then one ``result`` event holding the `RAGOutput`.
        """
        overrides: dict[str, object] = {
            "top_k": body.top_k, "search_mode": body.mode, "deadline_s": body.deadline_s
        }
        request_in = RAGInput(
            question=body.question, strategy=body.strategy, filters=dict(body.filters),
            conversation_id=body.conversation_id, user_id=body.user_id,
            overrides={k: v for k, v in overrides.items() if v is not None},
        )  # fmt: skip
        chain = app_of(request).chain(body.index)
        if not body.stream:
            return await chain.ainvoke(request_in)
        pieces = _Pieces(chain.stream(request_in))
        first = await pieces.next()  # errors before the answer starts keep their status
        return StreamingResponse(stream_events(first, pieces), media_type="text/event-stream")

    return api


class _Pieces:
    """A chain's answer stream iterated by one task of its own.

    The chain's stream keeps context variables (usage, deadline) across its pieces, so it
    must run in one context from start to end, while the request handler reads its first
    piece and the response reads the rest: a producer task feeds a queue both read.
    """

    def __init__(self, stream: AsyncIterator[str | RAGOutput]) -> None:
        self._queue: asyncio.Queue[tuple[str | RAGOutput | None, BaseException | None]] = (
            asyncio.Queue()
        )
        self._task = asyncio.create_task(self._feed(stream))

    async def _feed(self, stream: AsyncIterator[str | RAGOutput]) -> None:
        try:
            async for piece in stream:
                await self._queue.put((piece, None))
            await self._queue.put((None, None))
        except Exception as error:  # handed to the reader, who raises it
            await self._queue.put((None, error))

    async def next(self) -> str | RAGOutput | None:
        """The next piece, None at the end; raises what the chain raised."""
        piece, error = await self._queue.get()
        if error is not None:
            raise error
        return piece

    async def aclose(self) -> None:
        """Stop the chain (a client that left)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def stream_events(first: str | RAGOutput | None, rest: _Pieces) -> AsyncIterator[bytes]:
    """Encode a streamed answer as Server-Sent Events (the HTML living standard's format).

    ``event: delta`` with ``{"text": …}`` per piece of the answer, then ``event: result``
    with the `RAGOutput` as JSON. An error after the answer started ends the stream with
    ``event: error`` (``{"type", "message"}``); a client that disconnects stops the chain.
    """
    try:
        piece = first
        while piece is not None:
            if isinstance(piece, RAGOutput):
                yield format_sse_event(event="result", data_str=piece.model_dump_json())
            else:
                yield format_sse_event(event="delta", data_str=json.dumps({"text": piece}))
            piece = await rest.next()
    except UkrError as error:
        body = {"type": type(error).__name__, "message": str(error)}
        yield format_sse_event(event="error", data_str=json.dumps(body))
    except Exception:  # not the client's doing: logged here, not described to the client
        logger.exception("a streamed answer failed")
        body = {"type": "InternalError", "message": "the answer failed; see the server log"}
        yield format_sse_event(event="error", data_str=json.dumps(body))
    finally:
        await rest.aclose()
