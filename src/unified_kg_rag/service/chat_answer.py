"""What the chat protocols share: a chat's messages as one chain request, and the footnotes.

A chat client sends the whole conversation with every message. The last user or assistant
message must be the user's: it is the question. The earlier ones become the request's
`RAGInput.history`, each user message paired with the assistant reply after it, so a
follow-up is rewritten into a standalone question as with stored conversation memory
(`retrieval.memory.rewrite_followup`) and nothing is stored: the client stays the one keeper
of its conversation, which it may edit, regenerate or branch. System, developer and tool
messages are not read: the answer prompt is the index's own.

An answer's text ends with numbered footnotes, one per cited source (every source when the
answer cites none), after a ``Sources:`` line::

    Barn owls hunt voles [1].

    Sources:
    [1] owls.md, chars 0-412

An assistant message sent back in a later request has its footnotes cut before it becomes
history. Nothing here knows a protocol's wire format (`openai_compat`, `ollama` do).
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import Request

from unified_kg_rag.bootstrap import App
from unified_kg_rag.domain.models import RAGOutput, Source
from unified_kg_rag.retrieval.chain import PriorTurn, RAGInput
from unified_kg_rag.service.chat_models import ChatModelRef
from unified_kg_rag.service.query import Pieces
from unified_kg_rag.util.errors import UsageError

__all__ = [
    "FOOTNOTES_MARKER",
    "chat_input",
    "finish_reason",
    "footnotes",
    "start_answer",
    "strip_footnotes",
]

FOOTNOTES_MARKER = "\n\nSources:\n"
"""What separates an answer from its footnotes."""

_FINISH_REASONS = ("stop", "length", "content_filter")


def chat_input(ref: ChatModelRef, messages: Sequence[tuple[str, str]]) -> RAGInput:
    """Turn a chat's messages into one chain request for model ``ref`` (module docstring).

    Args:
        ref: the model the client chose (its index is the chain's; its strategy the input's).
        messages: ``(role, text)`` pairs, oldest first, as the client sent them.

    Raises:
        UsageError: no user message, or the last user or assistant message is not the
            user's (field ``messages``).
    """
    turns = [(role, text) for role, text in messages if role in ("user", "assistant")]
    if not turns or turns[-1][0] != "user":
        raise UsageError("the last message must be the user's: it is the question",
                         field="messages")  # fmt: skip
    history: list[PriorTurn] = []
    for role, text in turns[:-1]:
        if role == "user":
            history.append(PriorTurn(question=text))
        elif history:  # an assistant message before any question has nothing to answer
            answer = f"{history[-1].answer}\n{strip_footnotes(text)}".strip()
            history[-1] = PriorTurn(question=history[-1].question, answer=answer)
    return RAGInput(question=turns[-1][1], strategy=ref.strategy, history=history)


async def start_answer(app: App, ref: ChatModelRef, inp: RAGInput, request: Request) -> tuple[
    str | RAGOutput | None, Pieces
]:
    """Start answering ``inp`` over ``ref``'s index; return the first piece and the rest.

    Raises:
        ClientGoneError: the client of ``request`` left before the first piece (the chain is
            stopped).
        The errors of `RAGChain.stream` found before the answer starts (an unserved
        strategy, a blank question ...): the route can still answer them with a status.
    """
    pieces = Pieces(app.chain(ref.index).stream(inp))
    return await pieces.first(request), pieces


def footnotes(output: RAGOutput) -> str:
    """The footnotes of ``output``'s answer, `FOOTNOTES_MARKER` first; empty without sources."""
    numbers = set(output.cited)
    cited = [s for s in output.sources if s.n in numbers]
    listed = cited or list(output.sources)
    if not listed:
        return ""
    return FOOTNOTES_MARKER + "\n".join(f"[{s.n}] {_label(s)}" for s in listed)


def strip_footnotes(text: str) -> str:
    """``text`` without the footnotes an answer of this service ends with."""
    head, marker, _ = text.rpartition(FOOTNOTES_MARKER)
    return head if marker else text


def finish_reason(output: RAGOutput) -> str:
    """Why the answer ended, in the chat protocols' words: ``stop``, ``length``, ``content_filter``.

    A deadline or anything else reads ``stop``; the answer's ``metadata`` says more.
    """
    reason = output.metadata.get("finish_reason")
    return reason if isinstance(reason, str) and reason in _FINISH_REASONS else "stop"


def _label(source: Source) -> str:
    """``path, chars a-b`` for a passage; ``kind: title`` for a graph item."""
    if source.kind == "text_unit" and source.path:
        if source.start_char is not None and source.end_char is not None:
            return f"{source.path}, chars {source.start_char}-{source.end_char}"
        return source.path
    name = source.title or source.path or source.id
    return f"{source.kind}: {name}"
