"""What goes into and comes out of `RAGChain`: the request, the search and retrieval outputs.

`RAGOutput` (the answer) is a domain model (`domain.models`); these are the chain's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from unified_kg_rag.domain.models import MetadataValue, Source, TokenUsage
from unified_kg_rag.domain.ranking.trace import PipelineTrace

__all__ = [
    "CANNOT_ANSWER",
    "DECLINED",
    "FILTER_FIELDS",
    "MAX_QUESTION_CHARS",
    "FilterMap",
    "PriorTurn",
    "RAGInput",
    "RetrievalOutput",
    "SearchOutput",
]

CANNOT_ANSWER = "I cannot answer: no passage in the index matches the question."
DECLINED = "The sources do not answer the question."
"""The answer shown when the model declined with the bare marker and no reason."""

FilterMap = Mapping[str, MetadataValue | Sequence[MetadataValue]]

MAX_QUESTION_CHARS = 20_000
"""Longest question accepted, characters (a question is embedded and searched whole)."""

FILTER_FIELDS: tuple[str, ...] = (
    "chunk_index", "document_id", "end_char", "n_tokens", "path", "source_scope",
    "start_char", "title",
)
"""The text-unit fields a query may filter on (equality, or any of a list)."""

INTEGER_FILTER_FIELDS: tuple[str, ...] = ("chunk_index", "end_char", "n_tokens", "start_char")
"""The filter fields whose values are integers (a typed ``chunk_index=0`` is the number 0)."""


def parse_filter_options(
    values: Sequence[str], *, field: str = "--filter"
) -> dict[str, MetadataValue | list[MetadataValue]]:
    """Parse ``key=value`` filter options; a key given twice means "any of these values".

    The one reading of typed filters, for ``ukr query --filter`` and the service's query
    parameters alike. Values of `INTEGER_FILTER_FIELDS` are read as integers.

    Args:
        values: the options as typed (``path=a.md``); a value may itself hold ``=``.
        field: how the caller names the option in errors.

    Raises:
        UsageError: an option without ``=``, with an empty key, or a non-integer value of an
            integer field.
    """
    from unified_kg_rag.util.errors import UsageError

    out: dict[str, MetadataValue | list[MetadataValue]] = {}
    for raw in values:
        key, sep, text = raw.partition("=")
        key = key.strip()
        if not sep or not key:
            raise UsageError(f"expected key=value, got {raw!r}", field=field)
        value: MetadataValue = text
        if key in INTEGER_FILTER_FIELDS:
            try:
                value = int(text)
            except ValueError:
                raise UsageError(f"{key} takes an integer, got {text!r}", field=field) from None
        have = out.get(key)
        if have is None:
            out[key] = value
        else:
            out[key] = [*(have if isinstance(have, list) else [have]), value]
    return out


class PriorTurn(BaseModel):
    """One earlier question and answer of a conversation the caller keeps itself.

    Attributes:
        question: the question as asked.
        answer: the answer shown (empty when the caller has none).
    """

    question: str
    answer: str = ""


class RAGInput(BaseModel):
    """One request to the chain.

    Attributes:
        question: the question (must not be blank).
        strategy: the strategy (default ``query.strategy``).
        filters: equality filters on text-unit fields (``path``, ``document_id`` ...); a list
            value means "any of these".
        conversation_id: keeps the turns of one conversation; a follow-up is rewritten as a
            standalone question from them. None: no memory.
        user_id: whose conversation it is (two users never share one).
        history: the conversation's earlier turns, oldest first, when the caller keeps them
            (a chat client sends them with every message): a follow-up is rewritten from
            them as from stored turns, and nothing is stored. Not with ``conversation_id``.
        overrides: further `QueryConfig` fields for this request (``top_k``, ``search_mode``...).
    """

    question: str
    strategy: str | None = None
    filters: dict[str, MetadataValue | list[MetadataValue]] = Field(default_factory=dict)
    conversation_id: str | None = None
    user_id: str = "default"
    history: list[PriorTurn] = Field(default_factory=list)
    overrides: dict[str, Any] = Field(default_factory=dict)


class SearchOutput(BaseModel):
    """Fused, ranked results before packing (`RAGChain.search`).

    Attributes:
        question: the question as asked.
        standalone_question: the question retrieval used (rewritten follow-up, or the same).
        strategy: the strategy that ran.
        index: the index searched.
        results: per section type (``text_unit``, ``entity``, ``relationship``, ``report``),
            the candidates after rerank, MMR and quotas, best first (``n`` is the rank).
        synthesized: sections the strategy wrote (global key points, DRIFT notes).
        metadata: what the strategy and the chain report (``degraded`` sections, ``llm_calls``,
            ``buckets``, ``rerank`` ...).
        timings_ms: wall time per step, milliseconds.
        usage: model usage of the search.
        pipeline: the staged pipeline's figures and ranking, when one retrieved.
    """

    question: str
    standalone_question: str
    strategy: str
    index: str
    results: dict[str, list[Source]] = Field(default_factory=dict)
    synthesized: list[Source] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    pipeline: PipelineTrace | None = None


class RetrievalOutput(BaseModel):
    """Retrieval without the answer step: the packed sources and timings.

    Attributes:
        question: the question as asked.
        standalone_question: the question retrieval used.
        strategy: the strategy used.
        index: the index searched.
        sources: the packed sources, in context order (citation order).
        candidates: how many candidates survived fusion, rerank, MMR and quotas.
        context_tokens: tokens of the packed context (headers included).
        metadata: as in `SearchOutput`, plus ``answer_style`` and ``cannot_answer``.
        timings_ms: wall time per step (``rewrite``, ``route``, ``retrieve``, ``fuse``,
            ``pack``), milliseconds.
        usage: model usage of the retrieval (query embedding, and LLM calls of richer strategies).
        pipeline: the staged pipeline's figures and ranking, when one retrieved.
    """

    question: str
    standalone_question: str = ""
    strategy: str
    index: str
    sources: list[Source] = Field(default_factory=list)
    candidates: int = 0
    context_tokens: int = 0
    metadata: dict[str, Any] = Field(default_factory=dict)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    pipeline: PipelineTrace | None = None
