"""Strategies ``hybrid`` and ``mix``: LightRAG's dual-level keyword retrieval.

1. Keywords (`QueryContext.keywords`: the LLM's, or the raw question): the low-level ones
   search the entities index, the high-level ones the relationships index, concurrently,
   each a BM25 + vector search fused by weighted RRF (vector hits below
   ``lightrag.min_similarity`` dropped, LightRAG's cosine threshold). ``mix`` also searches
   the text units directly (as ``naive``).
2. One-hop expansion: entity hits → their incident relationships, relationship hits → their
   endpoint entities; each list is merged round robin, hits first (LightRAG's merge).
3. The chunks their lineage cites, per side, entities first: weighted polling over the
   ranked entities, then over the ranked relationships, which drop the chunks the entity
   side picked. Each side is filtered by ``ctx.filters`` and cut to ``chunks_per_side``.
4. (Not in upstream.) The cited chunks of both sides ranked by similarity to the question:
   a hybrid search restricted to their documents (stores filter on fields, not on ids),
   keeping only them. Polling knows the graph but not the question; this bucket lets the
   fusion prefer the cited chunks that also match it (MuSiQue, no LLM: `hybrid` recall@5
   0.652 with it, 0.586 without).

A side whose search fails non-fatally is degraded (``metadata["degraded"]``) while the other
still answers. Buckets (weights in ``query.lightrag``): ``entity_chunks``,
``relation_chunks``, ``linked_similarity``, ``entities``, ``relationships`` and, for ``mix``,
``chunks``. The chain fuses, cuts and packs them.

Source: Guo et al., "LightRAG: Simple and Fast Retrieval-Augmented Generation" (2024);
seed 000 §6.2 (LightRAG 1.5.7 ``_find_related_text_unit_from_entities`` / ``_from_relations``
and its ``WEIGHT`` chunk pick).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from unified_kg_rag.domain.graph.item_text import entity_text, relationship_text
from unified_kg_rag.domain.models import (
    Collection,
    Entity,
    IndexRecord,
    MetadataValue,
    Relationship,
    SearchHit,
    SearchMode,
)
from unified_kg_rag.domain.ranking.fusion import weighted_rrf
from unified_kg_rag.retrieval.strategies.base import (
    Bucket,
    Candidate,
    QueryContext,
    StrategyResult,
    register_strategy,
)
from unified_kg_rag.retrieval.strategies.naive import text_unit_candidate
from unified_kg_rag.retrieval.strategies.ppr import passes_filters

__all__ = [
    "HybridStrategy",
    "MixStrategy",
    "both_of",
    "documents_of",
    "entity_candidate",
    "fetch_units",
    "graph_search",
    "question_search",
    "relationship_candidate",
    "round_robin",
    "weighted_polling",
]

logger = logging.getLogger(__name__)

A = TypeVar("A")
B = TypeVar("B")


async def both_of(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Await two awaitables concurrently; when one raises, cancel the other and re-raise."""
    ta, tb = asyncio.ensure_future(first), asyncio.ensure_future(second)
    try:
        return await asyncio.gather(ta, tb)
    finally:
        ta.cancel()
        tb.cancel()


