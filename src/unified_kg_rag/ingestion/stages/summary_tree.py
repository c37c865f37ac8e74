"""The ``summary_tree`` stage: the RAPTOR summary tree of `raptor` (`ingestion.summary_tree`).

Built from the stored text units after the other derived stages, so adding `raptor` to an
existing index builds only the tree on the next run. Summaries are written by the LLM when
``graph.raptor.summaries`` is ``llm``, or ``auto`` with an LLM configured (the model of the
``summaries`` role, `domain.llm.roles`); else extractively
(no model call). A model that refuses access stops the stage with the stored tree kept (its
nodes of live lineage) and `raptor` keeps what an earlier run recorded.
"""

from __future__ import annotations

import logging

from unified_kg_rag.ingestion.stages.base import StageContext, StageRun, register_stage
from unified_kg_rag.ingestion.summary_tree import SummaryTreeBuilder, SummaryTreeReport
from unified_kg_rag.ingestion.tree_summaries import CLUSTER_PROMPT, ClusterSummarizer
from unified_kg_rag.util.errors import ModelError

__all__ = ["SummaryTreeStage"]

logger = logging.getLogger(__name__)


class SummaryTreeStage:
    """Builds the `raptor` summary tree (`DerivedStage` ``summary_tree``)."""

    name = "summary_tree"
    report_field = "summary_tree"
    order = 30

    async def run(self, ctx: StageContext, run: StageRun) -> tuple[str, ...]:
        """Build the tree (or skip it, unchanged); return ``("raptor",)`` unless it stopped."""
        cfg = ctx.config.graph.raptor
        model = ctx.model("summaries")
        if cfg.summaries == "llm" and model is None:
            run.report.summary_tree = SummaryTreeReport(
                skipped_reason="graph.raptor.summaries is `llm` but no LLM is configured "
                "(llm.kind: none); set llm.kind, or summaries: auto or extractive"
            )
            return ()
        chat = None if cfg.summaries == "extractive" else model
        summarizer = ClusterSummarizer(
            cfg, embedder=ctx.embedder, counter=ctx.budget_tokenizer, chat=chat,
            concurrency=ctx.config.llm.max_concurrency,
            template=ctx.prompt_library().get(CLUSTER_PROMPT),
        )  # fmt: skip
        builder = SummaryTreeBuilder(
            run.stores, cfg, summarizer=summarizer, embedder=ctx.embedder,
            counter=ctx.budget_tokenizer, progress=ctx.progress,
        )  # fmt: skip
        try:
            run.report.summary_tree = await builder.run(
                force=ctx.force_rebuild or run.rebuild
            )
        except ModelError as exc:
            logger.info("summary tree build stopped: %s", exc)
            error = " ".join(str(exc).split())
            run.report.summary_tree = SummaryTreeReport(
                skipped_reason="stopped: " + error, error=error
            )
            return ()
        return ("raptor",)


register_stage(SummaryTreeStage())
