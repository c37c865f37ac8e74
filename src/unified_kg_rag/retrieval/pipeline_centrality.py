"""The staged pipeline's graph-centrality stages: ``pagerank`` and ``ppr``.

``pagerank`` scores the candidates it receives by the global PageRank computed at index
time (`ingestion.centrality`); ``ppr`` adds the text units HippoRAG 2's personalized
PageRank ranks for the query (the ``ppr`` strategy's ranking, `PPRStrategy.ranked_units`).
Source: seed 002 ("PageRank"), issue #22.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

from unified_kg_rag.config.query import QueryConfig
from unified_kg_rag.domain.index.meta import (
    INDEX_NAMESPACE,
    METHODOLOGIES_KEY,
    PAGERANK_META_KEY,
    PAGERANK_NAMESPACES,
    PageRankGraph,
    PageRankMeta,
    parse_methodologies,
)
from unified_kg_rag.domain.models import Collection, SearchHit
from unified_kg_rag.domain.ranking.signals import max_normalized
from unified_kg_rag.ports import Embedder, IndexStores, RecordStore
from unified_kg_rag.retrieval.strategies.base import STRATEGIES, BuildCache, QueryContext
from unified_kg_rag.retrieval.strategies.ppr import (
    LoadedConceptGraph,
    PPRStrategy,
    passes_filters,
)

from .pipeline import StageInput, StageOutput
from .pipeline_stages import merge_hits

__all__ = ["PPRStage", "PageRankStage"]

logger = logging.getLogger(__name__)

_NODE_KIND: dict[PageRankGraph, str] = {"entities": "entity", "concepts": "concept"}


@dataclass
class PageRankStage:
    """Sets signal ``pagerank`` from the global PageRank stored at index time.

    A text unit's value is the largest PageRank among the entities (or concepts) citing it
    (`domain.ranking.centrality.unit_pagerank`); an entity (concept) candidate's is its
    own. Values are divided by the graph's largest node value, so the most central node's
    units score 1. A candidate the stored values lack (no entity cites it, another kind)
    scores ``default``. An index without stored values (built before PageRank was
    stored, or holding no graph) scores every candidate ``default`` and logs one warning
    per index to re-run ``ukr index``. Adds and drops no candidate.

    Attributes:
        records: the index's record store.
        index: the index's name (for the warning).
        graph: ``entities`` (the LLM graph), ``concepts`` (the `lazy` graph) or ``auto``
            (the entity graph when stored, else the concept graph).
        default: the signal of a candidate without a value, in 0..1.
        warned: indexes already warned about (share one set to warn once per process).
        name: the stage's name.

    Source: seed 002, "PageRank" (pre-computed, normalised to 0..1, a fallback default).
    """

    records: RecordStore
    index: str = "default"
    graph: Literal["auto", "entities", "concepts"] = "auto"
    default: float = 0.0
    warned: set[str] = field(default_factory=set)
    name: str = "pagerank"

    def __post_init__(self) -> None:
        if self.graph not in ("auto", "entities", "concepts"):
            raise ValueError(f"graph must be auto, entities or concepts, got {self.graph!r}")
        if not 0.0 <= self.default <= 1.0:
            raise ValueError(f"default must be within 0..1, got {self.default}")

    async def execute(self, stage_input: StageInput) -> StageOutput:
        """Read the candidates' stored values in one call; set ``pagerank`` on each."""
        candidates = stage_input.candidates
        chosen, max_value = await self._graph()
        for candidate in candidates:
            candidate.signals["pagerank"] = self.default
        if chosen is None or not candidates:
            return StageOutput(candidates, stage_input.context)
        keys = {c.id: self._key(chosen, c.kind, c.id) for c in candidates}
        wanted = sorted({k for k in keys.values() if k is not None})
        stored = await self.records.get_many(PAGERANK_NAMESPACES[chosen], wanted) if wanted \
            else {}  # fmt: skip
        for candidate in candidates:
            raw = stored.get(keys[candidate.id] or "")
            if raw is not None and max_value > 0:
                candidate.signals["pagerank"] = min(max(float(raw) / max_value, 0.0), 1.0)
        return StageOutput(candidates, stage_input.context)

    async def _graph(self) -> tuple[PageRankGraph | None, float]:
        """The graph whose values are read and its largest value; warn once when none."""
        graphs: list[PageRankGraph] = (
            ["entities", "concepts"] if self.graph == "auto" else [self.graph]
        )
        for graph in graphs:
            raw = await self.records.get(PAGERANK_NAMESPACES[graph], PAGERANK_META_KEY)
            if raw is not None:
                return graph, PageRankMeta.model_validate_json(raw).max_value
        if self.index not in self.warned:
            self.warned.add(self.index)
            logger.warning(
                "index %r has no stored PageRank of an %s graph: the pagerank stage scores "
                "every candidate %s. If the index holds that graph (entities: a graphrag, "
                "lightrag or hipporag methodology; concepts: lazy), it was built before "
                "PageRank was stored: re-run `ukr index` to compute it", self.index,
                {"auto": "entity or concept", "entities": "entity", "concepts": "concept"}[
                    self.graph], self.default,
            )  # fmt: skip
        return None, 0.0

    @staticmethod
    def _key(graph: PageRankGraph, kind: str, item_id: str) -> str | None:
        if kind == "text_unit":
            return f"u:{item_id}"
        return f"n:{item_id}" if kind == _NODE_KIND[graph] else None


