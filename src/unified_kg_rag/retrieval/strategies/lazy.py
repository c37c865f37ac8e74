"""Strategy ``lazy``: LazyGraphRAG-style relevance testing over the concept graph's communities.

Follows Microsoft's published description of LazyGraphRAG (the code was never released):

1. split the question into subqueries (the LLM when one is configured, else the question);
2. rank text units by similarity to each subquery (``candidate_units`` of them);
3. rank the top-level concept communities by their best unit (a unit belongs to the
   communities of the concepts it is linked to);
4. test the relevance of units community by community, best community first, at most
   ``relevance_budget`` tests per subquery: the LLM's yes/no when configured, else cosine
   similarity at least ``relevance_threshold``; a community with a relevant unit queues its
   sub-communities next (recursion), one without is left;
5. answer from the relevant units, best first (the chain answers: generative with an LLM,
   extractive otherwise). Units left untested fill the remaining ``top_k`` places after the
   relevant ones, best first, so a small budget never starves the context.

An index without communities (a tiny corpus) tests units in similarity order. Once the
query's deadline (``query.deadline_s``) has passed, the split is the question itself and the
remaining tests use the similarity rule (``metadata["lazy_fallback"]`` says so).
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Sequence

import numpy as np

from unified_kg_rag.domain.models import Collection, Community, SearchHit, SearchMode
from unified_kg_rag.retrieval.strategies.base import Candidate, QueryContext, register_strategy
from unified_kg_rag.retrieval.strategies.naive import text_unit_candidate
from unified_kg_rag.retrieval.strategies.ppr import LoadedConceptGraph, load_concept_graph
from unified_kg_rag.util.errors import QueryDeadlineError, UsageError

__all__ = ["LazyStrategy"]

logger = logging.getLogger(__name__)

@register_strategy(
    "lazy",
    methodology="lazy",
    description="LazyGraphRAG-style: relevance tests community by community over the "
    "LLM-free concept graph, within a relevance budget.",
    answer="map_reduce",
)
class LazyStrategy:
    """Query-time relevance testing over concept communities (see the module docstring)."""

    async def retrieve(self, ctx: QueryContext) -> list[Candidate]:
        """Return the relevant text units, best first (at most ``top_k``)."""
        if ctx.config.search_mode == "lexical":
            raise UsageError(
                "strategy 'lazy' ranks text units by embedding similarity; --mode lexical is "
                "not supported with it (use --strategy naive)",
                field="query.search_mode",
            )
        loaded = await load_concept_graph(ctx.stores, ctx.concept_graphs)
        relevant: dict[str, float] = {}
        fallback: dict[str, SearchHit] = {}
        for sub in await self._subqueries(ctx):
            vector = (
                await ctx.query_vector()
                if sub == ctx.question
                else await ctx.embedder.embed_query(sub)
            )
            hits = await ctx.stores.search.search(
                Collection.TEXT_UNITS,
                query_vector=vector,
                mode=SearchMode.VECTOR,
                filters=ctx.filters or None,
                k=ctx.config.lazy.candidate_units,
            )
            for hit in hits:
                if hit.id not in fallback or fallback[hit.id].score < hit.score:
                    fallback[hit.id] = hit
            for unit, score in (await self._test(ctx, sub, hits, loaded)).items():
                relevant[unit] = max(relevant.get(unit, score), score)
        ordered = sorted(relevant, key=lambda u: (-relevant[u], u))
        rest = sorted(
            (h for h in fallback.values() if h.id not in relevant),
            key=lambda h: (-h.score, h.id),
        )
        chosen = [fallback[u] for u in ordered if u in fallback] + rest
        return [text_unit_candidate(h) for h in chosen[: ctx.config.top_k]]

    async def _subqueries(self, ctx: QueryContext) -> list[str]:
        chat = ctx.model("query")
        if chat is None:
            return [ctx.question]
        n = ctx.config.lazy.max_subqueries
        try:
            reply = await chat.complete(
                ctx.prompts.messages("lazy_split.v1", {"n": str(n), "question": ctx.question}),
                max_tokens=200,
            )
        except QueryDeadlineError:
            ctx.metadata["lazy_fallback"] = "the query's deadline passed: no LLM split or tests"
            return [ctx.question]
        lines = [ln.strip(" -*0123456789.\t") for ln in reply.text.splitlines()]
        subs = [ln for ln in lines if len(ln) > 3][:n]
        return subs or [ctx.question]

    async def _test(
        self,
        ctx: QueryContext,
        subquery: str,
        hits: Sequence[SearchHit],
        loaded: LoadedConceptGraph | None,
    ) -> dict[str, float]:
        """Return the units found relevant to ``subquery`` → similarity, within the budget."""
        cfg = ctx.config.lazy
        budget = cfg.relevance_budget
        sims = {h.id: h.score for h in hits}
        texts = {h.id: h.text for h in hits}
        tested: set[str] = set()
        relevant: dict[str, float] = {}
        queue: list[tuple[float, str, tuple[str, ...]]] = []
        members = _community_units(loaded, [h.id for h in hits]) if loaded else {}
        by_id = {c.id: c for c in loaded.communities} if loaded else {}
        for community in by_id.values():
            if community.level == 0 and members.get(community.id):
                best = max(sims[u] for u in members[community.id])
                heapq.heappush(queue, (-best, community.id, members[community.id]))
        # units in no community are tested last, in similarity order
        clustered = {u for units in members.values() for u in units}
        leftovers = tuple(h.id for h in hits if h.id not in clustered)
        if leftovers:
            heapq.heappush(queue, (1.0, "~unclustered", leftovers))
        while queue and budget > 0:
            _, community_id, units = heapq.heappop(queue)
            found = False
            for unit in sorted(units, key=lambda u: (-sims[u], u)):
                if budget <= 0:
                    break
                if unit in tested:
                    found = found or unit in relevant
                    continue
                tested.add(unit)
                budget -= 1
                if await self._is_relevant(ctx, subquery, texts[unit], sims[unit]):
                    relevant[unit] = sims[unit]
                    found = True
            parent = by_id.get(community_id)
            if found and parent is not None:
                for child in parent.children_ids:
                    child_units = members.get(child)
                    if child_units:
                        best = max(sims[u] for u in child_units)
                        heapq.heappush(queue, (-best - 1.0, child, child_units))
        return relevant

    async def _is_relevant(
        self, ctx: QueryContext, subquery: str, text: str, similarity: float
    ) -> bool:
        by_similarity = similarity >= ctx.config.lazy.relevance_threshold
        chat = ctx.model("query")
        if chat is None:
            return by_similarity
        if not ctx.out_of_time:
            try:
                reply = await chat.complete(
                    ctx.prompts.messages("lazy_relevance.v1",
                                         {"question": subquery, "passage": text}),
                    max_tokens=3,
                )  # fmt: skip
            except QueryDeadlineError:
                pass
            else:
                return reply.text.strip().lower().startswith("yes")
        ctx.metadata.setdefault(
            "lazy_fallback",
            "the query's deadline passed: the remaining relevance tests used similarity",
        )
        return by_similarity


def _community_units(
    loaded: LoadedConceptGraph, unit_ids: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    """Return community id → the given units linked to one of its concepts."""
    graph = loaded.graph
    concept_of = {cid: i for i, cid in enumerate(graph.concept_ids)}
    community_of: dict[int, list[Community]] = {}
    for community in loaded.communities:
        for member in community.member_ids:
            index = concept_of.get(member)
            if index is not None:
                community_of.setdefault(index, []).append(community)
    n_units = len(graph.unit_ids)
    adjacency = loaded.adjacency
    out: dict[str, list[str]] = {}
    for unit in unit_ids:
        row = loaded.unit_index.get(unit)
        if row is None:
            continue
        start, end = adjacency.indptr[row], adjacency.indptr[row + 1]  # type: ignore[attr-defined]
        concepts = np.asarray(adjacency.indices[start:end]) - n_units  # type: ignore[attr-defined]
        seen: set[str] = set()
        for concept in concepts.tolist():
            for community in community_of.get(int(concept), ()):
                if community.id not in seen:
                    seen.add(community.id)
                    out.setdefault(community.id, []).append(unit)
    return {c: tuple(units) for c, units in out.items()}
