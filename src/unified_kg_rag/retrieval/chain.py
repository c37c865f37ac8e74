"""`RAGChain`: question → strategy → packed sources → answer, with exactly those sources.

Steps: validate the question → check the index can serve the strategy (before any model
call) → retrieve candidates → pack them into ``query.max_context_tokens`` → answer
(generative with an LLM, extractive without; "cannot answer" with no context, no model call).
`RAGOutput.sources` are the packed sections, truncated text included: nothing the answer step
did not see, nothing it saw left out.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field, ValidationError

from unified_kg_rag.config.models import QueryConfig
from unified_kg_rag.domain.budget import pack_sections
from unified_kg_rag.domain.citations import cited_numbers
from unified_kg_rag.domain.index_meta import (
    INDEX_NAMESPACE,
    METHODOLOGIES_KEY,
    parse_methodologies,
)
from unified_kg_rag.domain.models import (
    Collection,
    MetadataValue,
    RAGOutput,
    Source,
    TokenUsage,
)
from unified_kg_rag.domain.usage import usage_scope
from unified_kg_rag.ports import ChatModel, Embedder, IndexStores, TokenCounter
from unified_kg_rag.retrieval.answer import (
    extractive_answer,
    generative_answer,
    map_reduce_answer,
    source_header,
)
from unified_kg_rag.retrieval.strategies import STRATEGIES, Candidate, QueryContext
from unified_kg_rag.retrieval.strategies.auto import choose_strategy
from unified_kg_rag.util.errors import (
    EmbeddingMismatchError,
    MethodologyNotIndexedError,
    UsageError,
)

__all__ = ["CANNOT_ANSWER", "RAGChain", "RetrievalOutput"]

logger = logging.getLogger(__name__)

CANNOT_ANSWER = "I cannot answer: no passage in the index matches the question."


class RetrievalOutput(BaseModel):
    """Retrieval without the answer step: the packed sources and timings.

    Attributes:
        question: the question as asked.
        strategy: the strategy used.
        index: the index searched.
        sources: the packed sources, in citation order.
        candidates: how many candidates the strategy returned before packing.
        timings_ms: ``retrieve`` (strategy) and ``pack`` wall time, milliseconds.
        usage: model usage of the retrieval (query embedding, and LLM calls of richer strategies).
    """

    question: str
    strategy: str
    index: str
    sources: list[Source] = Field(default_factory=list)
    candidates: int = 0
    timings_ms: dict[str, float] = Field(default_factory=dict)
    usage: TokenUsage = Field(default_factory=TokenUsage)


class RAGChain:
    """Answers questions over one index.

    Args:
        stores: the index's store ports.
        embedder: the embedding model the index was built with.
        chat_model: the (wrapped) LLM, or None for extractive answers.
        budget_tokenizer: counts context tokens for packing.
        config: default query settings; per-call overrides take precedence.
    """

    def __init__(
        self,
        stores: IndexStores,
        *,
        embedder: Embedder,
        chat_model: ChatModel | None,
        budget_tokenizer: TokenCounter,
        config: QueryConfig,
    ) -> None:
        self._stores = stores
        self._embedder = embedder
        self._chat = chat_model
        self._counter = budget_tokenizer
        self._config = config

    async def retrieve(
        self,
        question: str,
        *,
        filters: Mapping[str, MetadataValue | Sequence[MetadataValue]] | None = None,
        **overrides: object,
    ) -> RetrievalOutput:
        """Retrieve and pack the context for ``question`` without answering.

        Args:
            question: the question (must not be blank).
            filters: equality filters on text-unit fields (``path``, ``document_id`` ...).
            **overrides: `QueryConfig` fields for this call (``strategy``, ``top_k``,
                ``search_mode`` ...).

        Raises:
            UsageError: blank question, unknown override, or an index holding no text units.
            ConfigurationError: unknown strategy.
            MethodologyNotIndexedError: the strategy needs a methodology the index lacks.
            StoreError: a store failed.
        """
        with usage_scope() as usage:
            out, _ = await self._retrieve(question, filters, overrides)
        out.usage = usage
        return out

    async def ainvoke(
        self,
        question: str,
        *,
        filters: Mapping[str, MetadataValue | Sequence[MetadataValue]] | None = None,
        **overrides: object,
    ) -> RAGOutput:
        """Answer ``question`` from the index, citing exactly the sources it packed.

        Raises:
            The errors of `retrieve`, and ModelError when the LLM fails.
        """
        started = time.perf_counter()
        with usage_scope() as usage:
            retrieval, ctx = await self._retrieve(question, filters, overrides)
            cfg = ctx.config
            t0 = time.perf_counter()
            sources = retrieval.sources
            if not sources:
                answer, kind = CANNOT_ANSWER, "cannot_answer"
            elif self._chat is not None:
                answer_fn = map_reduce_answer if retrieval.strategy == "lazy" else (
                    generative_answer
                )
                answer = await answer_fn(
                    self._chat, retrieval.question, sources, max_tokens=cfg.answer_max_tokens
                )
                kind = "generative"
            else:
                answer = await extractive_answer(
                    retrieval.question,
                    self._embedder,
                    await ctx.query_vector(),
                    sources,
                    sentences=cfg.extractive_sentences,
                    lexical_weight=cfg.extractive_lexical_weight,
                    min_relative=cfg.extractive_min_relative,
                )
                kind = "extractive"
            timings = dict(retrieval.timings_ms)
            timings["answer"] = _ms(t0)
            timings["total"] = _ms(started)
        return RAGOutput(
            question=retrieval.question,
            answer=answer,
            answer_kind=kind,
            strategy=retrieval.strategy,
            index=self._stores.name,
            sources=tuple(sources),
            cited=cited_numbers(answer, {s.n for s in sources}),
            usage=usage,
            timings_ms=timings,
        )

    # ----------------------------------------------------------------- internals

    def _effective(self, overrides: Mapping[str, object]) -> QueryConfig:
        unknown = sorted(k for k in overrides if k not in QueryConfig.model_fields)
        if unknown:
            raise UsageError(f"unknown query setting(s): {', '.join(unknown)}", field="overrides")
        values = {k: v for k, v in overrides.items() if v is not None}
        if not values:
            return self._config
        try:
            return QueryConfig.model_validate({**self._config.model_dump(), **values})
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise UsageError(first["msg"], field=f"query.{field}") from exc

    async def _retrieve(
        self,
        question: str,
        filters: Mapping[str, MetadataValue | Sequence[MetadataValue]] | None,
        overrides: Mapping[str, object],
    ) -> tuple[RetrievalOutput, QueryContext]:
        question = question.strip()
        if not question:
            raise UsageError("must not be empty", field="question")
        cfg = self._effective(overrides)
        held = await self._check_index()
        name = (
            choose_strategy(held, cfg.search_mode, question)
            if cfg.strategy == "auto"
            else cfg.strategy
        )
        spec = STRATEGIES.get(name)
        self._check_servable(spec.name, spec.methodology, held)
        ctx = QueryContext(
            question=question,
            stores=self._stores,
            embedder=self._embedder,
            chat_model=self._chat,
            config=cfg,
            filters=dict(filters or {}),
            held=held,
        )
        t0 = time.perf_counter()
        candidates = await spec.factory().retrieve(ctx)
        t1 = time.perf_counter()
        sources = self._pack(candidates, cfg.max_context_tokens)
        out = RetrievalOutput(
            question=question,
            strategy=spec.name,
            index=self._stores.name,
            sources=sources,
            candidates=len(candidates),
            timings_ms={"retrieve": _ms(t0, t1), "pack": _ms(t1)},
        )
        return out, ctx

    async def _check_index(self) -> tuple[str, ...]:
        """Check the index can be queried; return the methodologies it holds."""
        name = self._stores.name
        if await self._stores.search.count(Collection.TEXT_UNITS) == 0:
            raise UsageError(
                f"index {name!r} holds no text units; index documents first with "
                f"`ukr index PATH --index {name}`",
                field="index",
            )
        bound = await self._stores.search.embedding()
        if bound is not None and bound[0] != self._embedder.model_id:
            raise EmbeddingMismatchError(
                f"index {name!r} was built with embedding model {bound[0]!r}; the configured "
                f"model is {self._embedder.model_id!r}. Configure the original model to query it"
            )
        return parse_methodologies(
            await self._stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY)
        )

    def _check_servable(
        self, strategy: str, methodology: str | tuple[str, ...] | None, held: tuple[str, ...]
    ) -> None:
        if methodology is None:
            return
        needs = (methodology,) if isinstance(methodology, str) else methodology
        if not any(m in held for m in needs):
            name = self._stores.name
            raise MethodologyNotIndexedError(
                f"strategy {strategy!r} needs the {' or '.join(repr(m) for m in needs)} "
                f"methodology, which index {name!r} does not hold (it holds: "
                f"{', '.join(held) or 'text units only'})",
                index=name,
                held=held,
            )

    def _pack(self, candidates: Sequence[Candidate], budget: int) -> list[Source]:
        drafts = [Source(n=i, **dataclasses.asdict(c)) for i, c in enumerate(candidates, start=1)]
        headers = [self._counter.count(source_header(s)) + 2 for s in drafts]
        packed = pack_sections(
            [s.text for s in drafts], budget, self._counter, header_tokens=headers
        )
        out: list[Source] = []
        for p in packed:
            src = drafts[p.index]
            update: dict[str, object] = {"n": len(out) + 1}
            if p.truncated:
                update.update(text=p.text, truncated=True)
                if src.start_char is not None:
                    update["end_char"] = src.start_char + len(p.text)
            out.append(src.model_copy(update=update))
        return out


def _ms(start: float, end: float | None = None) -> float:
    return round(((end if end is not None else time.perf_counter()) - start) * 1000.0, 3)