@dataclass
class PPRStage:
    """Adds the ``limit`` text units HippoRAG 2's personalized PageRank ranks best.

    Runs the ``ppr`` strategy's ranking (`PPRStrategy.ranked_units`) under ``settings``
    (``query.ppr``: the graph, seeds, damping, fusion), keeps the units passing the run's
    filters, and merges them into the candidates (`merge_hits`) with signal ``ppr`` = score
    divided by the run's best (the best unit scores 1). Reuses the query vector an earlier
    ``semantic`` stage put in the context.

    Attributes:
        stores: the index's stores.
        embedder: the embedding model (the passage seeds' search).
        settings: the query settings (``query.ppr`` and ``query.search_mode`` apply).
        limit: text units added at most.
        concept_graphs: loaded concept graphs kept between queries (the `App`'s, ideally).
        name: the stage's name.

    Raises (from ``execute``):
        MethodologyNotIndexedError: the index holds neither ``hipporag`` nor ``lazy``, or
            ``query.ppr.graph`` names a graph it lacks (wrapped in `PipelineError`).

    Source: seed 000 §6.4 (HippoRAG 2), issue #22 ("ppr as a stage").
    """

    stores: IndexStores
    embedder: Embedder
    settings: QueryConfig
    limit: int = 50
    concept_graphs: BuildCache[LoadedConceptGraph] = field(default_factory=BuildCache)
    name: str = "ppr"

    def __post_init__(self) -> None:
        if self.limit < 1:
            raise ValueError(f"limit must be >= 1, got {self.limit}")

    async def execute(self, stage_input: StageInput) -> StageOutput:
        """Rank by PPR, fetch the best units' records, merge them with signal ``ppr``."""
        stores = self.stores
        held = parse_methodologies(await stores.records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY))
        config = self.settings.model_copy(update={"top_k": self.limit})
        STRATEGIES.get("ppr").require(held, stores.name, config)
        vector = stage_input.context.get("query_vector")
        ctx = QueryContext(
            question=stage_input.query.strip(), stores=stores, embedder=self.embedder,
            chat_model=None, config=config, filters=dict(stage_input.filters), held=held,
            concept_graphs=self.concept_graphs, _query_vector=vector,
        )  # fmt: skip
        ranked = await PPRStrategy().ranked_units(ctx)
        records = {r.id: r for r in await stores.search.get(
            Collection.TEXT_UNITS, [u for u, _ in ranked])} if ranked else {}  # fmt: skip
        hits: list[SearchHit] = []
        for unit, score in ranked:
            record = records.get(unit)
            if record is None or not passes_filters(record.fields, stage_input.filters):
                continue
            hits.append(SearchHit(id=unit, score=score, text=record.text, fields=record.fields))
            if len(hits) >= self.limit:
                break
        values = max_normalized([h.score for h in hits])
        merged = merge_hits(stage_input.candidates, hits, "ppr", values, "text_unit")
        context = dict(stage_input.context)
        if ctx._query_vector is not None:  # embedded here: later stages reuse it
            context.setdefault("query_vector", ctx._query_vector)
        return StageOutput(merged, context)
