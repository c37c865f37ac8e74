"""Reading an OpenAI-compatible chat reply: whole (the raw body) or one stream chunk at a time.

Servers that call themselves OpenAI-compatible send replies of odd shapes: a choice without
``message``, a ``finish_reason`` that is a list or a number, a body that is an HTML page or
not valid UTF-8. The ``openai`` SDK builds its objects without checking them, so such a reply
used to surface as a Python exception (``AttributeError``, ``TypeError``) or a pydantic error
text. Here every reply is checked against the few fields the adapter reads:

- a whole reply is read from its raw bytes (invalid UTF-8 becomes U+FFFD, as a lone surrogate
  does later, `adapters.llm.unicode_repair`) and validated by `_ChatCompletion`;
- a stream chunk is checked field by field (`stream_choice`);
- a reply of the wrong shape raises one `ModelOutputError` line naming the endpoint and the
  field (``choices[0].finish_reason``): the reply's own failure, as an empty one is;
- a body that is no chat completion at all (an HTML page from a proxy, with status 200)
  raises `ModelError`: the URL is most likely not an OpenAI-compatible API;
- finish reasons are compared case-insensitively (``"STOP"`` reads as ``stop``;
  `openai_finish_reason`).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from unified_kg_rag.domain.models import Completion
from unified_kg_rag.util.errors import ModelError, ModelOutputError

__all__ = ["openai_finish_reason", "read_completion", "stream_choice"]

_STOP_ALIASES = frozenset({"stop", "eos", "eos_token", "end_turn", "stop_sequence"})


def openai_finish_reason(reason: str | None) -> str:
    """Map a chat completion's ``finish_reason`` to `Completion`'s names.

    Compared case-insensitively: ``stop`` and the end-of-sequence spellings of some
    compatible servers (``eos``, ``eos_token``, ``end_turn``, ``stop_sequence``) → ``stop``;
    None (servers that omit it on a finished non-streaming reply) → ``stop``; anything else
    (``length``, ``content_filter``, ``tool_calls``, ``abort`` ...) is passed through, in
    lower case, and marks the reply incomplete.
    """
    if reason is None:
        return "stop"
    folded = reason.strip().lower()
    return "stop" if folded in _STOP_ALIASES else folded


class _Message(BaseModel):
    model_config = ConfigDict(extra="ignore")
    content: str | None = None


class _Choice(BaseModel):
    model_config = ConfigDict(extra="ignore")
    message: _Message
    finish_reason: str | None = None


class _ChatCompletion(BaseModel):
    """The fields of a chat completion the adapter reads (everything else is ignored)."""

    model_config = ConfigDict(extra="ignore")
    choices: list[_Choice]
    usage: object = None


def read_completion(body: bytes, where: str) -> Completion:
    """Read a whole chat-completions reply body into a `Completion` (its first choice).

    Args:
        body: the HTTP body, bytes; invalid UTF-8 reads as U+FFFD.
        where: the endpoint (``base_url``), named in errors.

    Raises:
        ModelError: the body is not a chat completion (not JSON, or no ``choices``).
        ModelOutputError: a field has the wrong shape (named), or there is no choice.
    """
    try:
        payload = json.loads(body.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        payload = None
    if not isinstance(payload, dict) or "choices" not in payload:
        raise ModelError(f"{where} did not answer with a chat completion{_server_error(payload)} "
                         "(is it an OpenAI-compatible API base URL?)")  # fmt: skip
    try:
        reply = _ChatCompletion.model_validate(payload)
    except ValidationError as exc:
        raise _malformed(where, exc) from None
    if not reply.choices:  # e.g. a content filter: this request's own failure
        raise ModelOutputError(f"{where} returned no choices")
    choice = reply.choices[0]
    usage = reply.usage if isinstance(reply.usage, dict) else {}
    return Completion(
        text=choice.message.content or "",
        finish_reason=openai_finish_reason(choice.finish_reason),
        input_tokens=_count(usage.get("prompt_tokens")),
        output_tokens=_count(usage.get("completion_tokens")),
    )


def stream_choice(choice: Any, where: str) -> tuple[int, str, str | None]:
    """Check one choice of a stream chunk (an SDK object built unchecked).

    Returns:
        ``(index, content, finish_reason)``: the content delta ("" when none) and the raw
        finish reason (None when the chunk has none).

    Raises:
        ModelOutputError: ``index``, ``delta.content`` or ``finish_reason`` has the wrong
            type (the field is named).
    """
    index = getattr(choice, "index", 0)
    if not isinstance(index, int) or isinstance(index, bool):
        raise _wrong(where, "choices[].index", "an integer", index)
    delta = getattr(choice, "delta", None)
    content = getattr(delta, "content", None) if delta is not None else None
    if content is not None and not isinstance(content, str):
        raise _wrong(where, f"choices[{index}].delta.content", "a string", content)
    reason = getattr(choice, "finish_reason", None)
    if reason is not None and not isinstance(reason, str):
        raise _wrong(where, f"choices[{index}].finish_reason", "a string", reason)
    return index, content or "", reason or None


def _count(value: object) -> int:
    """A token count from ``usage``; anything but a non-negative integer reads as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _server_error(payload: object) -> str:
    """``": <message>"`` when the body is an OpenAI-style error object sent with status 200."""
    error = payload.get("error") if isinstance(payload, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return f" (it answered an error: {' '.join(message.split())[:200]})" if (
        isinstance(message, str) and message.strip()
    ) else ""


def _malformed(where: str, exc: ValidationError) -> ModelOutputError:
    """One line naming the first field at fault: ``choices[0].finish_reason``."""
    first = exc.errors()[0]
    field = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"])
    field = field.lstrip(".")
    got = "" if first["type"] == "missing" else f" (got {_show(first.get('input'))})"
    return ModelOutputError(f"{where} answered a malformed chat completion: `{field}`: "
                            f"{first['msg'].lower()}{got}")  # fmt: skip


def _wrong(where: str, field: str, wanted: str, value: object) -> ModelOutputError:
    return ModelOutputError(f"{where} streamed a malformed chat completion chunk: `{field}` "
                            f"should be {wanted} (got {_show(value)})")  # fmt: skip


def _show(value: object) -> str:
    text = json.dumps(value, ensure_ascii=True, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."