async def graph_search(ctx: QueryContext, collection: Collection, text: str, k: int) -> list[str]:
    """Return the ids of the ``k`` best records of a graph collection for ``text``.

    BM25 and vector search run separately (the question's vector is reused when ``text`` is
    the question) and are fused by weighted RRF with the query's weights; vector hits with a
    cosine below ``lightrag.min_similarity`` are dropped first. ``query.search_mode`` picks
    one side or both. Filters do not apply: they name text-unit fields.

    Raises:
        StoreError: the search index failed.
        EmbeddingModelError: ``text`` could not be embedded.
    """
    cfg = ctx.config
    mode = SearchMode(cfg.search_mode)
    search = ctx.stores.search
    candidate_k = max(k, cfg.candidate_k)

    async def lexical() -> list[SearchHit]:
        if mode is SearchMode.VECTOR or not text.strip():
            return []
        return await search.search(collection, query_text=text, mode=SearchMode.LEXICAL,
                                   k=candidate_k)  # fmt: skip

    async def vector() -> list[SearchHit]:
        if mode is SearchMode.LEXICAL:
            return []
        if text == ctx.question:
            query = await ctx.query_vector()
        else:
            query = await ctx.embedder.embed_query(text)
        hits = await search.search(
            collection, query_vector=query, mode=SearchMode.VECTOR, k=candidate_k
        )
        return [h for h in hits if h.score >= cfg.lightrag.min_similarity]

    lex, vec = await both_of(lexical(), vector())
    lists = [[h.id for h in lex], [h.id for h in vec]]
    fused = weighted_rrf(lists, [cfg.lexical_weight, cfg.vector_weight], k=cfg.rrf_k)
    return [item for item, _ in fused[:k]]


def round_robin(*lists: Sequence[A], key: str = "id") -> list[A]:
    """Merge ranked lists by taking one item of each in turn, dropping repeated ids.

    Source: LightRAG's merge of the local (entity) and global (relationship) results.
    """
    out: list[A] = []
    seen: set[object] = set()
    for i in range(max((len(x) for x in lists), default=0)):
        for items in lists:
            if i < len(items):
                ident = getattr(items[i], key)
                if ident not in seen:
                    seen.add(ident)
                    out.append(items[i])
    return out


def weighted_polling(
    lineages: Sequence[Sequence[str]], *, max_per_item: int, rrf_k: int
) -> list[tuple[str, float]]:
    """Rank the text units cited by ranked graph items (LightRAG's weighted polling).

    Item ``i`` (0-based, best first, of ``n``) votes for its first ``q_i`` units, ``q_i``
    falling linearly from ``max_per_item`` to 1 (rounded half up; every item at least one
    unit); each item
    orders its units by how many items cite them, then by stored order. A unit scores the sum
    of ``1 / (rrf_k + i + 1)`` over the items voting for it, so a unit several matched items
    cite ranks higher. Units no item voted for follow, by their first citing item's rank.

    Args:
        lineages: each item's cited text-unit ids, items best first.
        max_per_item: the best item's quota (``>= 1``).
        rrf_k: the vote constant (the query's RRF constant).

    Returns:
        ``(unit id, score)`` best first, each unit once (score 0 for units without a vote);
        ties by the first voting item's rank, then id.
    """
    n = len(lineages)
    support: dict[str, int] = {}
    for units in lineages:
        for unit in dict.fromkeys(units):
            support[unit] = support.get(unit, 0) + 1
    score: dict[str, float] = {}
    first: dict[str, int] = {}
    rest: dict[str, int] = {}
    for i, units in enumerate(lineages):
        fall = (max_per_item - 1) * i / (n - 1) if n > 1 else 0.0
        quota = int(max_per_item - fall + 0.5)
        ordered = sorted(dict.fromkeys(units), key=lambda u: -support[u])  # stable: stored order
        for unit in ordered[:quota]:
            score[unit] = score.get(unit, 0.0) + 1.0 / (rrf_k + i + 1)
            first.setdefault(unit, i)
        for unit in ordered[quota:]:
            rest.setdefault(unit, i)
    voted = sorted(score, key=lambda u: (-score[u], first[u], u))
    unvoted = sorted((u for u in rest if u not in score), key=lambda u: (rest[u], u))
    return [(u, score[u]) for u in voted] + [(u, 0.0) for u in unvoted]


async def fetch_units(ctx: QueryContext, ids: Sequence[str]) -> dict[str, IndexRecord]:
    """Return the stored text-unit records of ``ids`` (missing ones left out), by id.

    Raises:
        StoreError: the search index failed.
    """
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    return {r.id: r for r in await ctx.stores.search.get(Collection.TEXT_UNITS, wanted)}


