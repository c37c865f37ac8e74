"""`RAGChain`: one chain for every strategy, from question to answer with exactly its sources.

Steps (DESIGN.md §8, seed 000 §6-§7): validate → follow-up rewrite from conversation memory (or
from the turns the caller sends, `RAGInput.history`) → check the index (before any model call)
→ strategy (explicit, or `auto`: the LLM router, else the rule) → strategy buckets → weighted
RRF fusion → optional rerank → MMR → per-type quotas → the strategy's own last step, if any
(`StrategyResult.finish`: `tree`'s level cap and passage expansion) (`search` stops here) →
token-budget packing per type (`retrieve` stops here) → answer: generative with an LLM (concise
or comprehensive prompt, optional decline marker), extractive without; "cannot answer" without
any model call when the context is empty. `RAGOutput.sources` are the packed sections,
truncated text included: nothing the answer step did not see, nothing it saw left out. Errors
follow seed 000 §8.1 (`is_fatal`).

Every answer is flagged in its metadata: ``answer_complete`` and ``finish_reason`` (a reply cut
by the length limit, a filter or a deadline is delivered, never passed off as complete),
``incomplete_replies``, ``invalid_citations`` (labels naming no source,
`domain.answers.citations`) and ``deadline_hit``: ``query.deadline_s`` bounds the whole query
(`domain.llm.deadline`); past it each step keeps what it has and the answer falls back to the
extractive one. Each question is one `util.telemetry.query_span` (a query id, a span).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from unified_kg_rag.config.models import QueryConfig
from unified_kg_rag.domain.llm.deadline import QueryDeadline, note_deadline, query_deadline
from unified_kg_rag.domain.llm.finish import StreamFinish
from unified_kg_rag.domain.llm.roles import ModelRole, RoleModels
from unified_kg_rag.domain.llm.usage import usage_scope
from unified_kg_rag.domain.models import RAGOutput
from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.domain.ranking.trace import PipelineTrace
from unified_kg_rag.ports import ChatModel, Embedder, IndexStores, Reranker, TokenCounter
from unified_kg_rag.retrieval.access import AccessRecorder
from unified_kg_rag.retrieval.answer import (
    AnswerText,
    generative_answer,
    map_reduce_answer,
    render_source,
    stream_answer,
)
from unified_kg_rag.retrieval.context import (
    fuse,
    pack_context,
    rerank_and_diversify,
    seat_pinned,
    to_source,
)
from unified_kg_rag.retrieval.extractive import (
    EXTRACTIVE_HEADER,
    deadline_header,
    extractive_answer,
)
from unified_kg_rag.retrieval.filters import check_filters_pass, resolve_filters
from unified_kg_rag.retrieval.finish import finish_output
from unified_kg_rag.retrieval.memory import (
    ConversationMemory,
    recent_turns,
    rewrite_followup,
)
from unified_kg_rag.retrieval.message_sources import attach_messages
from unified_kg_rag.retrieval.models import (
    CANNOT_ANSWER,
    DECLINED,
    FILTER_FIELDS,
    MAX_QUESTION_CHARS,
    FilterMap,
    PriorTurn,
    RAGInput,
    RetrievalOutput,
    SearchOutput,
)
from unified_kg_rag.retrieval.pipeline_strategy import (
    PipelineStrategy,
    refuse_strategy_with_pipeline,
)
from unified_kg_rag.retrieval.request import build_input, check_index, check_request
from unified_kg_rag.retrieval.strategies import (
    STRATEGIES,
    Bucket,
    Candidate,
    QueryContext,
    StrategyResult,
)
from unified_kg_rag.retrieval.strategies.auto import route, run_route
from unified_kg_rag.retrieval.strategies.base import BuildCache
from unified_kg_rag.retrieval.strategies.ppr import LoadedConceptGraph
from unified_kg_rag.retrieval.strategies.tree import LoadedTree
from unified_kg_rag.util.errors import (
    ModelError,
    QueryDeadlineError,
    UsageError,
)
from unified_kg_rag.util.telemetry import query_span, set_current_attribute

__all__ = [
    "CANNOT_ANSWER",
    "DECLINED",
    "FILTER_FIELDS",
    "MAX_QUESTION_CHARS",
    "PriorTurn",
    "RAGChain",
    "RAGInput",
    "RetrievalOutput",
    "SearchOutput",
]

logger = logging.getLogger(__name__)

@dataclass
class _Prepared:
    inp: RAGInput
    ctx: QueryContext
    strategy: str
    result: StrategyResult
    groups: dict[str, list[Candidate]]
    timings: dict[str, float]
    memory: ConversationMemory | None
    trace: PipelineTrace | None = None

    @property
    def map_reduce(self) -> bool:
        """True when the strategy's answer is map-reduced over its sources (`lazy`)."""
        return self.trace is None and STRATEGIES.get(self.strategy).answer == "map_reduce"


