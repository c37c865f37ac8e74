"""The answer step with an LLM: it writes, citing ``[n]`` (without one: `retrieval.extractive`).

Both read exactly the packed sources; neither adds context of its own. An empty context never
reaches this module (the chain answers "cannot answer" without a model call). A written
answer comes with how its model reply ended (`AnswerText.finish_reason`): a reply cut at the
length limit or by a content filter is delivered, flagged, never passed off as complete.
"""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field

from unified_kg_rag.domain.answers.abstention import (
    ABSTENTION_INSTRUCTIONS,
    MARKER_WINDOW,
    NO_ANSWER,
    detect_abstention,
)
from unified_kg_rag.domain.llm.finish import StreamFinish, reply_complete, stream_finish
from unified_kg_rag.domain.messages.evidence import MESSAGE_CITATION_INSTRUCTIONS, labelled_text
from unified_kg_rag.domain.models import Message, Source
from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.util.errors import ModelError

__all__ = [
    "AnswerText",
    "answer_messages",
    "generative_answer",
    "map_reduce_answer",
    "render_source",
    "source_header",
    "stream_answer",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AnswerText:
    """A written answer and how the model reply it comes from ended.

    Attributes:
        text: the answer, stripped.
        finish_reason: the finish reason of the reply that wrote it (``stop`` when the model
            stopped on its own; ``length``, ``content_filter``, ``deadline`` ... when it was
            cut, `domain.llm.finish`); None for a text no model wrote.
        incomplete: intermediate replies the answer was built from that were cut: step name
            (``lazy_map.2``) → finish reason.
    """

    text: str
    finish_reason: str | None = None
    incomplete: dict[str, str] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """False when the reply that wrote the answer was cut (no model wrote it: True)."""
        return self.finish_reason is None or reply_complete(self.finish_reason)


def source_header(source: Source) -> str:
    """Return the header line of a source in the context: ``[n] title (path)``."""
    label = source.title or source.path or source.id[:12]
    where = f" ({source.path})" if source.path and source.path != label else ""
    return f"[{source.n}] {label}{where}"


def render_source(source: Source) -> str:
    """Return a source as placed in the context: its header line, then its text.

    A passage of a message transcript shows each message with its ``[n.m]`` label
    (`domain.messages.evidence.labelled_text`).
    """
    return f"{source_header(source)}\n{labelled_text(source)}"


def answer_messages(
    question: str,
    sources: Sequence[Source],
    *,
    style: str = "concise",
    abstention: bool = False,
    prompts: PromptLibrary = PACKAGED,
) -> list[Message]:
    """Return the answer prompt: the system prompt of ``style``, then sources and question.

    Args:
        question: the question.
        sources: the packed sources, in context order.
        style: ``concise`` or ``comprehensive`` (several paragraphs; `global`'s default).
        abstention: append the decline-marker instructions (seed 000 §9.2).
        prompts: the prompts in effect (``answer_system*.v1``, ``answer_user.v1``).
    """
    system = prompts.text(
        "answer_system_comprehensive.v1" if style == "comprehensive" else "answer_system.v1"
    )
    if abstention:
        system += ABSTENTION_INSTRUCTIONS
    if any(s.messages and s.kind == "text_unit" for s in sources):
        system += MESSAGE_CITATION_INSTRUCTIONS
    user = prompts.text("answer_user.v1", {
        "sources": "\n\n".join(render_source(s) for s in sources), "question": question
    })  # fmt: skip
    return [Message(role="system", content=system), Message(role="user", content=user)]


async def generative_answer(
    chat_model: ChatModel,
    question: str,
    sources: Sequence[Source],
    *,
    max_tokens: int,
    style: str = "concise",
    abstention: bool = False,
    prompts: PromptLibrary = PACKAGED,
) -> AnswerText:
    """Ask the LLM for an answer grounded in ``sources``, citing them as ``[n]``.

    Args:
        chat_model: the answer model.
        question: the question.
        sources: the packed sources, in context order.
        max_tokens: longest answer, tokens.
        style: ``concise`` or ``comprehensive``.
        abstention: add the decline-marker instructions.
        prompts: the prompts in effect.

    Returns:
        The answer and its reply's finish reason (a cut reply is returned, flagged).

    Raises:
        ModelError: the model call failed after retries, or the reply was empty (after
            reasoning blocks were removed).
    """
    messages = answer_messages(
        question, sources, style=style, abstention=abstention, prompts=prompts
    )
    completion = await chat_model.complete(messages, max_tokens=max_tokens, temperature=0.0)
    text = completion.text.strip()
    if not text:
        raise ModelError(
            f"the model returned an empty answer (finish reason {completion.finish_reason!r}); "
            "a reasoning model may need a larger query.answer_max_tokens"
        )
    return AnswerText(text, completion.finish_reason)


async def stream_answer(
    chat_model: ChatModel,
    question: str,
    sources: Sequence[Source],
    *,
    max_tokens: int,
    style: str = "concise",
    abstention: bool = False,
    outcome: dict[str, bool] | None = None,
    finish: StreamFinish | None = None,
    prompts: PromptLibrary = PACKAGED,
) -> AsyncIterator[str]:
    """Yield the answer's text deltas as the model writes them.

    With ``abstention`` on, the first `MARKER_WINDOW` characters are held back until the
    decline marker is ruled in or out; the marker itself is never yielded, and
    ``outcome["abstained"]`` says whether it was found. The stream's finish reason is
    recorded in ``finish`` (`domain.llm.finish`; None when the model reported none).

    Raises:
        ModelError: the model call failed.
    """
    messages = answer_messages(
        question, sources, style=style, abstention=abstention, prompts=prompts
    )
    finish = finish if finish is not None else StreamFinish()
    held = ""
    released = not abstention
    stream = aiter(chat_model.stream(messages, max_tokens=max_tokens, temperature=0.0))
    try:
        while True:
            with stream_finish(finish):  # one scope per step: none stays open across a yield
                try:
                    delta = await anext(stream)
                except StopAsyncIteration:
                    break
            if released:
                yield delta
                continue
            held += delta
            if not _marker_undecided(held):
                released = True
                yield _decided(held, outcome)
        if not released and held:
            yield _decided(held, outcome)
    finally:
        await _close(stream)


async def _close(stream: AsyncIterator[str]) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()


def _decided(held: str, outcome: dict[str, bool] | None) -> str:
    abstained, rest = detect_abstention(held)
    if outcome is not None:
        outcome["abstained"] = abstained
    return rest if abstained else held


def _marker_undecided(held: str) -> bool:
    """True while ``held`` (the answer's start) may still turn out to be the decline marker."""
    lead = unicodedata.normalize("NFKC", held.lstrip(" \t\n*_>#`")).upper()
    return len(held) < MARKER_WINDOW and len(lead) < len(NO_ANSWER) and NO_ANSWER.startswith(lead)


async def map_reduce_answer(
    chat_model: ChatModel,
    question: str,
    sources: Sequence[Source],
    *,
    max_tokens: int,
    batch_size: int = 4,
    prompts: PromptLibrary = PACKAGED,
) -> AnswerText:
    """Answer from ``sources`` in two steps (LazyGraphRAG's map-reduce answer).

    Map: each batch of ``batch_size`` sources gives the facts it holds that help, each
    citing its ``[n]`` (``lazy_map.v1``). Reduce: the answer is written from those notes,
    citing the same numbers (``answer_system.v1``, then the user part of ``lazy_reduce.v1``).
    A context of at most one batch is answered in one call (`generative_answer`).

    Returns:
        The answer with the reduce reply's finish reason; a map reply that was cut is kept
        (its notes are still facts) and named in ``incomplete`` (``lazy_map.<batch>``).

    Raises:
        ModelError: a model call failed after retries, or the answer was empty.
    """
    if len(sources) <= batch_size:
        return await generative_answer(
            chat_model, question, sources, max_tokens=max_tokens, prompts=prompts
        )
    notes: list[str] = []
    incomplete: dict[str, str] = {}
    for number, i in enumerate(range(0, len(sources), batch_size), start=1):
        batch = sources[i : i + batch_size]
        messages = prompts.messages("lazy_map.v1", {
            "question": question, "sources": "\n\n".join(render_source(s) for s in batch),
        })  # fmt: skip
        reply = await chat_model.complete(messages, max_tokens=max_tokens, temperature=0.0)
        if not reply.complete:
            incomplete[f"lazy_map.{number}"] = reply.finish_reason
        text = reply.text.strip()
        if text and text.upper() != "NONE":
            notes.append(text)
    if not notes:
        answer = await generative_answer(
            chat_model, question, sources, max_tokens=max_tokens, prompts=prompts
        )
        return AnswerText(answer.text, answer.finish_reason, incomplete)
    completion = await chat_model.complete(
        [Message(role="system", content=prompts.text("answer_system.v1")),
         prompts.messages("lazy_reduce.v1", {"question": question,
                                             "notes": "\n".join(notes)})[-1]],
        max_tokens=max_tokens,
        temperature=0.0,
    )  # fmt: skip
    text = completion.text.strip()
    if not text:
        raise ModelError("the model returned an empty answer in the reduce step")
    return AnswerText(text, completion.finish_reason, incomplete)
