"""``POST /v1/query``: answer a question, as one JSON body or as Server-Sent Events."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Annotated, Any, Literal, TypeVar

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response, StreamingResponse
from fastapi.sse import format_sse_event
from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

from unified_kg_rag.domain.models import MetadataValue, RAGOutput, SearchMode
from unified_kg_rag.retrieval.chain import PriorTurn, RAGInput
from unified_kg_rag.retrieval.pipeline_strategy import PipelineStrategy, choose_pipeline
from unified_kg_rag.service.access import note_question
from unified_kg_rag.service.auth import requires
from unified_kg_rag.service.deps import app_of
from unified_kg_rag.service.errors import ServiceError
from unified_kg_rag.service.limits import check_question
from unified_kg_rag.service.metrics import metrics_of
from unified_kg_rag.util.errors import ConfigurationError, UkrError

__all__ = ["CLIENT_CLOSED", "ClientGoneError", "Pieces", "PipelineDefinition", "QueryRequest",
           "relay", "router", "stream_events", "until_answered"]

logger = logging.getLogger(__name__)

router = APIRouter(prefix="/v1")


class PipelineDefinition(BaseModel):
    """An inline staged-pipeline definition: the shape of a ``--pipeline FILE.yaml``.

    Attributes:
        stages: the stages in order, each ``{"stage": NAME, PARAMETER: VALUE ...}``.
        scorer: ``{"kind": "weighted", "weights": {SIGNAL: WEIGHT ...}}`` (default: the
            semantic signal alone).
        stage_timeout_s: the longest one stage may run, seconds.
    """

    model_config = ConfigDict(extra="forbid")

    stages: list[dict[str, Any]] = Field(min_length=1)
    scorer: dict[str, Any] | None = None
    stage_timeout_s: float | None = Field(default=None, gt=0)


def _pipeline_kind(value: object) -> str:
    """Which branch a ``pipeline`` value is validated as (so a 422 names the right one)."""
    return "preset" if isinstance(value, str) else "definition"


PipelineChoice = Annotated[
    Annotated[str, Tag("preset")] | Annotated[PipelineDefinition, Tag("definition")],
    Discriminator(_pipeline_kind),
]
"""A preset name, or an inline definition; errors name ``pipeline.definition.<field>``."""


class QueryRequest(BaseModel):
    """The body of ``POST /v1/query``: what ``ukr query`` takes as arguments and options.

    Attributes:
        question: the question (at most ``service.max_question_chars`` characters, else 422
            ``QuestionTooLong``).
        index: the index to ask (default: ``query.index``).
        strategy: the strategy (default: ``query.strategy``).
        pipeline: retrieve with a staged pipeline instead of a strategy (not with
            ``strategy``): a preset name (``standard``, ``minimal``, ``no_rerank``) or an
            inline definition. Never a file path: the server reads no file a client names.
        filters: equality filters on text-unit fields; a list means "any of these".
        top_k: sources per type (``query.top_k``).
        mode: ``hybrid``, ``lexical`` or ``vector`` (``query.search_mode``).
        deadline_s: longest the whole query may take, seconds.
        max_context_tokens: the context budget, tokens (``query.max_context_tokens``).
        answer_style: ``auto``, ``concise`` or ``comprehensive`` (``query.answer_style``).
        conversation_id: keeps the turns of one conversation (stored on the server).
        history: the conversation's earlier turns, oldest first, when the caller keeps them
            (the web app): a follow-up is rewritten from them into a standalone question
            (``metadata.standalone_question``) and nothing is stored. Not with
            ``conversation_id``.
        user_id: whose conversation it is.
        stream: answer as Server-Sent Events (`stream_events`) instead of one JSON body.
    """

    question: str
    index: str | None = None
    strategy: str | None = None
    pipeline: PipelineChoice | None = None
    filters: dict[str, MetadataValue | list[MetadataValue]] = Field(default_factory=dict)
    top_k: int | None = Field(default=None, ge=1)
    mode: SearchMode | None = None
    deadline_s: float | None = Field(default=None, gt=0)
    max_context_tokens: int | None = Field(default=None, ge=1)
    answer_style: Literal["auto", "concise", "comprehensive"] | None = None
    conversation_id: str | None = None
    history: list[PriorTurn] = Field(default_factory=list, max_length=100)
    user_id: str = "default"
    stream: bool = False


@router.post("/query", response_model=RAGOutput, dependencies=[Depends(requires("read"))])
async def query(body: QueryRequest, request: Request) -> RAGOutput | Response:
    """Answer a question with numbered sources, as ``ukr query --json`` does.

    With ``stream: true`` the reply is ``text/event-stream``: ``delta`` events with the
    answer's text as it is written, then one ``result`` event holding the `RAGOutput`.

    \f
    Raises:
        ServiceError: 422 ``QuestionTooLong`` (``service.max_question_chars``), 422
            ``InvalidPipeline`` (``pipeline``: with ``strategy``, an unknown preset, stage,
            scorer or parameter, or a stage needing what the index lacks; field named).
    """  # noqa: D301 (\f ends the OpenAPI description)
    check_question(request, body.question)
    note_question(request, body.question)
    overrides: dict[str, object] = {
        "top_k": body.top_k, "search_mode": body.mode, "deadline_s": body.deadline_s,
        "max_context_tokens": body.max_context_tokens, "answer_style": body.answer_style,
    }
    request_in = RAGInput(
        question=body.question, strategy=body.strategy, filters=dict(body.filters),
        conversation_id=body.conversation_id, user_id=body.user_id, history=body.history,
        overrides={k: v for k, v in overrides.items() if v is not None},
    )  # fmt: skip
    chain = app_of(request).chain(body.index, pipeline=await _pipeline_step(request, body))
    observe = metrics_of(request).observe_query
    if not body.stream:
        try:
            output = await until_answered(request, chain.ainvoke(request_in))
        except ClientGoneError:
            return Response(status_code=CLIENT_CLOSED)
        observe(output)
        return output
    pieces = Pieces(chain.stream(request_in))
    try:  # errors before the answer starts keep their status
        first = await pieces.first(request)
    except ClientGoneError:  # Stop in the web UI, a client's timeout: the chain is stopped
        return Response(status_code=CLIENT_CLOSED)
    return StreamingResponse(stream_events(first, pieces, on_result=observe),
                             media_type="text/event-stream")  # fmt: skip


async def _pipeline_step(request: Request, body: QueryRequest) -> PipelineStrategy | None:
    """The pipeline ``body`` asks for, or None; every bad definition is a 422 naming its field.

    Raises:
        ServiceError: 422 ``InvalidPipeline``.
    """
    if body.pipeline is None:
        return None
    if body.strategy is not None:
        raise ServiceError(422, "InvalidPipeline", "give either strategy or pipeline, not "
                           "both: the pipeline is the whole retrieval step", field="pipeline")
    app = app_of(request)
    choice = body.pipeline if isinstance(body.pipeline, str) else (
        body.pipeline.model_dump(exclude_none=True))  # fmt: skip
    try:
        return choose_pipeline(choice, await app.pipeline_components(body.index),
                               field="pipeline", files=False)  # fmt: skip
    except ConfigurationError as exc:  # a preset's own fields are not the request's
        inline = not isinstance(body.pipeline, str) and exc.field
        raise ServiceError(422, "InvalidPipeline", str(exc),
                           field=exc.field if inline else "pipeline") from None  # fmt: skip


T = TypeVar("T")

CLIENT_CLOSED = 499
"""The status logged for a query whose client left before its answer started (nginx's)."""


class ClientGoneError(Exception):
    """The client disconnected before the answer's first piece."""


async def until_answered(
    request: Request, answer: Coroutine[Any, Any, T], poll_s: float = 0.25
) -> T:
    """Await ``answer`` (a chain's whole answer) while watching the client.

    Raises:
        ClientGoneError: the client disconnected first; ``answer`` is cancelled.
        Exception: what ``answer`` raised.
    """
    task = asyncio.ensure_future(answer)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=poll_s)
            if done:
                return task.result()
            if await request.is_disconnected():
                raise ClientGoneError
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


