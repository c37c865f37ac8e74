"""The closed-book arm: the answer model alone, without retrieval (seed 000 §9.3).

Its scores bound what the answer model knows without the corpus: a strategy that does not
beat it on a question set measures prior knowledge (contamination), not retrieval. It calls
no store and reads no context; its output has no sources.
"""

from __future__ import annotations

from unified_kg_rag.domain.models import Message, RAGOutput
from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.ports import ChatModel

__all__ = ["answer_closed_book"]


async def answer_closed_book(
    model: ChatModel, question: str, *, prompts: PromptLibrary = PACKAGED
) -> RAGOutput:
    """Answer ``question`` with ``model`` alone (prompts ``closed_book_system/user.v1``).

    Args:
        model: the answer model.
        question: the question.
        prompts: the prompts in effect (default: the packaged ones).

    Returns:
        A `RAGOutput` with ``strategy`` ``closed_book``, no sources and
        ``metadata.retrieval`` ``none``.

    Raises:
        ModelError: the model call failed.
    """
    messages = [
        Message(role="system", content=prompts.text("closed_book_system.v1")),
        Message(role="user", content=prompts.text("closed_book_user.v1", {
            "question": question.strip()})),
    ]  # fmt: skip
    reply = await model.complete(messages, temperature=0.0)
    text = reply.text.strip()
    return RAGOutput(
        question=question,
        answer=text,
        answer_kind="generative",
        strategy="closed_book",
        index="",
        metadata={"retrieval": "none"},
    )
