"""What every LLM judge shares: one JSON call with a deadline, its failure reasons, prompts.

A judgement either succeeds or fails with a one-line reason (`JudgeError.reason`); it is never
dropped, and never turned into a tie or a score of 0 (seed 000 §9, §9.3: a failed or
malformed judge call is a failed judgement, held against the run's failure rate). The
reasons are:

- ``deadline``: the call took longer than ``timeout_s`` (or the query's deadline passed);
- ``model error: <message>``: the model call raised `ModelError`;
- ``malformed reply: <what>``: the reply holds no JSON object, or the object lacks a key or
  uses a label outside the allowed set (each judge's parser says which).

Judges call the model at temperature 0. Not here: the verdict models and their aggregation
(one module per judge), and running judges over a dataset (the evaluation runner).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.llm.json_reply import parse_json_object
from unified_kg_rag.domain.models import Message
from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.util.errors import ModelError, QueryDeadlineError

__all__ = [
    "DEADLINE",
    "JudgeError",
    "Verdict",
    "call_json",
    "normalize_label",
    "one_line",
    "render_prompt",
]

logger = logging.getLogger(__name__)

DEADLINE = "deadline"
"""The failure reason of a judge call that ran past its ``timeout_s``."""

_REASON_CHARS = 200


class JudgeError(ModelError):
    """A judge call failed: the model raised, ran past its deadline, or replied malformed.

    Not transient: the caller records the failed judgement instead of retrying (the model
    wrapper already retried transient errors).

    Attributes:
        reason: one line saying why (``deadline``, ``model error: ...``,
            ``malformed reply: ...``).
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason, transient=False)
        self.reason = reason


class Verdict(BaseModel):
    """Base of the judges' verdict models: frozen, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")


def one_line(text: str, limit: int = _REASON_CHARS) -> str:
    """Return ``text`` on one line (whitespace runs collapsed), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def normalize_label(value: object) -> str:
    """Return a reply's label in canonical form: case-folded, spaces and hyphens as ``_``.

    ``"Partially correct"`` and ``"partially-correct"`` read as ``partially_correct``; a
    number reads as its decimal text (``1`` as ``"1"``); anything else (a list, an object,
    None) reads as ``""``, which no judge accepts.
    """
    if isinstance(value, bool) or not isinstance(value, str | int):
        return ""
    return "_".join(str(value).replace("-", " ").casefold().split())


def render_prompt(
    name: str, *, prompts: PromptLibrary = PACKAGED, **values: str
) -> tuple[str, str]:
    """Return the (system, user) parts of prompt template ``name``, filled.

    Rendered by the one template mechanism (`domain.prompts.render.render_messages`): the
    ``=== user ===`` line splits the two parts, braces inside the values (answers quoting
    code or JSON) are kept as they are, and literal braces of the template are doubled.

    Args:
        name: the prompt's name (``judge_correctness.v1``).
        prompts: the prompts in effect (default: the packaged ones).
        values: placeholder name → text.

    Raises:
        ConfigurationError: no prompt has that name.
    """
    messages = prompts.messages(name, values)
    system = messages[0].content if len(messages) == 2 else ""
    return system, messages[-1].content


async def call_json(
    model: ChatModel,
    system: str,
    user: str,
    *,
    timeout_s: float,
    max_tokens: int = 1024,
    semaphore: asyncio.Semaphore | None = None,
) -> dict[str, Any]:
    """Ask ``model`` once (temperature 0) and return the JSON object of its reply.

    The reply may wrap the object in prose, code fences or reasoning
    (`domain.llm.json_reply.parse_json_object`).

    Args:
        model: the judge model.
        system: the system message ("" sends none).
        user: the user message.
        timeout_s: longest wait for the reply, seconds (the call is cancelled after it).
        max_tokens: longest reply, tokens.
        semaphore: held around the call, acquired before the deadline starts, so time spent
            waiting for a slot is not counted against ``timeout_s``. Size it at most the
            model's own concurrency bound (``llm.max_concurrency``): calls queued inside the
            model wrapper are already on the clock.

    Returns:
        The first JSON object of the reply (keys as the model wrote them).

    Raises:
        JudgeError: ``deadline``; ``model error: ...``; ``malformed reply: no JSON object``
            (with ``cut off at max_tokens`` when the reply stopped on the token limit).
    """
    messages = [Message(role="system", content=system)] if system else []
    messages.append(Message(role="user", content=user))
    try:
        async with semaphore if semaphore is not None else contextlib.nullcontext():
            completion = await asyncio.wait_for(
                model.complete(messages, max_tokens=max_tokens, temperature=0.0), timeout_s
            )
    except (TimeoutError, QueryDeadlineError) as exc:
        raise JudgeError(DEADLINE) from exc
    except ModelError as exc:
        raise JudgeError(f"model error: {one_line(str(exc))}") from exc
    parsed = parse_json_object(completion.text)
    if parsed is None:
        cut = " (cut off at max_tokens)" if completion.finish_reason == "length" else ""
        logger.debug("judge reply without JSON: %.200r", completion.text)
        raise JudgeError(f"malformed reply: no JSON object{cut}")
    return parsed
