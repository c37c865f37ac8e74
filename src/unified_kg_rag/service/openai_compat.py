"""The OpenAI-compatible chat API: ``/v1/models`` and ``/v1/chat/completions``.

A client of OpenAI's Chat Completions (the ``openai`` SDK, Open WebUI, LibreChat) asks the
project's indexes as models (`chat_models` names them). Only protocol translation lives
here: the conversation becomes a chain request and the answer gets its footnotes in
`chat_answer`, the chain runs as ``POST /v1/query`` runs it.

Parameters: ``model``, ``messages``, ``stream`` and ``stream_options.include_usage`` are
read. Generation settings (``temperature``, ``top_p``, ``max_tokens``,
``max_completion_tokens``, ``stop``, ``seed``, penalties, ``user`` …) are accepted and
ignored: the answer settings are the server's (``query.*``), and clients send them unasked.
What would change the reply's shape is refused (400): ``n`` above 1, ``tools`` or
``functions``, a ``response_format`` other than text, ``logprobs``.

Every reply carries ``ukr``: the `RAGOutput` (sources, cited numbers, strategy, metadata),
in the last chunk when streaming. ``usage`` counts the chain's model tokens (0 without an
LLM). Errors have OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, where
``code`` is the error kind (``model_not_found``, ``MethodologyNotIndexedError`` …).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Literal

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from unified_kg_rag.domain.models import RAGOutput
from unified_kg_rag.service.access import note_question
from unified_kg_rag.service.auth import requires
from unified_kg_rag.service.chat_answer import (
    chat_input,
    finish_reason,
    footnotes,
    start_answer,
)
from unified_kg_rag.service.chat_models import resolve_model, served_models
from unified_kg_rag.service.deps import app_of
from unified_kg_rag.service.limits import check_question
from unified_kg_rag.service.metrics import metrics_of
from unified_kg_rag.service.protocol_errors import ProtocolError, protocol_route
from unified_kg_rag.service.query import CLIENT_CLOSED, ClientGoneError, relay, until_answered
from unified_kg_rag.util.errors import UsageError

__all__ = ["ChatCompletion", "ChatCompletionChunk", "ChatCompletionRequest", "ModelList", "router"]


def _render(error: ProtocolError) -> Response:
    kind = ("invalid_request_error" if error.status < 500 else "server_error")
    if error.status in (401, 403):
        kind = "authentication_error" if error.status == 401 else "permission_error"
    body = {"message": error.message, "type": kind, "param": error.field, "code": error.kind}
    return JSONResponse({"error": body}, status_code=error.status)


router = APIRouter(prefix="/v1", route_class=protocol_route(_render))


class ModelCard(BaseModel):
    """One model: an index asked with one strategy (``ukr/<index>[/<strategy>]``).

    Attributes:
        id: the model id.
        created: when the server started, Unix seconds.
        owned_by: always ``ukr``.
        index: the index (an extension field).
        strategy: the strategy that runs (an extension field).
        description: the strategy's one line (an extension field).
    """

    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "ukr"
    index: str
    strategy: str
    description: str


class ModelList(BaseModel):
    """``GET /v1/models``: OpenAI's list shape."""

    object: Literal["list"] = "list"
    data: list[ModelCard]


class ContentPart(BaseModel):
    """One part of a message's content; only ``text`` parts are read."""

    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    """One message: its role and its text (a string or a list of text parts)."""

    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[ContentPart] | None = None

    def text(self) -> str:
        """The message's text; raises `UsageError` for a part that is not text."""
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        for part in self.content:
            if part.type != "text":
                raise UsageError(f"only text content is read, not {part.type!r}",
                                 field="messages")  # fmt: skip
        return "\n".join(part.text or "" for part in self.content)


class StreamOptions(BaseModel):
    """``stream_options``; ``include_usage`` adds a usage-only chunk before ``[DONE]``."""

    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class ResponseFormat(BaseModel):
    """``response_format``: only ``text`` is served."""

    model_config = ConfigDict(extra="allow")
    type: str = "text"