def documents_of(units: Sequence[str], records: dict[str, IndexRecord]) -> tuple[str, ...]:
    """Return the documents of ``units`` that ``records`` holds, first seen first."""
    docs = (records[u].fields.get("document_id") for u in units if u in records)
    return tuple(dict.fromkeys(d for d in docs if isinstance(d, str)))


def entity_candidate(
    entity: Entity, score: float, records: dict[str, IndexRecord], found_by: str
) -> Candidate:
    """Return the context candidate of a graph entity (text as the entities index holds it).

    Args:
        entity: the graph entity.
        score: its score in its bucket.
        records: text-unit records by id; its ``document_ids`` come from those it cites.
        found_by: how the strategy reached it (metadata ``found_by``).
    """
    meta: dict[str, MetadataValue] = {"name": entity.name, "type": entity.type,
                                      "found_by": found_by}
    return Candidate(
        kind="entity", id=entity.id, score=score, metadata=meta,
        text=entity_text(entity),
        text_unit_ids=entity.text_unit_ids,
        document_ids=documents_of(entity.text_unit_ids, records),
    )  # fmt: skip


def relationship_candidate(
    rel: Relationship,
    score: float,
    names: dict[str, str],
    records: dict[str, IndexRecord],
    found_by: str,
) -> Candidate:
    """Return the context candidate of a relationship (``source TYPE target: description``).

    Args:
        rel: the graph relationship.
        score: its score in its bucket.
        names: entity id -> name, for the endpoints (the id when missing).
        records: text-unit records by id; its ``document_ids`` come from those it cites.
        found_by: how the strategy reached it (metadata ``found_by``).
    """
    src, dst = names.get(rel.source_id, rel.source_id), names.get(rel.target_id, rel.target_id)
    meta: dict[str, MetadataValue] = {
        "source_id": rel.source_id, "target_id": rel.target_id, "type": rel.type,
        "weight": rel.weight, "found_by": found_by,
    }  # fmt: skip
    return Candidate(
        kind="relationship", id=rel.id, score=score, metadata=meta,
        text=relationship_text(rel, src, dst),
        text_unit_ids=rel.text_unit_ids,
        document_ids=documents_of(rel.text_unit_ids, records),
    )  # fmt: skip


@dataclass
class _Local:
    """The entity side: matched entities and their incident relationships."""

    entities: list[Entity] = field(default_factory=list)
    incident: list[Relationship] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)


@dataclass
class _Global:
    """The relationship side: matched relationships and their endpoint entities."""

    relationships: list[Relationship] = field(default_factory=list)
    endpoints: list[Entity] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)


async def _local_side(ctx: QueryContext, text: str) -> _Local:
    lcfg = ctx.config.lightrag
    ids = await graph_search(ctx, Collection.ENTITIES, text, lcfg.entity_top_k)
    if not ids:
        return _Local()
    sub = await ctx.stores.graph.neighbourhood(
        ids, hops=1, max_entities=len(ids) + lcfg.expansion_top_k
    )
    by_id = {e.id: e for e in sub.entities}  # seeds first: never cut by max_entities
    seed_rank = {e: i for i, e in enumerate(ids)}
    incident = [
        r for r in sub.relationships if r.source_id in seed_rank or r.target_id in seed_rank
    ]
    incident.sort(key=lambda r: (
        min(seed_rank.get(r.source_id, len(ids)), seed_rank.get(r.target_id, len(ids))),
        -r.weight, r.id,
    ))  # fmt: skip
    return _Local(
        entities=[by_id[i] for i in ids if i in by_id],
        incident=incident[: lcfg.expansion_top_k],
        names={e.id: e.name for e in by_id.values()},
    )


async def _global_side(ctx: QueryContext, text: str) -> _Global:
    lcfg = ctx.config.lightrag
    ids = await graph_search(ctx, Collection.RELATIONSHIPS, text, lcfg.relationship_top_k)
    if not ids:
        return _Global()
    rels = await ctx.stores.graph.get_relationships(ids)
    ends = list(dict.fromkeys(e for r in rels for e in (r.source_id, r.target_id)))
    endpoints = await ctx.stores.graph.get_entities(ends)
    names = {e.id: e.name for e in endpoints}
    return _Global(relationships=rels, endpoints=endpoints[: lcfg.expansion_top_k], names=names)


