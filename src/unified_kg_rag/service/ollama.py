"""The Ollama-compatible API: ``/api/`` ``version``, ``tags``, ``show``, ``chat``, ``generate``.

For clients that speak to an Ollama server (the ``ollama`` Python client, Open WebUI's
Ollama connection): the project's indexes are the models, named ``ukr-<index>:<strategy>``
and ``ukr-<index>:latest`` (`chat_models`). As in LightRAG's server, only the protocol is
Ollama's: the answer comes from the index, with footnotes naming its sources (`chat_answer`).

``stream`` defaults to true, as in Ollama: newline-delimited JSON, one object per piece of
the answer (``done: false``), then a final object with ``done: true``, ``done_reason``, the
durations (nanoseconds) and token counts, and ``ukr`` (the `RAGOutput`). ``options``,
``keep_alive``, ``think``, ``context``, ``raw`` and ``system`` are accepted and ignored;
``tools``, ``format`` and ``images`` are refused (400). A chat without messages, or a
generate without a prompt, only "loads" the model (``done_reason: load``), as Ollama does.
Errors are Ollama's ``{"error": "message"}``. Bodies are read as JSON whatever their
Content-Type, as Ollama reads them.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import TypeVar

from fastapi import APIRouter, Depends, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from unified_kg_rag.domain.models import RAGOutput
from unified_kg_rag.retrieval.chain import RAGInput
from unified_kg_rag.service.access import note_question
from unified_kg_rag.service.auth import requires
from unified_kg_rag.service.chat_answer import chat_input, finish_reason, footnotes, start_answer
from unified_kg_rag.service.chat_models import ChatModelRef, resolve_model, served_models
from unified_kg_rag.service.deps import app_of
from unified_kg_rag.service.limits import check_question
from unified_kg_rag.service.metrics import metrics_of
from unified_kg_rag.service.protocol_errors import ProtocolError, protocol_route
from unified_kg_rag.service.query import CLIENT_CLOSED, ClientGoneError, relay, until_answered
from unified_kg_rag.util.errors import UsageError

__all__ = ["OLLAMA_API_VERSION", "router"]

OLLAMA_API_VERSION = "0.9.0"
"""The Ollama server version whose API these routes follow (``GET /api/version``)."""

NDJSON = "application/x-ndjson"

_Body = TypeVar("_Body", bound=BaseModel)


def _render(error: ProtocolError) -> Response:
    return JSONResponse({"error": error.message}, status_code=error.status)


router = APIRouter(prefix="/api", route_class=protocol_route(_render))


class ModelDetails(BaseModel):
    """Ollama's ``details`` of a model; ``family`` is ``ukr``."""

    parent_model: str = ""
    format: str = "ukr"
    family: str = "ukr"
    families: list[str] = Field(default_factory=lambda: ["ukr"])
    parameter_size: str = ""
    quantization_level: str = ""


class TagModel(BaseModel):
    """One entry of ``GET /api/tags``; ``size`` is 0 (nothing to download)."""

    name: str
    model: str
    modified_at: str
    size: int = 0
    digest: str
    details: ModelDetails = Field(default_factory=ModelDetails)


class Tags(BaseModel):
    """``GET /api/tags``."""

    models: list[TagModel]


class ShowRequest(BaseModel):
    """``POST /api/show``: ``model`` (``name`` in older clients)."""

    model_config = ConfigDict(extra="allow")
    model: str | None = None
    name: str | None = None


class ShowReply(BaseModel):
    """``POST /api/show``: the model's index and strategy in ``model_info``."""

    modelfile: str = ""
    parameters: str = ""
    template: str = ""
    details: ModelDetails = Field(default_factory=ModelDetails)
    model_info: dict[str, str]
    capabilities: list[str] = Field(default_factory=lambda: ["completion"])
    modified_at: str


class OllamaMessage(BaseModel):
    """One chat message; ``images`` are refused."""

    model_config = ConfigDict(extra="allow")
    role: str
    content: str = ""
    images: list[str] | None = None