class ChatCompletionRequest(BaseModel):
    """The body of ``POST /v1/chat/completions`` (unknown fields are ignored; module docstring).

    Attributes:
        model: ``ukr/<index>`` or ``ukr/<index>/<strategy>``.
        messages: the conversation, oldest first; the last user message is the question.
        stream: answer as ``chat.completion.chunk`` Server-Sent Events.
        stream_options: ``include_usage``.
        n: choices wanted; only 1.
        tools: refused when not empty.
        functions: refused when not empty.
        response_format: only ``text``.
        logprobs: refused when true.
    """

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: int = 1
    tools: list[object] | None = None
    functions: list[object] | None = None
    response_format: ResponseFormat | None = None
    logprobs: bool | None = None

    def refuse_unsupported(self) -> None:
        """Raise `UsageError` for a parameter that would change the reply's shape."""
        if self.n != 1:
            raise UsageError("only one choice is answered (n=1)", field="n")
        if self.tools or self.functions:
            raise UsageError("tools are not supported: the answer comes from the index",
                             field="tools")  # fmt: skip
        if self.response_format is not None and self.response_format.type != "text":
            raise UsageError("only text answers are served", field="response_format")
        if self.logprobs:
            raise UsageError("log probabilities are not available", field="logprobs")


class Usage(BaseModel):
    """Model tokens of the answer's chain (rewrite, routing, answer); 0 without an LLM."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int


class AssistantMessage(BaseModel):
    """The answer: its text, footnotes included."""

    role: Literal["assistant"] = "assistant"
    content: str


class Choice(BaseModel):
    """The one choice of a completion."""

    index: int = 0
    message: AssistantMessage
    finish_reason: str
    logprobs: None = None


class ChatCompletion(BaseModel):
    """A ``chat.completion``; ``ukr`` is the `RAGOutput` behind it."""

    id: str
    object: Literal["chat.completion"] = "chat.completion"
    created: int
    model: str
    choices: list[Choice]
    usage: Usage
    ukr: RAGOutput


class Delta(BaseModel):
    """A piece of the answer (``role`` in the first chunk only)."""

    role: Literal["assistant"] | None = None
    content: str | None = None


class ChunkChoice(BaseModel):
    """The one choice of a chunk."""

    index: int = 0
    delta: Delta
    finish_reason: str | None = None
    logprobs: None = None


class ChatCompletionChunk(BaseModel):
    """A ``chat.completion.chunk``; the last one with a ``finish_reason`` carries ``ukr``."""

    id: str
    object: Literal["chat.completion.chunk"] = "chat.completion.chunk"
    created: int
    model: str
    choices: list[ChunkChoice]
    usage: Usage | None = None
    ukr: RAGOutput | None = None


@router.get("/models", dependencies=[Depends(requires("read"))])
async def list_models(request: Request) -> ModelList:
    """Every model offered: per index, ``ukr/<index>`` then ``ukr/<index>/<strategy>``."""
    created = _started(request)
    refs = await served_models(app_of(request))
    return ModelList(data=[ModelCard(id=r.openai_id, created=created, index=r.index,
                                     strategy=r.resolved, description=r.description)
                           for r in refs])  # fmt: skip


@router.get("/models/{model_id:path}", dependencies=[Depends(requires("read"))])
async def get_model(model_id: str, request: Request) -> ModelCard:
    """One model; 404 (``model_not_found``) when it is not offered."""
    ref = await resolve_model(app_of(request), model_id)
    return ModelCard(id=ref.openai_id, created=_started(request), index=ref.index,
                     strategy=ref.resolved, description=ref.description)  # fmt: skip


@router.post("/chat/completions", response_model=None,
             dependencies=[Depends(requires("read"))])  # fmt: skip
async def chat_completions(
    body: ChatCompletionRequest, request: Request
) -> ChatCompletion | Response:
    """Answer the conversation's last user message from the model's index.

    \f
    Raises:
        UnknownModelError: 404. UsageError: an unsupported parameter or no question, 400.
        The chain's errors before the answer starts, with their status.
    """  # noqa: D301 (\f ends the OpenAPI description)
    body.refuse_unsupported()
    app = app_of(request)
    ref = await resolve_model(app, body.model)
    inp = chat_input(ref, [(m.role, m.text()) for m in body.messages])
    check_question(request, inp.question, "messages")
    note_question(request, inp.question)
    observe = metrics_of(request).observe_query
    reply_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    if body.stream:
        try:
            first, pieces = await start_answer(app, ref, inp, request)
        except ClientGoneError:
            return Response(status_code=CLIENT_CLOSED)
        include_usage = body.stream_options is not None and body.stream_options.include_usage
        chunks = _Chunks(reply_id, created, body.model, include_usage=include_usage)
        return StreamingResponse(relay(first, pieces, chunks.encode, chunks.fail,
                                       on_result=observe),
                                 media_type="text/event-stream")  # fmt: skip
    try:
        out = await until_answered(request, app.chain(ref.index).ainvoke(inp))
    except ClientGoneError:
        return Response(status_code=CLIENT_CLOSED)
    observe(out)
    return ChatCompletion(
        id=reply_id, created=created, model=body.model, usage=_usage(out), ukr=out,
        choices=[Choice(message=AssistantMessage(content=out.answer + footnotes(out)),
                        finish_reason=finish_reason(out))],
    )  # fmt: skip


class _Chunks:
    """Frames a streamed answer as ``chat.completion.chunk`` events, then ``[DONE]``."""

    def __init__(self, reply_id: str, created: int, model: str, *, include_usage: bool) -> None:
        self._id, self._created, self._model = reply_id, created, model
        self._include_usage = include_usage
        self._started = False

    def encode(self, piece: str | RAGOutput) -> bytes:
        if isinstance(piece, str):
            role: Literal["assistant"] | None = None if self._started else "assistant"
            self._started = True
            return self._event(self._chunk(Delta(role=role, content=piece)))
        out = b""
        notes = footnotes(piece)
        if notes:
            out += self._event(self._chunk(Delta(content=notes)))
        usage = _usage(piece)
        out += self._event(self._chunk(Delta(), finish=finish_reason(piece), usage=usage,
                                       ukr=piece))  # fmt: skip
        if self._include_usage:
            out += self._event(ChatCompletionChunk(id=self._id, created=self._created,
                                                   model=self._model, choices=[], usage=usage))
        return out + b"data: [DONE]\n\n"

    def fail(self, kind: str, message: str) -> bytes:
        body = {"message": message, "type": "server_error", "param": None, "code": kind}
        return f"data: {json.dumps({'error': body})}\n\n".encode()

    def _chunk(self, delta: Delta, *, finish: str | None = None, usage: Usage | None = None,
               ukr: RAGOutput | None = None) -> ChatCompletionChunk:  # fmt: skip
        choice = ChunkChoice(delta=delta, finish_reason=finish)
        return ChatCompletionChunk(id=self._id, created=self._created, model=self._model,
                                   choices=[choice], usage=usage, ukr=ukr)  # fmt: skip

    @staticmethod
    def _event(chunk: ChatCompletionChunk) -> bytes:
        return f"data: {chunk.model_dump_json()}\n\n".encode()


def _usage(output: RAGOutput) -> Usage:
    spent = output.usage
    return Usage(prompt_tokens=spent.input_tokens, completion_tokens=spent.output_tokens,
                 total_tokens=spent.input_tokens + spent.output_tokens)  # fmt: skip


def _started(request: Request) -> int:
    """When the server started, Unix seconds (the models' ``created``)."""
    return int(getattr(request.app.state, "started_at", 0))