class RAGChain:
    """Answers questions over one index with any registered strategy.

    Args:
        stores: the index's store ports.
        embedder: the embedding model the index was built with.
        chat_model: the (wrapped) default LLM, or None for extractive answers.
        models: the model of each role (`domain.llm.roles`): ``answer`` writes answers,
            ``query`` rewrites follow-ups and processes queries; None: ``chat_model`` serves
            every role.
        budget_tokenizer: counts context tokens for packing.
        config: default query settings; per-call overrides take precedence.
        reranker: the reranker of ``query.rerank`` (None: keep the fused order).
        concept_graphs: loaded `lazy` concept graphs to share with other chains (the
            `App`'s); None: this chain keeps its own.
        summary_trees: loaded `raptor` summary trees to share likewise; None: its own.
        prompts: the prompt templates in effect (default: the packaged ones).
        pipeline: a staged pipeline as the retrieval step in place of any strategy
            (`retrieval.pipeline_strategy`); a call naming a strategy is then refused.
        access_recorder: counts each retrieval's packed sources off the query's path
            (``query.access.record``); None: no counting.
    """

    def __init__(
        self,
        stores: IndexStores,
        *,
        embedder: Embedder,
        chat_model: ChatModel | None,
        budget_tokenizer: TokenCounter,
        models: RoleModels[ChatModel] | None = None,
        config: QueryConfig,
        reranker: Reranker | None = None,
        concept_graphs: BuildCache[LoadedConceptGraph] | None = None,
        summary_trees: BuildCache[LoadedTree] | None = None,
        prompts: PromptLibrary = PACKAGED,
        pipeline: PipelineStrategy | None = None,
        access_recorder: AccessRecorder | None = None,
    ) -> None:
        self._prompts = prompts
        self._pipeline = pipeline
        self._access = access_recorder
        self._concept_graphs = concept_graphs if concept_graphs is not None else BuildCache()
        self._summary_trees = summary_trees if summary_trees is not None else BuildCache()
        self._stores = stores
        self._embedder = embedder
        self._default = chat_model
        self._models = models
        self._chat = self._model("answer")  # the answer model
        self._counter = budget_tokenizer
        self._config = config
        self._reranker = reranker

    def _model(self, role: ModelRole) -> ChatModel | None:
        return self._default if self._models is None else self._models.for_role(role)

    # ------------------------------------------------------------------ public API

    async def search(
        self, question: str | RAGInput, *, filters: FilterMap | None = None, **overrides: object
    ) -> SearchOutput:
        """Return the fused, ranked results for the question, without packing or answering.

        Raises:
            UsageError: blank question, unknown override, or an index holding no text units.
            ConfigurationError: unknown strategy.
            MethodologyNotIndexedError: the strategy needs a methodology the index lacks.
            StoreError: a store failed.
            ModelError: an authentication failure, or a failure of a required reranker.
        """
        inp = build_input(question, filters, overrides)
        inp, asked, cfg = check_request(inp, self._config)
        with query_span(), usage_scope() as usage, query_deadline(cfg.deadline_s) as deadline:
            prep = await self._prepare(inp, asked, cfg, deadline)
        note_deadline(prep.ctx.metadata, deadline)
        return SearchOutput(
            question=prep.inp.question,
            standalone_question=prep.ctx.question,
            strategy=prep.strategy,
            index=self._stores.name,
            results={
                k: [to_source(c, i) for i, c in enumerate(v, start=1)]
                for k, v in prep.groups.items()
            },
            synthesized=[to_source(c, i) for i, c in enumerate(prep.result.synthesized, 1)],
            metadata=dict(prep.ctx.metadata),
            timings_ms=prep.timings,
            usage=usage,
            pipeline=prep.trace,
        )

    async def retrieve(
        self, question: str | RAGInput, *, filters: FilterMap | None = None, **overrides: object
    ) -> RetrievalOutput:
        """Retrieve and pack the context for ``question`` without answering.

        Args:
            question: the question (must not be blank), or a `RAGInput`.
            filters: equality filters on text-unit fields (``path``, ``document_id`` ...).
            **overrides: `QueryConfig` fields for this call (``strategy``, ``top_k`` ...).

        Raises:
            The errors of `search`.
        """
        inp = build_input(question, filters, overrides)
        inp, asked, cfg = check_request(inp, self._config)
        with query_span(), usage_scope() as usage, query_deadline(cfg.deadline_s) as deadline:
            prep = await self._prepare(inp, asked, cfg, deadline)
            out = await self._pack(prep)
        note_deadline(out.metadata, deadline)
        out.usage = usage
        return out

    async def ainvoke(
        self, question: str | RAGInput, *, filters: FilterMap | None = None, **overrides: object
    ) -> RAGOutput:
        """Answer the question from the index, citing exactly the sources it packed.

        Raises:
            The errors of `search`, and ModelError when the answer model fails.
        """
        started = time.perf_counter()
        inp = build_input(question, filters, overrides)
        inp, asked, cfg = check_request(inp, self._config)
        with query_span(), usage_scope() as usage, query_deadline(cfg.deadline_s) as deadline:
            prep = await self._prepare(inp, asked, cfg, deadline)
            retrieval = await self._pack(prep)
            t0 = time.perf_counter()
            answer, kind = await self._answer(prep, retrieval)
        note_deadline(retrieval.metadata, deadline)
        return await finish_output(
            prep.inp, prep.ctx, prep.strategy, prep.memory, retrieval, answer, kind, usage,
            timings=(t0, started),
        )

    def invoke(
        self, question: str | RAGInput, *, filters: FilterMap | None = None, **overrides: object
    ) -> RAGOutput:
        """Synchronous `ainvoke`, for scripts and notebooks without an event loop.

        Raises:
            UsageError: called inside a running event loop (use ``await ainvoke(...)``).
            The errors of `ainvoke`.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.ainvoke(question, filters=filters, **overrides))
        raise UsageError("invoke() cannot run inside an event loop; await ainvoke() instead",
                         field="invoke")  # fmt: skip

    async def stream(
        self, question: str | RAGInput, *, filters: FilterMap | None = None, **overrides: object
    ) -> AsyncIterator[str | RAGOutput]:
        """Yield the answer's text as the model writes it, then the complete `RAGOutput`.

        Without an LLM (extractive), for `lazy`'s map-reduce answer, and for "cannot answer",
        the whole answer comes as one piece. With the decline marker on, the first characters
        are held back until the marker is ruled in or out.

        Raises:
            The errors of `ainvoke`.
        """
        started = time.perf_counter()
        inp = build_input(question, filters, overrides)
        inp, asked, cfg = check_request(inp, self._config)
        with query_span(), usage_scope() as usage, query_deadline(cfg.deadline_s) as deadline:
            prep = await self._prepare(inp, asked, cfg, deadline)
            retrieval = await self._pack(prep)
            t0 = time.perf_counter()
            if self._chat is None or not retrieval.sources or prep.map_reduce or (
                prep.result.cannot_answer
            ):
                answer, kind = await self._answer(prep, retrieval)
                yield answer.text
            else:
                parts: list[str] = []
                outcome: dict[str, bool] = {}
                finish = StreamFinish()
                try:
                    async for delta in stream_answer(
                        self._chat, prep.ctx.question, retrieval.sources,
                        max_tokens=cfg.answer_max_tokens, style=self._style(prep),
                        abstention=cfg.abstention.mode == "mark", outcome=outcome,
                        finish=finish, prompts=self._prompts,
                    ):  # fmt: skip
                        parts.append(delta)
                        yield delta
                except QueryDeadlineError:  # before any text: the extractive answer instead
                    answer, kind = await self._extractive(prep, retrieval, deadline_cut=True)
                    yield answer.text
                else:
                    answer = AnswerText("".join(parts).strip(), finish.finish_reason)
                    kind = "generative"
                    if not answer.text and not outcome.get("abstained"):
                        raise ModelError("the model streamed an empty answer (after reasoning "
                                         "blocks were removed)")  # fmt: skip
                    if outcome.get("abstained"):
                        retrieval.metadata["streamed_abstention"] = True
        note_deadline(retrieval.metadata, deadline)
        yield await finish_output(
            prep.inp, prep.ctx, prep.strategy, prep.memory, retrieval, answer, kind, usage,
            timings=(t0, started),
        )

    # ----------------------------------------------------------------- internals

    async def _prepare(
        self, inp: RAGInput, question: str, cfg: QueryConfig, deadline: QueryDeadline | None
    ) -> _Prepared:
        timings: dict[str, float] = {}
        held = await check_index(self._stores, self._embedder)
        filters = await resolve_filters(self._stores, inp.filters)
        if self._pipeline is not None:
            refuse_strategy_with_pipeline(inp)
        elif cfg.strategy != "auto":  # refused before any model call, the rewrite's included
            explicit = STRATEGIES.get(cfg.strategy)
            explicit.require(held, self._stores.name, cfg)
        metadata: dict[str, object] = {}
        memory = None
        standalone = question
        t0 = time.perf_counter()
        prior = None
        if inp.history:  # the caller keeps the turns (a chat client); nothing is stored
            prior = recent_turns(inp.history, cfg.memory.max_turns, cfg.memory.max_answer_chars)
        elif inp.conversation_id:
            memory = ConversationMemory(
                self._stores.records, inp.user_id, inp.conversation_id,
                max_turns=cfg.memory.max_turns, max_answer_chars=cfg.memory.max_answer_chars,
            )  # fmt: skip
            prior = await memory.prior_turns()
        if prior is not None:
            standalone, how = await rewrite_followup(
                question, prior, self._model("query"), prompts=self._prompts
            )
            metadata["rewrite"] = how
            metadata["standalone_question"] = standalone
            timings["rewrite"] = _ms(t0)
        ctx = QueryContext(
            question=standalone, stores=self._stores, embedder=self._embedder,
            chat_model=self._default, models=self._models, config=cfg, filters=dict(filters),
            held=held,
            metadata=metadata, deadline=deadline, concept_graphs=self._concept_graphs,
            summary_trees=self._summary_trees, prompts=self._prompts,
        )  # fmt: skip
        if (step := self._pipeline) is not None:  # its order is kept: no rerank, no MMR
            t0 = time.perf_counter()
            result, trace = await step.run(ctx)
            timings["retrieve"] = _ms(t0)
            units = result.buckets[0].candidates
            metadata["buckets"] = {step.name: len(units)}
            return _Prepared(inp, ctx, step.name, result, {"text_unit": units} if units else {},
                             timings, memory, trace)  # fmt: skip
        t0 = time.perf_counter()
        chosen = await route(ctx) if cfg.strategy == "auto" else None  # the one router
        timings["route"] = _ms(t0)
        spec = STRATEGIES.get(chosen.strategy if chosen else cfg.strategy)
        set_current_attribute("ukr.query.strategy", spec.name)  # on the `query_span`
        spec.require(held, self._stores.name, cfg)
        t0 = time.perf_counter()
        if chosen is not None:
            result = await run_route(ctx, chosen)
        else:
            raw = await spec.factory().retrieve(ctx)
            result = raw if isinstance(raw, StrategyResult) else StrategyResult(
                buckets=[Bucket(spec.name, list(raw))]
            )
        timings["retrieve"] = _ms(t0)
        t0 = time.perf_counter()
        metadata["buckets"] = {b.name: len(b.candidates) for b in result.buckets}
        fused = fuse(result.buckets, cfg.rrf_k)
        groups = await rerank_and_diversify(standalone, fused, cfg, self._reranker, metadata,
                                            result.quotas)  # fmt: skip
        groups = seat_pinned(groups, result.pinned, cfg, cfg.auto.rare_term_after, result.quotas)
        if result.finish is not None:
            groups = await result.finish(groups)
        timings["fuse"] = _ms(t0)
        return _Prepared(inp, ctx, spec.name, result, groups, timings, memory)

    async def _pack(self, prep: _Prepared) -> RetrievalOutput:
        t0 = time.perf_counter()
        cfg = prep.ctx.config
        sources = pack_context(prep.result, prep.groups, cfg, self._counter)
        sources = await attach_messages(self._stores, sources)
        if self._access is not None:  # queued only: written in the background, never raises
            self._access.record_sources(sources)
        tokens = sum(self._counter.count(render_source(s)) for s in sources)
        timings = dict(prep.timings)
        timings["pack"] = _ms(t0)
        metadata = dict(prep.ctx.metadata)
        metadata["answer_style"] = self._style(prep)
        if prep.result.cannot_answer:
            metadata["cannot_answer"] = prep.result.cannot_answer
        return RetrievalOutput(
            question=prep.inp.question,
            standalone_question=prep.ctx.question,
            strategy=prep.strategy,
            index=self._stores.name,
            sources=sources,
            candidates=sum(len(v) for v in prep.groups.values()),
            context_tokens=tokens,
            metadata=metadata,
            timings_ms=timings,
            pipeline=prep.trace,
        )

    def _style(self, prep: _Prepared) -> str:
        style = prep.ctx.config.answer_style
        return (prep.result.answer_style or "concise") if style == "auto" else style

    async def _answer(
        self, prep: _Prepared, retrieval: RetrievalOutput
    ) -> tuple[AnswerText, str]:
        cfg = prep.ctx.config
        sources = retrieval.sources
        if prep.result.cannot_answer:
            reason = prep.result.cannot_answer
            return AnswerText(f"I cannot answer: {reason}."), "cannot_answer"
        if not sources:
            await check_filters_pass(prep.ctx)
            return AnswerText(CANNOT_ANSWER), "cannot_answer"
        if self._chat is None:
            return await self._extractive(prep, retrieval)
        try:
            if prep.map_reduce:
                written = await map_reduce_answer(
                    self._chat, prep.ctx.question, sources, max_tokens=cfg.answer_max_tokens,
                    prompts=self._prompts,
                )
            else:
                written = await generative_answer(
                    self._chat, prep.ctx.question, sources, max_tokens=cfg.answer_max_tokens,
                    style=self._style(prep), abstention=cfg.abstention.mode == "mark",
                    prompts=self._prompts,
                )  # fmt: skip
        except QueryDeadlineError:
            return await self._extractive(prep, retrieval, deadline_cut=True)
        return written, "generative"

    async def _extractive(
        self, prep: _Prepared, retrieval: RetrievalOutput, *, deadline_cut: bool = False
    ) -> tuple[AnswerText, str]:
        """The extractive answer; ``deadline_cut``: it stands in for a generative one."""
        cfg = prep.ctx.config
        if deadline_cut:
            retrieval.metadata["answer_fallback"] = _DEADLINE_FALLBACK
        passages = sorted(retrieval.sources, key=lambda s: (s.kind != "text_unit", s.n))
        answer = await extractive_answer(
            prep.ctx.question, self._embedder, await prep.ctx.query_vector(), passages,
            sentences=cfg.extractive_sentences, per_source=cfg.extractive_per_source,
            messages=cfg.extractive_messages,
            lexical_weight=cfg.extractive_lexical_weight,
            min_relative=cfg.extractive_min_relative,
            source_floor=cfg.extractive_source_floor, min_coverage=cfg.extractive_min_coverage,
            min_similarity=cfg.extractive_min_similarity,
            header=deadline_header(cfg.deadline_s) if deadline_cut else EXTRACTIVE_HEADER,
        )  # fmt: skip
        retrieval.metadata["match"] = answer.match.model_dump()
        return AnswerText(answer.text), "extractive"


_DEADLINE_FALLBACK = (
    "the model could not finish the answer before the deadline, so it is extractive, from "
    "the same sources"
)


def _ms(start: float, end: float | None = None) -> float:
    return round(((end if end is not None else time.perf_counter()) - start) * 1000.0, 3)