async def question_search(
    ctx: QueryContext,
    collection: Collection,
    k: int,
    filters: Mapping[str, MetadataValue | Sequence[MetadataValue]] | None = None,
) -> list[SearchHit]:
    """Search ``collection`` for the question with the query's mode, weights and RRF constant.

    Raises:
        StoreError: the search index failed.
        EmbeddingModelError: the question could not be embedded.
    """
    cfg = ctx.config
    mode = SearchMode(cfg.search_mode)
    return await ctx.stores.search.search(
        collection,
        query_text=ctx.question,
        query_vector=await ctx.query_vector() if mode is not SearchMode.LEXICAL else None,
        mode=mode, filters=filters or None, k=k, candidate_k=max(cfg.candidate_k, k),
        lexical_weight=cfg.lexical_weight, vector_weight=cfg.vector_weight, rrf_k=cfg.rrf_k,
    )  # fmt: skip


async def _by_similarity(
    ctx: QueryContext, pool: Sequence[str], records: dict[str, IndexRecord]
) -> list[SearchHit]:
    """Rank the cited chunks ``pool`` by a search of the question restricted to their documents."""
    docs = list(documents_of(pool, records))
    if not docs:
        return []
    wanted = set(pool)
    filters: dict[str, MetadataValue | Sequence[MetadataValue]] = {**ctx.filters}
    filters["document_id"] = docs  # the pool passed the caller's filters already
    # the documents' other units compete for the places too: read more than the pool
    hits = await question_search(ctx, Collection.TEXT_UNITS, min(4 * len(pool), 1000), filters)
    return [h for h in hits if h.id in wanted]


def _unit_candidates(
    ranked: Sequence[tuple[str, float]], records: dict[str, IndexRecord], k: int
) -> list[Candidate]:
    out: list[Candidate] = []
    for unit, score in ranked:
        record = records.get(unit)
        if record is not None:
            out.append(text_unit_candidate(
                SearchHit(id=unit, score=score, text=record.text, fields=record.fields)
            ))  # fmt: skip
            if len(out) >= k:
                break
    return out


@dataclass
class _Linked:
    """The cited chunks of both sides, and the graph items left after the filters."""

    entity_chunks: list[Candidate]
    relation_chunks: list[Candidate]
    pool: list[str]
    records: dict[str, IndexRecord]
    entities: list[Entity]
    relationships: list[Relationship]


async def _linked_chunks(
    ctx: QueryContext, entities: list[Entity], relationships: list[Relationship]
) -> _Linked:
    """Pick each side's cited chunks, entities first, and apply ``ctx.filters``."""
    lcfg = ctx.config.lightrag
    votes = {"max_per_item": lcfg.max_chunks_per_item, "rrf_k": ctx.config.rrf_k}
    by_entity = weighted_polling([e.text_unit_ids for e in entities], **votes)
    by_relation = weighted_polling([r.text_unit_ids for r in relationships], **votes)
    by_entity, by_relation = by_entity[: lcfg.linked_pool], by_relation[: lcfg.linked_pool]
    pool = list(dict.fromkeys([u for u, _ in by_entity] + [u for u, _ in by_relation]))
    lineage = [u for e in entities for u in e.text_unit_ids]
    lineage += [u for r in relationships for u in r.text_unit_ids]
    records = await fetch_units(ctx, pool + lineage if ctx.filters else pool)
    if ctx.filters:  # a graph item stays only when a unit it cites passes the filters
        records = {u: r for u, r in records.items() if passes_filters(r.fields, ctx.filters)}
        entities = [e for e in entities if any(u in records for u in e.text_unit_ids)]
        relationships = [r for r in relationships if any(u in records for u in r.text_unit_ids)]
    entity_chunks = _unit_candidates(by_entity, records, lcfg.chunks_per_side)
    picked = {c.id for c in entity_chunks}
    relation_chunks = _unit_candidates(
        [(u, s) for u, s in by_relation if u not in picked], records, lcfg.chunks_per_side
    )
    return _Linked(entity_chunks, relation_chunks, [u for u in pool if u in records], records,
                   entities, relationships)  # fmt: skip


