"""The ``concepts`` stage: the LLM-free concept graph of `lazy` (`ingestion.lazy.LazyIndexer`).

YAKE keyphrases matched across every stored text unit, concept–unit lineage, co-occurrence
edges and hierarchical Leiden communities; no model call. Skips itself when its inputs match
the stored build's digest. Then the concept graph's global PageRank follows the stored graph
(`ingestion.centrality.refresh_concept_pagerank`).
"""

from __future__ import annotations

from unified_kg_rag.ingestion.centrality import refresh_concept_pagerank
from unified_kg_rag.ingestion.lazy import LazyIndexer
from unified_kg_rag.ingestion.stages.base import StageContext, StageRun, register_stage

__all__ = ["ConceptsStage"]


class ConceptsStage:
    """Builds the `lazy` concept graph (`DerivedStage` ``concepts``)."""

    name = "concepts"
    report_field = "lazy"
    order = 20

    async def run(self, ctx: StageContext, run: StageRun) -> tuple[str, ...]:
        """Build the concept graph (or skip it, unchanged); return ``("lazy",)``."""
        graph = ctx.config.graph
        run.report.lazy = await LazyIndexer(
            run.stores,
            graph.lazy,
            seed=graph.communities.seed,
            max_cluster_size=graph.communities.max_cluster_size,
            min_community_size=graph.communities.min_community_size,
            extractor=ctx.keyphrase_extractor,
            progress=ctx.progress,
        ).run(force=ctx.force_rebuild or run.rebuild)
        await refresh_concept_pagerank(run.stores)
        return ("lazy",)


register_stage(ConceptsStage())
