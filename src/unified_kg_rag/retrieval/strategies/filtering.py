"""Query filters on graph items: an item passes when a text unit it cites passes.

Filters name text-unit fields (``path``, ``document_id`` ...); entities, relationships and
community reports hold none, so they pass through the units they cite. Used by the strategies
that read reports (``global``, ``drift``) so a filtered query never reads a report built only
from excluded passages.
"""

from __future__ import annotations

from collections.abc import Sequence

from unified_kg_rag.domain.models import Collection
from unified_kg_rag.retrieval.strategies.base import QueryContext
from unified_kg_rag.retrieval.strategies.ppr import passes_filters

__all__ = ["passing_units", "reports_passing"]


async def passing_units(ctx: QueryContext, unit_ids: Sequence[str]) -> set[str]:
    """Return the ids among ``unit_ids`` whose stored fields pass ``ctx.filters``.

    Raises:
        StoreError: the search index failed.
    """
    ids = list(dict.fromkeys(unit_ids))
    if not ctx.filters:
        return set(ids)
    records = await ctx.stores.search.get(Collection.TEXT_UNITS, ids)
    return {r.id for r in records if passes_filters(r.fields, ctx.filters)}


async def reports_passing(ctx: QueryContext, community_ids: Sequence[str]) -> set[str]:
    """Return the community ids among ``community_ids`` whose report cites a passing unit.

    Without filters every id passes (no store read).

    Raises:
        StoreError: a store failed.
    """
    if not ctx.filters:
        return set(community_ids)
    reports = await ctx.stores.graph.get_reports(list(community_ids))
    allowed = await passing_units(ctx, [u for r in reports for u in r.text_unit_ids])
    return {r.community_id for r in reports if any(u in allowed for u in r.text_unit_ids)}
