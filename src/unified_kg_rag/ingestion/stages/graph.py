"""The ``graph`` stage: the LLM knowledge graph of `graphrag`, `lightrag` and `hipporag`.

Runs `ingestion.graph.build.GraphIndexer` (extraction, gleaning, resolution, summaries,
communities and reports where `graphrag` is selected, vectors), which sweeps the extraction
records no text unit reads any more. Without an LLM it records why it built nothing; a model
error (authentication, a server down after the retries) stops it with what is stored kept,
and the next run resumes. After a ``--reset`` build the graph items the new build does not
list are deleted (`ingestion.reset.sweep_graph_orphans`). A build skipped as current on an
index without a stored PageRank computes it from the stored graph
(`ingestion.centrality.ensure_entity_pagerank`).
"""

from __future__ import annotations

import logging

from unified_kg_rag.domain.index.methodologies import builds_artifact, needs_llm
from unified_kg_rag.ingestion.centrality import ensure_entity_pagerank
from unified_kg_rag.ingestion.graph.build import GraphIndexer, graph_methodologies
from unified_kg_rag.ingestion.graph.report import GraphBuildReport
from unified_kg_rag.ingestion.reset import sweep_graph_orphans
from unified_kg_rag.ingestion.stages.base import StageContext, StageRun, register_stage
from unified_kg_rag.ports import ChatModel, IndexStores
from unified_kg_rag.util.errors import ModelError

__all__ = ["GraphStage", "claims_unread_note", "graph_indexer"]

logger = logging.getLogger(__name__)


def graph_indexer(ctx: StageContext, stores: IndexStores, chat: ChatModel) -> GraphIndexer:
    """Return the `GraphIndexer` of ``stores`` with the settings of ``ctx``.

    ``chat`` extracts and gleans; description summaries go to the ``summaries`` role's model
    and community reports to the ``reports`` role's (`StageContext.model`), each falling back
    to ``chat`` when its role has no model (``default`` with ``llm.kind: none``).

    Raises:
        ConfigurationError: a configured prompt file is unreadable or lacks a placeholder.
    """
    return GraphIndexer(
        stores, chat=chat, summary_chat=ctx.model("summaries") or chat,
        report_chat=ctx.model("reports") or chat, embedder=ctx.embedder,
        counter=ctx.budget_tokenizer,
        config=ctx.config, project_dir=ctx.project_dir, progress=ctx.progress,
        prompts=ctx.prompt_library(),
        schema=ctx.extraction_schema,
    )  # fmt: skip


def claims_unread_note(claims_enabled: bool, methodologies: list[str]) -> str | None:
    """Return a one-line warning when claim extraction is on but little or nothing reads it.

    Claims are extracted only by a graph build (``graphrag``, ``lightrag``, ``hipporag``);
    the ``local``, ``global`` (report Claims tables) and ``drift`` strategies read them
    through ``graphrag``, ``simple`` on any graph. None when claims are off or ``graphrag``
    is selected.
    """
    if not claims_enabled or "graphrag" in methodologies:
        return None
    chosen = ", ".join(methodologies) or "none"
    if not graph_methodologies(methodologies):
        return (f"graph.claims.enabled is on but indexing.methodologies ({chosen}) builds no "
                "LLM graph: no claims are extracted (claims need graphrag, lightrag or "
                "hipporag; local, global and drift read them with graphrag)")  # fmt: skip
    return (f"graph.claims.enabled: claims are extracted (one call per text unit) but with "
            f"indexing.methodologies ({chosen}) only the simple strategy reads them; local, "
            "global and drift read them with graphrag")  # fmt: skip


class GraphStage:
    """Builds the LLM knowledge graph (`DerivedStage` ``graph``)."""

    name = "graph"
    report_field = "graph"
    order = 10

    async def run(self, ctx: StageContext, run: StageRun) -> tuple[str, ...]:
        """Build the graph; return the graph methodologies built (none on a stop or skip)."""
        report = run.report
        graph = await self._build(ctx, run)
        report.graph = graph
        if graph is None:
            return ()
        report.records_removed = graph.records_swept
        if graph.skipped_reason and not graph.error:  # an index built before PageRank was stored
            await ensure_entity_pagerank(run.stores)
        if run.rebuild and not graph.error and not graph.skipped_reason:
            report.graph_items_orphaned = await sweep_graph_orphans(
                run.stores,
                relationship_vectors=builds_artifact(graph.methodologies, "relationship_vectors"),
            )
        # a build skipped for want of an LLM lists none; a stopped one keeps earlier records
        return () if graph.error else tuple(graph.methodologies)

    async def _build(self, ctx: StageContext, run: StageRun) -> GraphBuildReport | None:
        methodologies = ctx.methodologies
        if not needs_llm(methodologies):
            return None
        chat = ctx.model("extraction")
        if chat is None:
            return GraphBuildReport(
                skipped_reason="no LLM configured (llm.kind: none): text units only; set "
                "llm.kind (or llm.roles.extraction) to build "
                + ", ".join(graph_methodologies(methodologies))
            )
        try:
            return await graph_indexer(ctx, run.stores, chat).run(
                force=ctx.force_rebuild, rebuild=run.rebuild,
                retry_quarantined=run.retry_quarantined,
            )  # fmt: skip
        except ModelError as exc:
            # the model is unreachable or refuses us: what is stored stays, the next run resumes
            logger.info("graph build stopped: %s", exc)
            return GraphBuildReport(
                methodologies=graph_methodologies(methodologies),
                error=" ".join(str(exc).split()),
            )


register_stage(GraphStage())
