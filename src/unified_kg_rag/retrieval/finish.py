"""The last step of `RAGChain`: an answer and its packed context become one `RAGOutput`.

Flags the answer in its metadata (``answer_complete``, ``finish_reason``,
``incomplete_replies``, abstention, ``invalid_citations``), stores the turn in conversation
memory, and adds the answer's and the whole query's timings. Nothing here calls a model.
"""

from __future__ import annotations

import time

from unified_kg_rag.domain.answers.abstention import detect_abstention
from unified_kg_rag.domain.answers.citations import check_citations
from unified_kg_rag.domain.messages.evidence import evidence_from_answer
from unified_kg_rag.domain.models import RAGOutput, TokenUsage
from unified_kg_rag.retrieval.answer import AnswerText
from unified_kg_rag.retrieval.memory import ConversationMemory, Turn
from unified_kg_rag.retrieval.models import DECLINED, RAGInput, RetrievalOutput
from unified_kg_rag.retrieval.strategies import QueryContext

__all__ = ["finish_output"]


async def finish_output(
    inp: RAGInput,
    ctx: QueryContext,
    strategy: str,
    memory: ConversationMemory | None,
    retrieval: RetrievalOutput,
    written: AnswerText,
    kind: str,
    usage: TokenUsage,
    *,
    timings: tuple[float, float],
) -> RAGOutput:
    """Return the `RAGOutput` of ``written`` over ``retrieval`` (and remember the turn).

    Args:
        inp: the request as asked.
        ctx: the query's context (standalone question, settings, index stores).
        strategy: the strategy that retrieved (after `auto`'s choice).
        memory: the conversation to append the turn to, or None.
        retrieval: the packed sources, metadata and timings so far.
        written: the answer text and how its reply finished.
        kind: ``generative``, ``extractive`` or ``cannot_answer``.
        usage: the query's token usage.
        timings: ``time.perf_counter()`` when the answer step began and when the query did.

    Raises:
        StoreError: the conversation memory could not be written.
    """
    cfg = ctx.config
    answer = written.text
    metadata = dict(retrieval.metadata)
    metadata["context_tokens"] = retrieval.context_tokens
    metadata["answer_complete"] = written.complete
    metadata["finish_reason"] = written.finish_reason
    cut = {**_as_dict(metadata.get("incomplete_replies")), **written.incomplete}
    if cut:
        metadata["incomplete_replies"] = cut
    if kind == "cannot_answer":
        metadata["abstained"] = True
        metadata["abstention_reason"] = "no_context"
    elif kind == "generative" and cfg.abstention.mode == "mark":
        streamed = bool(metadata.pop("streamed_abstention", False))
        abstained, rest = (True, answer) if streamed else detect_abstention(answer)
        metadata["abstained"] = abstained
        if abstained:
            metadata["abstention_reason"] = "marker"
            if cfg.abstention.strip_marker:
                answer = rest or DECLINED
    if memory is not None:
        await memory.append(Turn(inp.question, ctx.question, answer))
    answer_started, started = timings
    spent = dict(retrieval.timings_ms)
    spent["answer"] = _ms(answer_started)
    spent["total"] = _ms(started)
    citations = check_citations(answer, retrieval.sources)
    metadata["invalid_citations"] = list(citations.invalid)
    return RAGOutput(
        question=inp.question,
        answer=answer,
        answer_kind=kind,
        strategy=strategy,
        index=ctx.stores.name,
        sources=tuple(retrieval.sources),
        cited=citations.cited,
        evidence=evidence_from_answer(answer, retrieval.sources),
        usage=usage,
        timings_ms=spent,
        metadata=metadata,
        pipeline=retrieval.pipeline,
    )


def _as_dict(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 3)
