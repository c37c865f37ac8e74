"""Conversation memory: the turns of one conversation, and follow-up rewriting.

Turns are kept in the index's record store (namespace ``conversations``), keyed by user and
conversation id, so a conversation survives the process and two users never share one. A
follow-up ("and where did she teach?") is rewritten as a standalone question before retrieval:
by the LLM when one is configured (`followup_rewrite.v1`), else by prefixing the previous
question as asked, which carries its named entities into the search; only the last one, so the
query never grows turn after turn (seed 000 §6: "a follow-up is rewritten as a standalone
question"). A caller that keeps the conversation itself (a chat client sending every turn
with each message) passes its turns instead (`RAGInput.history`): the same rewrite
(`rewrite_followup`), nothing stored.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from unified_kg_rag.domain.models import Message
from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.ports import ChatModel, RecordStore
from unified_kg_rag.retrieval.models import PriorTurn
from unified_kg_rag.retrieval.strategies.base import is_fatal

__all__ = [
    "CONVERSATIONS_NAMESPACE",
    "ConversationMemory",
    "Turn",
    "conversation_key",
    "recent_turns",
    "rewrite_followup",
]

logger = logging.getLogger(__name__)

CONVERSATIONS_NAMESPACE = "conversations"


@dataclass(frozen=True)
class Turn:
    """One question and answer of a conversation.

    Attributes:
        question: the question as asked.
        standalone: the question as retrieval used it (rewritten when it was a follow-up).
        answer: the answer (cut to ``query.memory.max_answer_chars``).
    """

    question: str
    standalone: str
    answer: str


def recent_turns(
    history: Sequence[PriorTurn], max_turns: int, max_answer_chars: int
) -> list[PriorTurn]:
    """The last ``max_turns`` of a caller's own turns, answers cut as stored ones are."""
    return [t.model_copy(update={"answer": t.answer[:max_answer_chars]})
            for t in history[-max_turns:]]  # fmt: skip


async def rewrite_followup(
    question: str,
    turns: Sequence[PriorTurn],
    chat_model: ChatModel | None,
    *,
    prompts: PromptLibrary = PACKAGED,
) -> tuple[str, str]:
    """Rewrite a follow-up as a standalone question from the turns before it.

    Args:
        question: the follow-up as asked.
        turns: the earlier turns to read, oldest first (already cut to the ones wanted).
        chat_model: the LLM that rewrites; None: the fallback (previous question + this one).
        prompts: the prompts in effect (``followup_rewrite.v1``).

    Returns:
        ``(standalone question, how)``; ``how`` is ``none`` (no turns), ``llm`` or
        ``fallback``.

    Raises:
        ModelError: the LLM refused access (401/403); other failures use the fallback.
    """
    if not turns:
        return question, "none"
    if chat_model is not None:
        history = "\n".join(f"User: {t.question}\nAssistant: {t.answer}" for t in turns)
        prompt = prompts.text("followup_rewrite.v1", {"history": history, "question": question})
        try:
            reply = await chat_model.complete(
                [Message(role="user", content=prompt)], max_tokens=200, temperature=0.0
            )
        except Exception as exc:
            if is_fatal(exc):
                raise
            logger.warning("follow-up rewrite failed; using the fallback: %s", exc)
        else:
            text = reply.text.strip().strip('"').strip()
            if text:
                return text.splitlines()[0].strip(), "llm"
    return f"{turns[-1].question} {question}", "fallback"


def conversation_key(user_id: str, conversation_id: str) -> str:
    """Return the record key of a conversation: the JSON array ``[user, conversation]``.

    JSON escapes every separator, so no two (user, conversation) pairs share a key.
    """
    return json.dumps([user_id, conversation_id], ensure_ascii=False)


class ConversationMemory:
    """Reads, rewrites against and appends to one conversation.

    Args:
        records: the index's record store.
        user_id: who is asking.
        conversation_id: which conversation.
        max_turns: previous turns read for a rewrite.
        max_answer_chars: characters of each answer stored.
    """

    def __init__(
        self,
        records: RecordStore,
        user_id: str,
        conversation_id: str,
        *,
        max_turns: int,
        max_answer_chars: int,
    ) -> None:
        self._records = records
        self._key = conversation_key(user_id, conversation_id)
        self._max_turns = max_turns
        self._max_answer_chars = max_answer_chars

    async def turns(self) -> list[Turn]:
        """Return the stored turns, oldest first (a corrupt record reads as none).

        Raises:
            StoreError: the record store failed.
        """
        raw = await self._records.get(CONVERSATIONS_NAMESPACE, self._key)
        if not raw:
            return []
        try:
            return [Turn(**t) for t in json.loads(raw)]
        except (ValueError, TypeError):
            logger.warning("conversation record %r is unreadable; starting afresh", self._key)
            return []

    async def prior_turns(self) -> list[PriorTurn]:
        """The last ``max_turns`` stored turns, as the follow-up rewrite reads them.

        Raises:
            StoreError: the record store failed.
        """
        turns = (await self.turns())[-self._max_turns :]
        return [PriorTurn(question=t.question, answer=t.answer) for t in turns]

    async def append(self, turn: Turn) -> None:
        """Store ``turn`` after the others (the oldest beyond 4 × ``max_turns`` are dropped).

        Raises:
            StoreError: the record store failed.
        """
        turns = await self.turns()
        cut = Turn(turn.question, turn.standalone, turn.answer[: self._max_answer_chars])
        turns = [*turns, cut][-4 * self._max_turns :]
        await self._records.put(
            CONVERSATIONS_NAMESPACE, self._key, json.dumps([asdict(t) for t in turns])
        )
