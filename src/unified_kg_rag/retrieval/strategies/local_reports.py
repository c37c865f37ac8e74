"""The community reports of strategy ``local`` (seed 000 §6.1; GraphRAG local search).

``query.local_search.report_selection``:

- ``membership`` (default): the reports of the communities the expanded entities belong to
  (`domain.graph.membership.member_communities`: each entity's deepest community first, then
  the ones above it; more matched entities first, then report rank), then the reports most
  similar to the query entities fill what is left of ``query.quotas.report``. An entity's own
  community report is in the context even when its text shares no word with the question.
- ``similarity``: only the reports most similar to the query entities (lexical side: the
  joined names; vector side: the question's embedding).

What does not belong here: seeds, expansion and text units (``local``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence

from unified_kg_rag.domain.graph.membership import member_communities
from unified_kg_rag.domain.models import Collection, Community, CommunityReport, SearchMode
from unified_kg_rag.retrieval.strategies.base import Bucket, Candidate, QueryContext
from unified_kg_rag.retrieval.strategies.ppr import passes_filters

__all__ = ["PendingReports", "report_bucket", "report_candidate", "similar_report_ids"]


async def similar_report_ids(ctx: QueryContext, names: Sequence[str], k: int) -> list[str]:
    """Return the ids of the ``k`` reports most similar to the query entities.

    The lexical side reads the joined query entity names (the question when there are none),
    the vector side the question's embedding (already computed: no extra embedding).
    """
    if k <= 0:
        return []
    query = ", ".join(names) or ctx.question
    q = ctx.config
    mode = SearchMode(q.search_mode)
    vector = None if mode is SearchMode.LEXICAL else await ctx.query_vector()
    hits = await ctx.stores.search.search(
        Collection.REPORTS, query_text=query, query_vector=vector, mode=mode, k=k,
        candidate_k=max(q.candidate_k, k), lexical_weight=q.lexical_weight,
        vector_weight=q.vector_weight, rrf_k=q.rrf_k,
    )  # fmt: skip
    return [h.id for h in hits]


async def report_bucket(
    ctx: QueryContext,
    names: Sequence[str],
    entity_ids: Sequence[str],
    *,
    similar: Awaitable[list[str]] | None = None,
) -> Bucket | None:
    """Return the reports bucket (at most ``query.quotas.report``), or None when the quota is 0.

    Args:
        ctx: the query context.
        names: the query entity names (the similarity search's lexical query).
        entity_ids: the expanded entities (seeds first); ``membership`` ranks their
            communities' reports first (`domain.graph.membership.member_communities`).
        similar: the similarity ranking already under way (`similar_report_ids` with
            ``k = quota``, run beside the expansion); None: searched here.

    Returns:
        The reports, best first; under filters, a report none of whose cited units passes
        them is left out. ``metadata["report_selection"]`` says which selection ran and
        ``metadata["member_reports"]`` how many reports membership chose.

    Raises:
        StoreError: a store failed.
    """
    quota = ctx.config.quotas.report
    if quota <= 0:
        return None
    filling = await (similar if similar is not None else similar_report_ids(ctx, names, quota))
    membership = ctx.config.local_search.report_selection == "membership"
    found: list[Community] = []
    if membership and entity_ids:
        found = await ctx.stores.graph.communities_of(entity_ids)
    touched = [c.id for c in found]
    # one read: the reports membership ranks (their rank) and those similarity fills with
    fetched = {r.community_id: r for r in await ctx.stores.graph.get_reports(
        list(dict.fromkeys([*touched, *filling])))}  # fmt: skip
    members: list[str] = []
    if membership:
        rank = {c: fetched[c].rank for c in touched if c in fetched}
        members = member_communities(found, entity_ids, rank)
        if not members:
            ctx.metadata["report_selection"] = (
                "similarity (no expanded entity belongs to a community with a report)"
            )
    reports = [fetched[c] for c in dict.fromkeys([*members, *filling]) if c in fetched]
    if ctx.filters:
        units = list(dict.fromkeys(u for r in reports for u in r.text_unit_ids))
        passing = {rec.id for rec in await ctx.stores.search.get(Collection.TEXT_UNITS, units)
                   if passes_filters(rec.fields, ctx.filters)}  # fmt: skip
        reports = [r for r in reports if passing.intersection(r.text_unit_ids)]
    reports = reports[:quota]
    if membership:
        chosen = set(members)
        ctx.metadata["member_reports"] = sum(r.community_id in chosen for r in reports)
    return Bucket("reports", [report_candidate(r, len(reports) - i)
                              for i, r in enumerate(reports)])  # fmt: skip


class PendingReports:
    """The report search of one ``local`` query that needs no expanded entity, under way.

    Started before the expansion so that it overlaps it: the similarity search (``k =
    quota``). `bucket` then ranks with the expanded entities; `settle` cancels the search
    when it was not needed.

    Args:
        ctx: the query context.
        names: the query entity names.
    """

    def __init__(self, ctx: QueryContext, names: Sequence[str]) -> None:
        self._ctx = ctx
        self._names = list(names)
        quota = ctx.config.quotas.report
        self._similar = asyncio.ensure_future(similar_report_ids(ctx, names, quota))

    async def bucket(self, entity_ids: Sequence[str]) -> Bucket | None:
        """Return `report_bucket` for the expanded entities ``entity_ids``."""
        return await report_bucket(self._ctx, self._names, entity_ids, similar=self._similar)

    def settle(self) -> None:
        """Cancel the search if still running; mark a failure already reported as retrieved."""
        if not self._similar.done():
            self._similar.cancel()
        elif not self._similar.cancelled():
            self._similar.exception()


def report_candidate(report: CommunityReport, score: float) -> Candidate:
    """Return the context candidate of a community report (its full content)."""
    return Candidate(
        kind="report", id=report.community_id,
        text=report.full_content or f"# {report.title}\n\n{report.summary}",
        score=score, title=report.title, text_unit_ids=report.text_unit_ids,
        metadata={"level": report.level, "rating": report.rating, "rank": report.rank,
                  "community_id": report.community_id},
    )  # fmt: skip