class _Request(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: str
    stream: bool = True
    format: object | None = None
    tools: list[object] | None = None

    def refuse_unsupported(self) -> None:
        """Raise `UsageError` for ``tools`` or ``format``, which would change the reply."""
        if self.tools:
            raise UsageError("tools are not supported: the answer comes from the index",
                             field="tools")  # fmt: skip
        if self.format:
            raise UsageError("only text answers are served", field="format")


class ChatRequest(_Request):
    """``POST /api/chat``: the last user message is the question (`chat_answer`)."""

    messages: list[OllamaMessage] = Field(default_factory=list)


class GenerateRequest(_Request):
    """``POST /api/generate``: ``prompt`` is the question, asked alone."""

    prompt: str = ""
    images: list[str] | None = None


class ReplyMessage(BaseModel):
    """The assistant's message (a piece of it when streaming)."""

    role: str = "assistant"
    content: str


class Reply(BaseModel):
    """One object of a chat (``message``) or generate (``response``) reply.

    Attributes:
        total_duration: the whole query, nanoseconds.
        load_duration: always 0 (nothing to load).
        prompt_eval_count: the chain's prompt tokens.
        prompt_eval_duration: everything before the answer step (retrieval), nanoseconds.
        eval_count: the chain's completion tokens.
        eval_duration: the answer step, nanoseconds.
        ukr: the `RAGOutput`, in the final object.
    """

    model: str
    created_at: str
    message: ReplyMessage | None = None
    response: str | None = None
    done: bool
    done_reason: str | None = None
    total_duration: int | None = None
    load_duration: int | None = None
    prompt_eval_count: int | None = None
    prompt_eval_duration: int | None = None
    eval_count: int | None = None
    eval_duration: int | None = None
    ukr: RAGOutput | None = None

    def line(self) -> bytes:
        """The object as one NDJSON line (fields that do not apply left out)."""
        data = {k: v for k, v in self.model_dump(mode="json").items() if v is not None}
        return (json.dumps(data, ensure_ascii=False) + "\n").encode()


@router.get("/version")
async def version() -> dict[str, str]:
    """The Ollama version whose API this follows (no key needed, as ``/v1/version``)."""
    return {"version": OLLAMA_API_VERSION}


@router.get("/tags", dependencies=[Depends(requires("read"))])
async def tags(request: Request) -> Tags:
    """Every model offered: per index, ``ukr-<index>:latest`` then ``ukr-<index>:<strategy>``."""
    at = _started(request)
    refs = await served_models(app_of(request))
    return Tags(models=[TagModel(name=r.ollama_name, model=r.ollama_name, modified_at=at,
                                 digest=_digest(r)) for r in refs])  # fmt: skip


@router.post("/show", dependencies=[Depends(requires("read"))])
async def show(request: Request) -> ShowReply:
    """One model's details; 404 when it is not offered."""
    body = await _read(request, ShowRequest)
    ref = await resolve_model(app_of(request), body.model or body.name or "")
    info = {"general.architecture": "ukr", "ukr.index": ref.index, "ukr.strategy": ref.resolved,
            "ukr.description": ref.description}  # fmt: skip
    return ShowReply(model_info=info, modified_at=_started(request))


@router.post("/chat", response_model=None, dependencies=[Depends(requires("read"))])
async def chat(request: Request) -> Response:
    """Answer the conversation's last user message (NDJSON unless ``stream`` is false).

    \f
    Raises:
        UnknownModelError: 404. UsageError: ``tools``, ``format``, ``images`` or no question,
        400. The chain's errors before the answer starts, with their status.
    """  # noqa: D301 (\f ends the OpenAPI description)
    body = await _read(request, ChatRequest)
    body.refuse_unsupported()
    if any(m.images for m in body.messages):
        raise UsageError("images are not read", field="messages")
    ref = await resolve_model(app_of(request), body.model)
    if not body.messages:
        return _loaded(body.model, chat=True)
    inp = chat_input(ref, [(m.role, m.content) for m in body.messages])
    return await _answer(request, ref, inp, body.model, body.stream, chat=True)


@router.post("/generate", response_model=None, dependencies=[Depends(requires("read"))])
async def generate(request: Request) -> Response:
    """Answer ``prompt`` alone (NDJSON unless ``stream`` is false).

    \f
    Raises:
        As ``/api/chat``.
    """  # noqa: D301 (\f ends the OpenAPI description)
    body = await _read(request, GenerateRequest)
    body.refuse_unsupported()
    if body.images:
        raise UsageError("images are not read", field="images")
    ref = await resolve_model(app_of(request), body.model)
    if not body.prompt:
        return _loaded(body.model, chat=False)
    inp = RAGInput(question=body.prompt, strategy=ref.strategy)
    return await _answer(request, ref, inp, body.model, body.stream, chat=False)


async def _read(request: Request, model: type[_Body]) -> _Body:
    """The JSON body as ``model``, whatever its Content-Type (``curl -d`` sends a form's).

    Raises:
        RequestValidationError: the body is not JSON, or not ``model`` (answered 400).
    """
    try:
        return model.model_validate_json(await request.body() or b"{}")
    except ValidationError as error:
        raise RequestValidationError(error.errors()) from error


async def _answer(
    request: Request, ref: ChatModelRef, inp: RAGInput, model: str, stream: bool, *, chat: bool
) -> Response:
    app = app_of(request)
    check_question(request, inp.question, "messages" if chat else "prompt")
    note_question(request, inp.question)
    observe = metrics_of(request).observe_query
    try:
        if not stream:
            out = await until_answered(request, app.chain(ref.index).ainvoke(inp))
        else:
            first, pieces = await start_answer(app, ref, inp, request)
    except ClientGoneError:
        return Response(status_code=CLIENT_CLOSED)
    if not stream:
        observe(out)
        final = _final(model, out, chat=chat, text=out.answer + footnotes(out))
        return Response(final.line(), media_type="application/json")

    def encode(piece: str | RAGOutput) -> bytes:
        if isinstance(piece, str):
            return _piece(model, piece, chat=chat).line()
        notes = footnotes(piece)
        head = _piece(model, notes, chat=chat).line() if notes else b""
        return head + _final(model, piece, chat=chat, text="").line()

    def fail(kind: str, message: str) -> bytes:
        return (json.dumps({"error": f"{kind}: {message}"}) + "\n").encode()

    return StreamingResponse(relay(first, pieces, encode, fail, on_result=observe),
                             media_type=NDJSON)


def _piece(model: str, text: str, *, chat: bool) -> Reply:
    if chat:
        return Reply(model=model, created_at=_now(), message=ReplyMessage(content=text),
                     done=False)  # fmt: skip
    return Reply(model=model, created_at=_now(), response=text, done=False)


def _final(model: str, out: RAGOutput, *, chat: bool, text: str) -> Reply:
    total_ms = out.timings_ms.get("total", 0.0)
    answer_ms = out.timings_ms.get("answer", 0.0)
    reply = _piece(model, text, chat=chat)
    return reply.model_copy(update={
        "done": True, "done_reason": finish_reason(out),
        "total_duration": _ns(total_ms), "load_duration": 0,
        "prompt_eval_count": out.usage.input_tokens,
        "prompt_eval_duration": _ns(max(total_ms - answer_ms, 0.0)),
        "eval_count": out.usage.output_tokens, "eval_duration": _ns(answer_ms), "ukr": out,
    })  # fmt: skip


def _loaded(model: str, *, chat: bool) -> Response:
    """Ollama's reply to a request that only loads the model."""
    reply = _piece(model, "", chat=chat).model_copy(update={"done": True, "done_reason": "load"})
    return Response(reply.line(), media_type="application/json")


def _ns(ms: float) -> int:
    return int(ms * 1_000_000)


def _digest(ref: ChatModelRef) -> str:
    """A stable digest per model name (Ollama lists one per model)."""
    return hashlib.sha256(ref.ollama_name.encode()).hexdigest()


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _started(request: Request) -> str:
    """When the server started, RFC 3339 (the models' ``modified_at``)."""
    started = float(getattr(request.app.state, "started_at", 0.0))
    return datetime.fromtimestamp(started, UTC).isoformat().replace("+00:00", "Z")