class _LightRAG:
    """LightRAG retrieval; ``direct`` adds the naive chunk retrieval (``mix``)."""

    direct = False

    async def retrieve(self, ctx: QueryContext) -> StrategyResult:
        """Return LightRAG's buckets for the question (see the module docstring).

        Raises:
            StoreError: a store failed.
            EmbeddingModelError: the question or keywords could not be embedded.
        """
        lcfg = ctx.config.lightrag
        kw = await ctx.keywords()
        low, high = ", ".join(kw.low), ", ".join(kw.high)

        async def sides() -> tuple[_Local, _Global]:
            return await both_of(
                ctx.section("entities", lambda: _local_side(ctx, low), _Local()),
                ctx.section("relationships", lambda: _global_side(ctx, high), _Global()),
            )

        async def direct() -> list[SearchHit]:
            if not self.direct:
                return []
            k = max(ctx.config.top_k, lcfg.chunks_per_side)
            return await ctx.section(
                "chunks", lambda: question_search(ctx, Collection.TEXT_UNITS, k, ctx.filters), []
            )

        (local, glob), direct_hits = await both_of(sides(), direct())
        linked = await _linked_chunks(
            ctx,
            round_robin(local.entities, glob.endpoints),
            round_robin(glob.relationships, local.incident),
        )
        similar: list[SearchHit] = []
        if lcfg.similarity_weight > 0 and linked.pool:
            similar = await ctx.section(
                "linked_similarity", lambda: _by_similarity(ctx, linked.pool, linked.records), []
            )
        ctx.metadata["lightrag"] = {
            "keywords": {"high": list(kw.high), "low": list(kw.low), "source": kw.source},
            "matched_entities": len(local.entities),
            "matched_relationships": len(glob.relationships),
        }
        names, records = {**local.names, **glob.names}, linked.records
        matched = {e.id for e in local.entities} | {r.id for r in glob.relationships}
        buckets = [
            Bucket("entity_chunks", linked.entity_chunks, lcfg.linked_chunk_weight),
            Bucket("relation_chunks", linked.relation_chunks, lcfg.relation_chunk_weight),
            Bucket("linked_similarity",
                   [text_unit_candidate(h) for h in similar[: lcfg.chunks_per_side]],
                   lcfg.similarity_weight),
            Bucket("entities", [
                entity_candidate(e, 1 / (i + 1), records,
                                 "keywords" if e.id in matched else "relationship endpoint")
                for i, e in enumerate(linked.entities)]),
            Bucket("relationships", [
                relationship_candidate(r, 1 / (i + 1), names, records,
                                       "keywords" if r.id in matched else "entity edge")
                for i, r in enumerate(linked.relationships)]),
        ]  # fmt: skip
        if self.direct:
            hits = [text_unit_candidate(h) for h in direct_hits]
            buckets.append(Bucket("chunks", hits, lcfg.direct_chunk_weight))
        return StrategyResult(buckets=buckets)


@register_strategy(
    "hybrid",
    methodology="lightrag",
    description="LightRAG hybrid: specific names to the entities index, themes to the "
    "relationships index, one-hop expansion and the passages they cite (no direct passage "
    "search).",
)
class HybridStrategy(_LightRAG):
    """LightRAG's ``hybrid`` mode (see the module docstring)."""

    direct = False


@register_strategy(
    "mix",
    methodology="lightrag",
    description="LightRAG mix: the knowledge-graph retrieval of `hybrid` plus a direct "
    "passage search; a good default for questions about named entities and their facts.",
)
class MixStrategy(_LightRAG):
    """LightRAG's ``mix`` mode: ``hybrid`` plus direct chunk retrieval."""

    direct = True