class Pieces:
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

    async def first(self, request: Request, poll_s: float = 0.25) -> str | RAGOutput | None:
        """The first piece, watching the client meanwhile.

        The response has not started yet, so nothing else notices the client leave (a
        model's answer held back, a slow retrieval).

        Raises:
            ClientGoneError: the client disconnected first; the chain is stopped.
            Exception: what the chain raised before its first piece.
        """
        try:
            return await until_answered(request, self.next(), poll_s)
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """Stop the chain (a client that left)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


def stream_events(
    first: str | RAGOutput | None,
    rest: Pieces,
    *,
    on_result: Callable[[RAGOutput], None] | None = None,
) -> AsyncIterator[bytes]:
    """Encode a streamed answer as Server-Sent Events (the HTML living standard's format).

    ``event: delta`` with ``{"text": …}`` per piece of the answer, then ``event: result``
    with the `RAGOutput` as JSON (also handed to ``on_result``, e.g. the query metrics). An
    error after the answer started ends the stream with ``event: error`` (``{"type",
    "message"}``); a client that disconnects stops the chain.
    """
    return relay(first, rest, _sse_piece, _sse_error, on_result=on_result)


def _sse_piece(piece: str | RAGOutput) -> bytes:
    if isinstance(piece, RAGOutput):
        return format_sse_event(event="result", data_str=piece.model_dump_json())
    return format_sse_event(event="delta", data_str=json.dumps({"text": piece}))


def _sse_error(kind: str, message: str) -> bytes:
    return format_sse_event(event="error", data_str=json.dumps({"type": kind, "message": message}))


async def relay(
    first: str | RAGOutput | None,
    rest: Pieces,
    encode: Callable[[str | RAGOutput], bytes],
    fail: Callable[[str, str], bytes],
    *,
    on_result: Callable[[RAGOutput], None] | None = None,
) -> AsyncIterator[bytes]:
    """Frame a streamed answer in any protocol: SSE here, the chat protocols' own formats.

    Args:
        first: the piece the handler already read (errors before it kept their status).
        rest: the pieces after it.
        encode: frames one piece: a piece of the answer's text, or the final `RAGOutput`.
        fail: frames an error raised after the answer started, from its kind (the error
            class's name, ``InternalError`` for a bug) and its one-line message; the stream
            ends after it.
        on_result: called with the final `RAGOutput` before it is framed (query metrics).

    A bug is logged here and described to the client only as "see the server log"; a client
    that disconnects stops the chain.
    """
    try:
        piece = first
        while piece is not None:
            if isinstance(piece, RAGOutput) and on_result is not None:
                on_result(piece)
            yield encode(piece)
            piece = await rest.next()
    except UkrError as error:
        yield fail(type(error).__name__, str(error))
    except Exception:  # not the client's doing: logged here, not described to the client
        logger.exception("a streamed answer failed")
        yield fail("InternalError", "the answer failed; see the server log")
    finally:
        await rest.aclose()
