"""Strategy ``local``: GraphRAG local search (seed 000 §6.1).

Query entities → seed entities → k-hop expansion in the graph store → the text units the
expanded entities and their relationships cite, the relationships among them and community
reports, each returned as a ranked bucket for the chain to fuse:

1. **Seeds.** Each query entity, and the question itself (``question_lookup``), is looked up
   in the entities index on its own, concurrently (one lookup of the joined names seeded a
   wrong neighbour beside every right seed). The hits sharing its `compact_name_key` seed
   the expansion; else its top hit, when that scores at least ``seed_score_ratio`` of the
   best top hit of any lookup (`seed_floor`).
2. **Expansion.** One `GraphStore.neighbourhood` call per seed, its budget
   ``max_entities`` × its share of the seed scores (at least 1). A reached entity weighs
   ``seed score × neighbour_decay^hops``, summed over the seeds reaching it.
3. **Text units.** The units the expanded entities (and the relationships among them) cite,
   ranked twice: by *support* (each citing item adds its weight, damped by how many units it
   cites) and by *similarity* to the question (a hybrid search restricted to the cited
   units' documents). Two buckets, fused by the chain (`support_weight`, `similarity_weight`).
4. **Entities, relationships** (seed–seed edges first: they carry the hops of a multi-hop
   chain, then seed–reached, then the rest, by weight) and **reports** (`local_reports`:
   those of the expanded entities' communities, deepest first, then the most similar to the
   query entities; or only the most similar).
5. **Claims** (an index built with claim extraction; GraphRAG's covariates): the claims whose
   subject is an expanded entity, ranked by a search of the ``claims`` collection for the
   question (``claim_candidates``), each citing the text units that state it. An index
   without claims is not searched (one count), so its output is unchanged.

Every sub-search runs through `QueryContext.section`: one that fails non-fatally degrades
only its own bucket. Filters restrict the text units (and drop graph items none of whose
cited units pass them).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from unified_kg_rag.domain.graph.claims import claim_from_record
from unified_kg_rag.domain.graph.item_text import entity_text, relationship_text
from unified_kg_rag.domain.graph.name_matching import compact_name_key
from unified_kg_rag.domain.models import (
    Collection,
    Entity,
    IndexRecord,
    Relationship,
    SearchHit,
    SearchMode,
    Subgraph,
)
from unified_kg_rag.retrieval.strategies.base import (
    Bucket,
    Candidate,
    QueryContext,
    StrategyResult,
    register_strategy,
)
from unified_kg_rag.retrieval.strategies.local_reports import (
    PendingReports,
    report_bucket,
    report_candidate,
)
from unified_kg_rag.retrieval.strategies.naive import text_unit_candidate
from unified_kg_rag.retrieval.strategies.ppr import passes_filters

__all__ = [
    "LocalStrategy",
    "report_bucket",
    "report_candidate",
    "seed_floor",
    "seed_shares",
]

logger = logging.getLogger(__name__)

_SIMILARITY_POOL = 1000
"""Most cited units (best supported first) ranked by similarity to the question."""


def seed_floor(
    best: float, ratio: float, *, mode: SearchMode, lexical_weight: float, vector_weight: float
) -> float:
    """Return the score a query entity's top hit needs to seed without a name match.

    On a hybrid (weighted RRF) search the ratio is read at equal weights, where a hit only
    the vector side found scores at most 0.5 of one both sides found; it is rescaled
    piecewise linearly so that 0.5 lands on ``vector_weight / (lexical_weight +
    vector_weight)``, that hit's cap at the configured weights. Other modes compare raw
    scores: ``ratio × best``.

    Args:
        best: the best top-hit score of any query entity.
        ratio: ``local_search.seed_score_ratio`` in [0, 1].
        mode: the search mode the scores come from.
        lexical_weight: RRF weight of the BM25 list.
        vector_weight: RRF weight of the vector list.

    Source: seed 000 §6.1 (``seed_floor``).
    """
    total = lexical_weight + vector_weight
    if mode is not SearchMode.HYBRID or total <= 0:
        return ratio * best
    knee = vector_weight / total
    scaled = ratio * 2 * knee if ratio <= 0.5 else knee + (ratio - 0.5) * 2 * (1 - knee)
    return scaled * best


def seed_shares(scores: Sequence[float], budget: int) -> list[int]:
    """Split an entity budget among seeds in proportion to their scores, each at least 1.

    Args:
        scores: the seed scores (non-negative; all zero splits evenly).
        budget: ``local_search.max_entities``.

    Returns:
        One share per seed; they sum to at least ``budget`` when rounding or the minimum of
        1 per seed requires.
    """
    if not scores:
        return []
    total = sum(max(s, 0.0) for s in scores)
    if total <= 0:
        return [max(1, budget // len(scores))] * len(scores)
    return [max(1, round(budget * max(s, 0.0) / total)) for s in scores]


@dataclass
class _Expansion:
    """The expanded entities (seeds first), their weights, and the seed scores."""

    entities: list[Entity] = field(default_factory=list)
    weight: dict[str, float] = field(default_factory=dict)
    seeds: dict[str, float] = field(default_factory=dict)


def _hops(sub: Subgraph, seed: str) -> dict[str, int]:
    """Return the hop distance of each entity of ``sub`` from ``seed`` (its BFS layers)."""
    adjacent: dict[str, list[str]] = {}
    for rel in sub.relationships:
        adjacent.setdefault(rel.source_id, []).append(rel.target_id)
        adjacent.setdefault(rel.target_id, []).append(rel.source_id)
    dist, queue = {seed: 0}, deque([seed])
    while queue:
        node = queue.popleft()
        for nxt in adjacent.get(node, ()):
            if nxt not in dist:
                dist[nxt] = dist[node] + 1
                queue.append(nxt)
    return dist


@register_strategy(
    "local",
    methodology="graphrag",
    description="GraphRAG local search: query entities seed a k-hop graph expansion; the text "
    "units, relationships and community reports around them.",
)
class LocalStrategy:
    """GraphRAG local search (see the module docstring)."""

    async def retrieve(self, ctx: QueryContext) -> StrategyResult:
        """Return the text-unit, entity, relationship and report buckets for the question.

        Raises:
            StoreError: a store failed (never reported as "no results").
            EmbeddingModelError: a query entity could not be embedded.
        """
        names = await ctx.query_entities()
        cfg = ctx.config.local_search
        ctx.metadata["report_selection"] = cfg.report_selection
        ctx.metadata["query_entities"] = list(names)

        async def chain() -> tuple[_Expansion, list[Relationship]]:
            none: dict[str, float] = {}
            seeds = await ctx.section("entities", lambda: self._seeds(ctx, names), none)
            ctx.metadata["seed_entities"] = list(seeds)
            expansion = await ctx.section(
                "expansion", lambda: self._expand(ctx, seeds), _Expansion(seeds=seeds)
            )
            ids = [e.id for e in expansion.entities]
            no_rels: list[Relationship] = []
            rels = await ctx.section(
                "relationships", lambda: ctx.stores.graph.edges_within(ids), no_rels
            ) if ids else no_rels  # fmt: skip
            return expansion, rels

        # the report reads that need no expanded entity run beside the expansion
        pending = PendingReports(ctx, names)
        try:
            expansion, rels = await chain()
            ids = [e.id for e in expansion.entities]
            reports = await ctx.section("reports", lambda: pending.bucket(ids), None)
        finally:
            pending.settle()
        nothing: tuple[list[Bucket], dict[str, IndexRecord]] = ([], {})
        units, records = await ctx.section(
            "text_units", lambda: self._text_units(ctx, expansion, rels), nothing
        )
        buckets = [*units, *self._graph_buckets(ctx, expansion, rels, records)]
        if reports is not None:
            buckets.append(reports)
        no_claims: list[Candidate] = []
        claims = await ctx.section("claims", lambda: self._claims(ctx, expansion, records),
                                   no_claims)  # fmt: skip
        if claims:
            buckets.append(Bucket("claims", claims))
        return StrategyResult(buckets=buckets)

    async def _claims(
        self, ctx: QueryContext, expansion: _Expansion, records: dict[str, IndexRecord]
    ) -> list[Candidate]:
        """Return the claims about the expanded entities, most similar to the question first.

        Under filters, a claim none of whose text units passes them is left out.
        """
        q, k = ctx.config, ctx.config.local_search.claim_candidates
        ids = [e.id for e in expansion.entities]
        if not ids or k == 0 or not await ctx.stores.search.count(Collection.CLAIMS):
            return []
        mode = SearchMode(q.search_mode)
        hits = await ctx.stores.search.search(
            Collection.CLAIMS, query_text=ctx.question,
            query_vector=None if mode is SearchMode.LEXICAL else await ctx.query_vector(),
            mode=mode, filters={"subject_id": ids}, k=k, candidate_k=max(k, q.candidate_k),
            lexical_weight=q.lexical_weight, vector_weight=q.vector_weight, rrf_k=q.rrf_k,
        )  # fmt: skip
        out: list[Candidate] = []
        for hit in hits:
            claim = claim_from_record(IndexRecord(id=hit.id, text=hit.text, fields=hit.fields))
            if claim is None or (ctx.filters and not any(
                u in records for u in claim.text_unit_ids
            )):  # fmt: skip
                continue
            docs = (records[u].fields.get("document_id") for u in claim.text_unit_ids
                    if u in records)  # fmt: skip
            out.append(Candidate(
                kind="claim", id=claim.id, text=hit.text, score=hit.score,
                text_unit_ids=claim.text_unit_ids,
                document_ids=tuple(dict.fromkeys(d for d in docs if isinstance(d, str))),
                metadata={"subject_id": claim.subject_id, "object_id": claim.object_id,
                          "type": claim.type, "status": claim.status,
                          "start_date": claim.start_date, "end_date": claim.end_date},
            ))  # fmt: skip
        return out

    # ------------------------------------------------------------------ seeds

    async def _seeds(self, ctx: QueryContext, names: Sequence[str]) -> dict[str, float]:
        """Return ``entity id -> seed score`` for the query entities (best first)."""
        cfg, q = ctx.config.local_search, ctx.config
        mode = SearchMode(q.search_mode)

        async def lookup(name: str) -> list[SearchHit]:
            vector = None
            if mode is not SearchMode.LEXICAL:
                vector = (await ctx.query_vector() if name == ctx.question
                          else await ctx.embedder.embed_query(name))  # fmt: skip
            return await ctx.stores.search.search(
                Collection.ENTITIES, query_text=name, query_vector=vector, mode=mode,
                k=cfg.entity_candidates, candidate_k=max(q.candidate_k, cfg.entity_candidates),
                lexical_weight=q.lexical_weight, vector_weight=q.vector_weight, rrf_k=q.rrf_k,
            )  # fmt: skip

        lookups = list(dict.fromkeys(names))
        if cfg.question_lookup and ctx.question not in lookups:
            lookups.append(ctx.question)
        results = await asyncio.gather(*(lookup(n) for n in lookups))
        tops = [hits[0].score for hits in results if hits]
        if not tops:
            return {}
        floor = seed_floor(max(tops), cfg.seed_score_ratio, mode=mode,
                           lexical_weight=q.lexical_weight, vector_weight=q.vector_weight)
        seeds: dict[str, float] = {}
        for name, hits in zip(lookups, results, strict=True):
            key = compact_name_key(name)
            matched = [h for h in hits if compact_name_key(str(h.fields.get("name", ""))) == key]
            if not matched and hits and hits[0].score >= floor:
                matched = [hits[0]]
            for hit in matched:
                seeds[hit.id] = max(seeds.get(hit.id, 0.0), hit.score)
        return dict(sorted(seeds.items(), key=lambda kv: (-kv[1], kv[0])))

    # -------------------------------------------------------------- expansion

    async def _expand(self, ctx: QueryContext, seeds: dict[str, float]) -> _Expansion:
        """Expand each seed on its own share of the budget; merge, seeds first."""
        if not seeds:
            return _Expansion()
        cfg = ctx.config.local_search
        seed_ids = list(seeds)
        shares = seed_shares([seeds[s] for s in seed_ids], cfg.max_entities)
        subs = await asyncio.gather(*(
            ctx.stores.graph.neighbourhood([s], hops=cfg.max_hops, max_entities=n)
            for s, n in zip(seed_ids, shares, strict=True)
        ))  # fmt: skip
        entities: dict[str, Entity] = {}
        weight: dict[str, float] = {}
        first_seen: dict[str, tuple[int, int]] = {}
        for i, (seed, sub) in enumerate(zip(seed_ids, subs, strict=True)):
            hops = _hops(sub, seed)
            for pos, entity in enumerate(sub.entities):
                entities.setdefault(entity.id, entity)
                first_seen.setdefault(entity.id, (pos, i))
                if entity.id in seeds:
                    continue
                gain = seeds[seed] * cfg.neighbour_decay ** hops.get(entity.id, cfg.max_hops)
                weight[entity.id] = weight.get(entity.id, 0.0) + gain
        stored_seeds = [s for s in seed_ids if s in entities]
        reached = sorted(
            (e for e in entities if e not in seeds),
            key=lambda e: (-weight[e], first_seen[e], e),
        )
        weight.update({s: seeds[s] for s in stored_seeds})
        return _Expansion(
            entities=[entities[e] for e in [*stored_seeds, *reached][: cfg.max_entities]],
            weight=weight,
            seeds=seeds,
        )

    # ------------------------------------------------------------- text units

    async def _text_units(
        self, ctx: QueryContext, expansion: _Expansion, rels: Sequence[Relationship]
    ) -> tuple[list[Bucket], dict[str, IndexRecord]]:
        """Return the support and similarity buckets, and the records of the cited units."""
        cfg = ctx.config.local_search
        damping = cfg.lineage_damping
        support: dict[str, float] = {}
        citing: dict[str, int] = {}
        order: dict[str, int] = {}

        def cite(units: Sequence[str], weight: float, count: bool) -> None:
            share = weight / max(len(units), 1) ** damping
            for unit in units:
                order.setdefault(unit, len(order))
                support[unit] = support.get(unit, 0.0) + share
                citing[unit] = citing.get(unit, 0) + int(count)

        for entity in expansion.entities:
            cite(entity.text_unit_ids, expansion.weight.get(entity.id, 0.0), True)
        for rel in rels:
            ends = min(expansion.weight.get(rel.source_id, 0.0),
                       expansion.weight.get(rel.target_id, 0.0))
            cite(rel.text_unit_ids, cfg.neighbour_decay * ends, False)
        ranked = sorted(support, key=lambda u: (-support[u], -citing[u], order[u]))
        fetched = await ctx.stores.search.get(Collection.TEXT_UNITS, ranked)
        records = {r.id: r for r in fetched}
        passing = [u for u in ranked if u in records
                   and (not ctx.filters or passes_filters(records[u].fields, ctx.filters))]
        hits = {u: SearchHit(id=u, score=support[u], text=records[u].text, fields=records[u].fields)
                for u in passing}  # fmt: skip
        support_bucket = Bucket(
            "support",
            [text_unit_candidate(hits[u]) for u in passing[: cfg.text_unit_candidates]],
            cfg.support_weight,
        )
        none: list[Candidate] = []
        similar = await ctx.section(
            "similarity", lambda: self._similar(ctx, passing, records), none
        )
        buckets = [support_bucket, Bucket("similarity", similar, cfg.similarity_weight)]
        if cfg.direct_weight > 0 or not expansion.entities:
            direct = await ctx.section("direct", lambda: self._search_units(ctx, None), none)
            if not expansion.entities:
                ctx.metadata["local_fallback"] = "no entity found: text units by hybrid search"
            buckets.append(Bucket("direct", direct, cfg.direct_weight or 1.0))
        return buckets, {u: records[u] for u in passing}

    async def _similar(
        self, ctx: QueryContext, passing: Sequence[str], records: dict[str, IndexRecord]
    ) -> list[Candidate]:
        """Rank the cited units by similarity to the question.

        The store filters on stored fields, not ids, so the search is restricted to the cited
        units' documents and its hits are intersected with the cited set.
        """
        pool = list(passing[:_SIMILARITY_POOL])
        if not pool:
            return []
        docs = list(dict.fromkeys(records[u].fields.get("document_id") for u in pool))
        cited = set(pool)
        if any(not isinstance(d, str) for d in docs):  # no document field: search everything
            hits = await self._search_units(ctx, None, k=max(4 * len(pool), 200))
        else:
            hits = await self._search_units(ctx, docs, k=max(4 * len(pool), 50))
        return [h for h in hits if h.id in cited][: ctx.config.local_search.text_unit_candidates]

    async def _search_units(
        self, ctx: QueryContext, documents: Sequence[object] | None, *, k: int | None = None
    ) -> list[Candidate]:
        """Hybrid (per ``query.search_mode``) search over text units under the filters."""
        q = ctx.config
        mode = SearchMode(q.search_mode)
        filters = dict(ctx.filters)
        if documents is not None:
            filters["document_id"] = [d for d in documents if isinstance(d, str)]
        k = k or q.local_search.text_unit_candidates
        hits = await ctx.stores.search.search(
            Collection.TEXT_UNITS, query_text=ctx.question,
            query_vector=None if mode is SearchMode.LEXICAL else await ctx.query_vector(),
            mode=mode, filters=filters or None, k=k, candidate_k=max(k, q.candidate_k),
            lexical_weight=q.lexical_weight, vector_weight=q.vector_weight, rrf_k=q.rrf_k,
        )  # fmt: skip
        return [text_unit_candidate(h) for h in hits]

    # ---------------------------------------------------------- graph buckets

    def _graph_buckets(
        self,
        ctx: QueryContext,
        expansion: _Expansion,
        rels: Sequence[Relationship],
        records: dict[str, IndexRecord],
    ) -> list[Bucket]:
        """Return the entities and relationships buckets.

        Under filters, an item none of whose cited units passes them is left out.
        """

        def documents(units: Sequence[str]) -> tuple[str, ...]:
            docs = (records[u].fields.get("document_id") for u in units if u in records)
            return tuple(dict.fromkeys(d for d in docs if isinstance(d, str)))

        def kept(units: Sequence[str]) -> bool:
            return not ctx.filters or any(u in records for u in units)

        entities = [
            Candidate(kind="entity", id=e.id, text=entity_text(e),
                      score=expansion.weight.get(e.id, 0.0), text_unit_ids=e.text_unit_ids,
                      document_ids=documents(e.text_unit_ids),
                      metadata={"name": e.name, "type": e.type, "seed": e.id in expansion.seeds})
            for e in expansion.entities if kept(e.text_unit_ids)
        ]  # fmt: skip
        if not ctx.config.local_search.include_bridge_relationships:
            return [Bucket("entities", entities)]
        names = {e.id: e.name for e in expansion.entities}
        seeds = expansion.seeds

        def tier(rel: Relationship) -> int:
            return 2 - (rel.source_id in seeds) - (rel.target_id in seeds)

        ordered = sorted(rels, key=lambda r: (tier(r), -r.weight, r.id))
        relationships = [
            Candidate(kind="relationship", id=r.id,
                      text=relationship_text(r, names.get(r.source_id, r.source_id),
                                             names.get(r.target_id, r.target_id)),
                      score=r.weight, text_unit_ids=r.text_unit_ids,
                      document_ids=documents(r.text_unit_ids),
                      metadata={"source_id": r.source_id, "target_id": r.target_id,
                                "type": r.type, "weight": r.weight})
            for r in ordered if kept(r.text_unit_ids)
        ]  # fmt: skip
        return [Bucket("entities", entities), Bucket("relationships", relationships)]
