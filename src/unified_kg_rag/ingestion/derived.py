"""`DerivedStages`: what an indexing or deletion run derives from the stored text units.

After the text units of a run landed (or were removed), the registered derived stages
(`ingestion.stages`: the LLM knowledge graph, the LLM-free concept graph, the RAPTOR summary
tree) whose methodologies the configuration selects run in order, then the index records the
methodologies it holds. Each stage reads the units of ``processed`` documents only and skips
itself when its inputs match its last complete build, so a run that changed nothing derives
nothing, and a run that removed documents derives every item again from the surviving units.
"""

from __future__ import annotations

import logging
from pathlib import Path

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.extraction.schema import ExtractionSchema
from unified_kg_rag.domain.index.methodologies import needs_llm
from unified_kg_rag.domain.llm.roles import RoleModels
from unified_kg_rag.domain.prompts.library import PromptLibrary
from unified_kg_rag.ingestion.graph.build import GraphIndexer
from unified_kg_rag.ingestion.methodologies import record_methodologies
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.ingestion.stages import StageContext, StageRun, selected_stages
from unified_kg_rag.ingestion.stages.graph import claims_unread_note, graph_indexer
from unified_kg_rag.ports import (
    ChatModel,
    Embedder,
    IndexStores,
    KeyphraseExtractor,
    PreparesVectorSearch,
    ProgressReporter,
    TokenCounter,
)
from unified_kg_rag.util.telemetry import traced

__all__ = ["DerivedStages"]

logger = logging.getLogger(__name__)


class DerivedStages:
    """Runs the stages derived from the text units, for one pipeline's settings.

    Args:
        config: the effective configuration (``graph``, ``UkrConfig.methodologies()``).
        embedder: the index's embedding model.
        budget_tokenizer: token counter for prompt budgets.
        progress: receives progress events.
        chat_model: the wrapped LLM; None (``llm.kind: none``) builds no LLM graph.
        models: the model of each role (None: ``chat_model`` serves every role); without an
            ``extraction`` model no LLM graph is built.
        project_dir: where relative prompt files are looked up.
        force_rebuild: ask the LLM again for every extraction record and rebuild the graphs.
        keyphrase_extractor: the `lazy` concept graph's extractor (default: YAKE).
        prompts: the prompts in effect (None: read from ``config`` when needed).
        extraction_schema: the extraction schema (None: no schema).
    """

    def __init__(
        self,
        config: UkrConfig,
        *,
        embedder: Embedder,
        budget_tokenizer: TokenCounter,
        progress: ProgressReporter,
        chat_model: ChatModel | None = None,
        models: RoleModels[ChatModel] | None = None,
        project_dir: Path | None = None,
        force_rebuild: bool = False,
        keyphrase_extractor: KeyphraseExtractor | None = None,
        prompts: PromptLibrary | None = None,
        extraction_schema: ExtractionSchema | None = None,
    ) -> None:
        self._ctx = StageContext(
            config=config, embedder=embedder, budget_tokenizer=budget_tokenizer,
            progress=progress, chat_model=chat_model, models=models, project_dir=project_dir,
            force_rebuild=force_rebuild, keyphrase_extractor=keyphrase_extractor,
            prompts=prompts,
            extraction_schema=extraction_schema,
        )  # fmt: skip

    @property
    def context(self) -> StageContext:
        """The settings every stage of this pipeline runs with."""
        return self._ctx

    @property
    def rebuilds_graph(self) -> bool:
        """True when a run rebuilds the LLM graph (an extraction model and a graph methodology)."""
        return self._ctx.model("extraction") is not None and needs_llm(self._ctx.methodologies)

    def graph_indexer(self, stores: IndexStores, chat: ChatModel) -> GraphIndexer:
        """Return the `GraphIndexer` of ``stores`` with this pipeline's settings.

        ``chat`` extracts; summaries and reports go to their roles' models (`graph_indexer`).

        Raises:
            ConfigurationError: a configured prompt file is unreadable or lacks a placeholder.
        """
        return graph_indexer(self._ctx, stores, chat)

    async def run(
        self,
        stores: IndexStores,
        report: IndexReport,
        *,
        rebuild: bool = False,
        retry_quarantined: bool = False,
    ) -> None:
        """Run the selected derived stages and record the methodologies.

        Args:
            stores: the index's (fenced) stores.
            report: receives each stage's report (``graph``, ``lazy``, ``summary_tree``),
                ``records_removed`` (the extraction records the graph build swept) and
                ``graph_items_orphaned``.
            rebuild: ``--reset``: build even when the inputs are unchanged (reusing the stored
                extraction records and the response cache) and then delete the items the new
                build does not list.
            retry_quarantined: extract the quarantined text units again.

        Raises:
            StoreError: a store failed.
            ConfigurationError: a configured prompt file is unusable.
        """
        run = StageRun(stores, report, rebuild=rebuild, retry_quarantined=retry_quarantined)
        built: set[str] = set()
        claims_on = self._ctx.config.graph.claims.enabled
        if note := claims_unread_note(claims_on, list(self._ctx.methodologies)):
            logger.warning(note)
        for stage in selected_stages(self._ctx.methodologies):
            built.update(await traced(f"ukr.index.{stage.name}", stage.run(self._ctx, run)))
        await record_methodologies(stores.records, self._ctx.methodologies, built)
        if isinstance(stores.search, PreparesVectorSearch):  # the first query builds nothing
            served = await traced("ukr.index.vector_index", stores.search.prepare_vector_search())
            if served:
                logger.info("approximate vector index current for: %s", ", ".join(served))
