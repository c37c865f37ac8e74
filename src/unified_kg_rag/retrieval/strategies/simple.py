"""Strategy ``simple``: BM25 + vector search over every index the namespace holds, no graph walk.

The text units are always searched; the entities, relationships, community-reports and
claims indexes join the sweep when they hold records (so a text-only or LightRAG-only index is
served too, and claims only where claim extraction built them). Each collection is one
bucket, searched with the query's mode and RRF weights, concurrently, each a section of its
own: a failed search degrades only its bucket.

Not swept: ``concepts`` (the `lazy` methodology keeps its concept graph in the record store,
and a concept is a bare keyphrase without a description: its value is the units it links,
which the text-unit search reaches directly) and ``summary_nodes`` (the `tree` strategy's).

``ctx.filters`` name text-unit fields: they filter the text-unit search, and a graph item or
report stays only when one of the text units it cites passes them. Graph items carry their
lineage (``text_unit_ids``) and the documents of the cited units read.

Source: seed 000 §6.1 (``simple``: vector and lexical search over every built index).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from functools import partial

from unified_kg_rag.domain.graph.claims import claim_from_record
from unified_kg_rag.domain.models import Collection, IndexRecord, MetadataValue
from unified_kg_rag.retrieval.strategies.base import (
    Bucket,
    Candidate,
    QueryContext,
    StrategyResult,
    register_strategy,
)
from unified_kg_rag.retrieval.strategies.lightrag import (
    documents_of,
    fetch_units,
    question_search,
)
from unified_kg_rag.retrieval.strategies.naive import text_unit_candidate
from unified_kg_rag.retrieval.strategies.ppr import passes_filters

__all__ = ["SWEPT", "SimpleStrategy"]

logger = logging.getLogger(__name__)

SWEPT: tuple[tuple[Collection, str], ...] = (
    (Collection.TEXT_UNITS, "text_unit"),
    (Collection.ENTITIES, "entity"),
    (Collection.RELATIONSHIPS, "relationship"),
    (Collection.REPORTS, "report"),
    (Collection.CLAIMS, "claim"),
)
"""The collections ``simple`` searches and the candidate kind of their records."""

_MAX_LINEAGE_READ = 50
"""Cited units read per graph item (for its documents and the filters)."""


async def _lineage(ctx: QueryContext, kind: str, ids: list[str]) -> dict[str, tuple[str, ...]]:
    """Return item id -> the text units it cites, read from the graph store."""
    graph = ctx.stores.graph
    if not ids:
        return {}
    if kind == "entity":
        return {e.id: e.text_unit_ids for e in await graph.get_entities(ids)}
    if kind == "relationship":
        return {r.id: r.text_unit_ids for r in await graph.get_relationships(ids)}
    return {r.community_id: r.text_unit_ids for r in await graph.get_reports(ids)}


async def _graph_bucket(
    ctx: QueryContext, collection: Collection, kind: str, k: int
) -> list[Candidate]:
    """Search one graph collection; attach lineage and documents; apply the filters."""
    hits = await question_search(ctx, collection, k)  # the filters name text-unit fields
    if kind == "claim":  # a claim's lineage is in its own search record
        claims = (claim_from_record(IndexRecord(id=h.id, text=h.text, fields=h.fields))
                  for h in hits)  # fmt: skip
        lineage = {c.id: c.text_unit_ids for c in claims if c is not None}
    else:
        lineage = await _lineage(ctx, kind, [h.id for h in hits])
    read = [u for h in hits for u in lineage.get(h.id, ())[:_MAX_LINEAGE_READ]]
    records = await fetch_units(ctx, read)
    if ctx.filters:
        records = {u: r for u, r in records.items() if passes_filters(r.fields, ctx.filters)}
    out: list[Candidate] = []
    for hit in hits:
        units = lineage.get(hit.id, ())
        if ctx.filters and not any(u in records for u in units[:_MAX_LINEAGE_READ]):
            continue
        meta: dict[str, MetadataValue] = {
            key: value for key, value in hit.fields.items()
            if key not in ("community_id", "text_unit_ids")
        }
        title = hit.fields.get("title")
        out.append(Candidate(
            kind=kind, id=hit.id, text=hit.text, score=hit.score, text_unit_ids=units,
            title=title if isinstance(title, str) else None,
            document_ids=documents_of(units[:_MAX_LINEAGE_READ], records), metadata=meta,
        ))  # fmt: skip
    return out


def _quota(ctx: QueryContext, kind: str) -> int:
    quotas = ctx.config.quotas
    return {"text_unit": ctx.config.top_k, "entity": quotas.entity,
            "relationship": quotas.relationship, "report": quotas.report,
            "claim": quotas.claim}[kind]  # fmt: skip


@register_strategy(
    "simple",
    methodology=None,
    description="Hybrid BM25 + vector search over every index the namespace holds (passages, "
    "entities, relationships, community reports), no graph walk.",
)
class SimpleStrategy:
    """The sweep over the namespace's indexes (see the module docstring)."""

    async def retrieve(self, ctx: QueryContext) -> StrategyResult:
        """Return one bucket per swept collection that holds records (text units always).

        Each bucket holds the collection's best ``k`` hits: ``query.top_k`` text units and
        the per-type quotas (``query.quotas``) of entities, relationships and reports.

        Raises:
            StoreError: a store failed.
            EmbeddingModelError: the question could not be embedded.
        """
        search = ctx.stores.search
        swept: list[tuple[Collection, str]] = []
        for collection, kind in SWEPT:
            if _quota(ctx, kind) > 0 and (
                collection is Collection.TEXT_UNITS or await search.count(collection) > 0
            ):
                swept.append((collection, kind))

        async def one(collection: Collection, kind: str) -> list[Candidate]:
            k = _quota(ctx, kind)
            if kind == "text_unit":
                hits = await question_search(ctx, collection, k, ctx.filters)
                return [text_unit_candidate(h) for h in hits]
            return await _graph_bucket(ctx, collection, kind, k)

        empty: list[Candidate] = []
        tasks = [
            asyncio.ensure_future(ctx.section(c.value, partial(one, c, kd), empty))
            for c, kd in swept
        ]
        try:
            found: Sequence[list[Candidate]] = await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
        ctx.metadata["simple_swept"] = [c.value for c, _ in swept]
        return StrategyResult(
            buckets=[Bucket(c.value, cands) for (c, _), cands in zip(swept, found, strict=True)]
        )
