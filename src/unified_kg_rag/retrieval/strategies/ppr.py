"""Strategy ``ppr``: HippoRAG 2's personalized PageRank over the graph the index holds.

Two graphs can serve it (``query.ppr.graph``):

- **concepts** (the LLM-free `lazy` graph): the whole passage-concept graph is walked. The
  reset vector is the top passage hits of a dense search weighted
  ``exp(sharpness * (s - s_max))``, in hybrid mode the top BM25 hits weighted
  ``lexical_seed_weight * exp(lexical_seed_sharpness * (s / s_max - 1))``
  (`domain.ranking.ppr.lexical_seed_weights`), plus the question's n-grams that are
  concepts, weighted ``concept_weight * n / log(1 + df)``; passages are ranked by PPR mass
  (issue #5, the prototype's recipe; defaults chosen by leave-one-dataset-out over MuSiQue
  and the GraphRAG-Bench novels in ``benchmarks/bench_defaults.py``, issue 19).
- **entities** (the LLM graph, `hipporag`/`lightrag` artefacts): seed 000 §6.4. Facts (the
  relationships most similar to the question) and passage hits seed; the graph is the
  facts' endpoints expanded ``max_hops`` deep (at most ``max_entities``), their
  relationships, and entity-passage links of entities citing at most
  ``entity_frequency_threshold`` units; the reset vector is HippoRAG 2's
  (`domain.ranking.ppr.hipporag_reset`).

A question that seeds nothing ranks the passage hits in their own order (no NaN: a zero-mass
reset gives zero scores). Optional RRF fusion with the passage hits
(``query.ppr.fusion_weight``).
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.domain.concepts.graph import ConceptGraph
from unified_kg_rag.domain.index.meta import (
    CONCEPT_COMMUNITIES_KEY,
    CONCEPT_GRAPH_KEY,
    INDEX_NAMESPACE,
    LAZY_BUILD_KEY,
    LAZY_NAMESPACE,
    decode_concept_graph,
)
from unified_kg_rag.domain.models import (
    Collection,
    Community,
    MetadataValue,
    SearchHit,
    SearchMode,
)
from unified_kg_rag.domain.ranking.fusion import weighted_rrf
from unified_kg_rag.domain.ranking.ppr import (
    build_passage_graph,
    hipporag_reset,
    lexical_seed_weights,
    personalized_pagerank,
)
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.strategies.base import (
    BuildCache,
    Candidate,
    QueryContext,
    register_strategy,
)
from unified_kg_rag.retrieval.strategies.naive import text_unit_candidate
from unified_kg_rag.util.errors import MethodologyNotIndexedError

__all__ = ["LoadedConceptGraph", "PPRStrategy", "load_concept_graph", "passes_filters"]


@dataclass(frozen=True)
class LoadedConceptGraph:
    """A concept graph ready for queries.

    Attributes:
        graph: the stored concept graph.
        adjacency: ``csr[U + C, U + C]``, units first, then concepts (symmetric).
        unit_index: text unit id → row.
        communities: the concept communities (level 0 = top).
    """

    graph: ConceptGraph
    adjacency: object
    unit_index: dict[str, int]
    communities: tuple[Community, ...]


async def load_concept_graph(
    stores: IndexStores, cache: BuildCache[LoadedConceptGraph]
) -> LoadedConceptGraph | None:
    """Return the index's concept graph, or None when it has none.

    Args:
        stores: the index's stores.
        cache: loaded graphs by index and build digest (the `App`'s, or the chain's own).

    Raises:
        StoreError: a store failed.
        StoreSchemaError: the stored graph has an unknown format version.
    """
    digest = await stores.records.get(INDEX_NAMESPACE, LAZY_BUILD_KEY)
    if digest is None:
        return None
    cached = cache.get(stores.name, digest)
    if cached is not None:
        return cached
    raw = await stores.records.get(LAZY_NAMESPACE, CONCEPT_GRAPH_KEY)
    if raw is None:
        return None
    raw_communities = await stores.records.get(LAZY_NAMESPACE, CONCEPT_COMMUNITIES_KEY)
    loaded = await asyncio.to_thread(_prepare, raw, raw_communities)
    cache.put(stores.name, digest, loaded)
    return loaded


def _prepare(raw: str, raw_communities: str | None) -> LoadedConceptGraph:
    import scipy.sparse as sp  # type: ignore[import-untyped]

    graph = decode_concept_graph(raw)
    n_units, n_concepts = len(graph.unit_ids), len(graph.concepts)
    incidence = sp.csr_matrix(
        (np.asarray(graph.weight, dtype=np.float64),
         (np.asarray(graph.unit_index), np.asarray(graph.concept_index))),
        shape=(n_units, n_concepts),
    )  # fmt: skip
    adjacency = sp.bmat([[None, incidence], [incidence.T, None]], format="csr")
    if adjacency.shape != (n_units + n_concepts, n_units + n_concepts):  # empty corners
        adjacency = sp.csr_matrix((n_units + n_concepts, n_units + n_concepts))
    communities = tuple(
        Community.model_validate(c) for c in json.loads(raw_communities or "[]")
    )
    return LoadedConceptGraph(
        graph, adjacency, {u: i for i, u in enumerate(graph.unit_ids)}, communities
    )


def passes_filters(
    fields: Mapping[str, MetadataValue], filters: Mapping[str, MetadataValue | Sequence[object]]
) -> bool:
    """True when ``fields`` satisfy equality filters (a sequence value means any of them)."""
    for key, wanted in filters.items():
        value = fields.get(key)
        if isinstance(wanted, (list, tuple)):
            if value not in wanted:
                return False
        elif value != wanted:
            return False
    return True


@register_strategy(
    "ppr",
    methodology=("hipporag", "lazy"),
    description="HippoRAG 2 personalized PageRank over the entity graph or the LLM-free "
    "concept graph, seeded by facts, question concepts and passage hits.",
)
class PPRStrategy:
    """Personalized PageRank retrieval (see the module docstring)."""

    async def retrieve(self, ctx: QueryContext) -> list[Candidate]:
        """Return the ``top_k`` text units by PPR mass, best first.

        ``query.search_mode`` decides the passage seeds: ``vector`` seeds by embedding
        similarity; ``lexical`` by BM25 rank; ``hybrid`` (default) by both, the BM25 hits
        weighted relative to the best BM25 score (``lexical_seed_weight``,
        ``lexical_seed_sharpness``), so an exact keyword (a part number, a rare name) seeds
        its passage; ``lexical_fusion_weight`` can also fuse the BM25 hits into the order.

        Raises:
            MethodologyNotIndexedError: ``query.ppr.graph`` names a graph the index lacks.
        """
        return await _candidates(ctx, await self.ranked_units(ctx))

    async def ranked_units(self, ctx: QueryContext) -> list[tuple[str, float]]:
        """Return up to ``4 * top_k`` ``(text unit id, score)``, best first, before filters.

        The order `retrieve` keeps (filters applied, cut to ``top_k``); the score is the PPR
        mass, the fused RRF score with fusion on, or the passage hit's score when no seed
        reached the graph. The ``ppr`` pipeline stage reads it.

        Raises:
            MethodologyNotIndexedError: ``query.ppr.graph`` names a graph the index lacks.
        """
        cfg = ctx.config.ppr
        use_entities = self._graph(ctx)
        mode = SearchMode(ctx.config.search_mode)
        lexical_only, vector_only = mode == SearchMode.LEXICAL, mode == SearchMode.VECTOR
        vector_hits = [] if lexical_only else await self._search(ctx, SearchMode.VECTOR)
        lexical_hits = [] if vector_only else await self._search(ctx, SearchMode.LEXICAL)
        seeds = vector_hits or lexical_hits
        sharpness = cfg.entity_passage_sharpness if use_entities else cfg.passage_seed_sharpness
        weights = _seed_weights(seeds, sharpness, vector=bool(vector_hits))
        if vector_hits and lexical_hits and cfg.lexical_seed_weight > 0:
            lexical = lexical_seed_weights([h.score for h in lexical_hits],
                                           cfg.lexical_seed_sharpness)  # fmt: skip
            for hit, weight in zip(lexical_hits, lexical, strict=True):
                weights[hit.id] = weights.get(hit.id, 0.0) + cfg.lexical_seed_weight * weight
        if use_entities:
            ranked = await self._entity_ppr(ctx, weights)
        else:
            loaded = await load_concept_graph(ctx.stores, ctx.concept_graphs)
            ranked = self._concept_ppr(ctx, loaded, weights) if loaded is not None else []
        lists, list_weights = [[u for u, _ in ranked]], [1.0]
        if cfg.fusion_weight > 0 and vector_hits:
            lists.append([h.id for h in vector_hits])
            list_weights.append(cfg.fusion_weight)
        if cfg.lexical_fusion_weight > 0 and lexical_hits and mode == SearchMode.HYBRID:
            lists.append([h.id for h in lexical_hits])
            list_weights.append(cfg.lexical_fusion_weight)
        if ranked and len(lists) > 1:
            ranked = weighted_rrf(lists, list_weights, k=ctx.config.rrf_k)
        if not ranked:
            ranked = [(h.id, h.score) for h in seeds]
        return ranked

    def _graph(self, ctx: QueryContext) -> bool:
        """True for the entity graph, False for the concept graph (as configured and held)."""
        choice = ctx.config.ppr.graph
        if choice == "auto":
            return "hipporag" in ctx.held
        needed = "hipporag" if choice == "entities" else "lazy"
        if needed not in ctx.held:
            name = ctx.stores.name
            raise MethodologyNotIndexedError(
                f"query.ppr.graph is {choice!r}, which needs the {needed!r} methodology; index "
                f"{name!r} holds: {', '.join(ctx.held) or 'text units only'}",
                index=name,
                held=ctx.held,
            )
        return choice == "entities"

    async def _search(self, ctx: QueryContext, mode: SearchMode) -> list[SearchHit]:
        return await ctx.stores.search.search(
            Collection.TEXT_UNITS,
            query_text=ctx.question if mode == SearchMode.LEXICAL else None,
            query_vector=await ctx.query_vector() if mode == SearchMode.VECTOR else None,
            mode=mode,
            filters=ctx.filters or None,
            k=ctx.config.ppr.passage_seed_top_k,
        )

    def _concept_ppr(
        self, ctx: QueryContext, loaded: LoadedConceptGraph, seeds: Mapping[str, float]
    ) -> list[tuple[str, float]]:
        cfg = ctx.config.ppr
        graph = loaded.graph
        n_units = len(graph.unit_ids)
        reset = np.zeros(n_units + len(graph.concepts), dtype=np.float64)
        for unit, weight in seeds.items():
            row = loaded.unit_index.get(unit)
            if row is not None:
                reset[row] += weight
        for concept, length in graph.match_query(ctx.question):
            reset[n_units + concept] += (
                cfg.concept_weight * length / math.log1p(graph.df[concept])
            )
        result = personalized_pagerank(
            loaded.adjacency,
            reset,
            damping=cfg.damping,
            max_iterations=cfg.max_iterations,
            tolerance=cfg.tolerance,
        )
        return _top_units(result.scores[:n_units], graph.unit_ids, ctx.config.top_k * 4)

    async def _entity_ppr(
        self, ctx: QueryContext, seeds: Mapping[str, float]
    ) -> list[tuple[str, float]]:
        cfg = ctx.config.ppr
        stores = ctx.stores
        facts = await stores.search.search(
            Collection.RELATIONSHIPS,
            query_vector=await ctx.query_vector(),
            mode=SearchMode.VECTOR,
            k=cfg.fact_top_k,
        ) if cfg.fact_top_k else []  # fmt: skip
        fact_scores = [
            (str(f.fields.get("source_id")), str(f.fields.get("target_id")), f.score)
            for f in facts
        ]
        seed_entities = sorted({e for s, t, _ in fact_scores for e in (s, t)})
        sub = await stores.graph.neighbourhood(
            seed_entities, hops=cfg.max_hops, max_entities=cfg.max_entities
        ) if seed_entities else None  # fmt: skip
        entities = list(sub.entities) if sub is not None else []
        relationships = list(sub.relationships) if sub is not None else []
        passages = set(seeds)
        links: list[tuple[str, str, float]] = []
        frequency: dict[str, int] = {}
        for entity in entities:
            frequency["e:" + entity.id] = len(entity.text_unit_ids)
            if len(entity.text_unit_ids) <= cfg.entity_frequency_threshold:
                for unit in entity.text_unit_ids:
                    passages.add(unit)
                    links.append(("e:" + entity.id, "p:" + unit, 1.0))
        graph = build_passage_graph(
            ["e:" + e.id for e in entities],
            ["p:" + p for p in sorted(passages)],
            [("e:" + r.source_id, "e:" + r.target_id, 1.0) for r in relationships],
            links,
        )
        passage_scores = {"p:" + unit: weight for unit, weight in seeds.items()}
        reset = hipporag_reset(
            graph,
            fact_scores=[("e:" + s, "e:" + t, score) for s, t, score in fact_scores],
            entity_frequency=frequency,
            passage_scores=passage_scores,
            link_top_k=cfg.link_top_k,
            passage_node_weight=cfg.passage_node_weight,
        )
        result = personalized_pagerank(
            graph.adjacency,
            reset,
            damping=cfg.damping,
            max_iterations=cfg.max_iterations,
            tolerance=cfg.tolerance,
        )
        scores = np.where(graph.passage_mask, result.scores, 0.0)
        ids = [n[2:] for n in graph.node_ids]
        return _top_units(scores, ids, ctx.config.top_k * 4)


def _seed_weights(
    hits: Sequence[SearchHit], sharpness: float, *, vector: bool
) -> dict[str, float]:
    """Return passage seed weights.

    ``exp(sharpness * (s - best))`` on cosine scores (the raw scores when ``sharpness`` is 0);
    ``1 / rank`` on BM25 hits.
    """
    if not hits:
        return {}
    if not vector:
        return {h.id: 1.0 / rank for rank, h in enumerate(hits, start=1)}
    if sharpness <= 0:
        return {h.id: h.score for h in hits}
    best = max(h.score for h in hits)
    return {h.id: math.exp(sharpness * (h.score - best)) for h in hits}


def _top_units(
    scores: NDArray[np.float64], ids: Sequence[str], limit: int
) -> list[tuple[str, float]]:
    """Return the ``limit`` best (id, score) with score > 0, ties by id."""
    nonzero = [int(i) for i in np.flatnonzero(scores > 0)]
    order = sorted(nonzero, key=lambda i: (-scores[i], ids[i]))
    return [(ids[i], float(scores[i])) for i in order[:limit]]


async def _candidates(ctx: QueryContext, ranked: Sequence[tuple[str, float]]) -> list[Candidate]:
    """Fetch the ranked units, keep those passing the filters, return the ``top_k``."""
    records = {
        r.id: r
        for r in await ctx.stores.search.get(Collection.TEXT_UNITS, [u for u, _ in ranked])
    }
    out: list[Candidate] = []
    for unit, score in ranked:
        record = records.get(unit)
        if record is None or (ctx.filters and not passes_filters(record.fields, ctx.filters)):
            continue
        out.append(text_unit_candidate(
            SearchHit(id=unit, score=score, text=record.text, fields=record.fields)
        ))  # fmt: skip
        if len(out) >= ctx.config.top_k:
            break
    return out
