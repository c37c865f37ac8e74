"""`DerivedStages`: what an indexing or deletion run derives from the stored text units.

After the text units of a run landed (or were removed): the LLM knowledge graph
(`GraphIndexer`, which also sweeps the extraction records no text unit reads any more), the
LLM-free concept graph (`LazyIndexer`), and the record of the methodologies the index holds.
Each build reads the units of ``processed`` documents only and skips itself when its inputs
match its last complete build, so a run that changed nothing derives nothing, and a run that
removed documents derives every item again from the surviving units.
"""

from __future__ import annotations

import logging
from pathlib import Path

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.ingestion.graph.build import GRAPH_METHODOLOGIES, GraphIndexer, needs_llm
from unified_kg_rag.ingestion.graph.report import GraphBuildReport
from unified_kg_rag.ingestion.lazy import LazyBuildReport, LazyIndexer
from unified_kg_rag.ingestion.methodologies import record_methodologies
from unified_kg_rag.ingestion.report import IndexReport
from unified_kg_rag.ingestion.reset import sweep_graph_orphans
from unified_kg_rag.ports import (
    ChatModel,
    Embedder,
    IndexStores,
    KeyphraseExtractor,
    ProgressReporter,
    TokenCounter,
)
from unified_kg_rag.util.errors import ModelError

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
        project_dir: where relative prompt files are looked up.
        force_rebuild: ask the LLM again for every extraction record and rebuild the graphs.
        keyphrase_extractor: the `lazy` concept graph's extractor (default: YAKE).
    """

    def __init__(
        self,
        config: UkrConfig,
        *,
        embedder: Embedder,
        budget_tokenizer: TokenCounter,
        progress: ProgressReporter,
        chat_model: ChatModel | None = None,
        project_dir: Path | None = None,
        force_rebuild: bool = False,
        keyphrase_extractor: KeyphraseExtractor | None = None,
    ) -> None:
        self._config = config
        self._embedder = embedder
        self._budget_tokenizer = budget_tokenizer
        self._progress = progress
        self._chat = chat_model
        self._project_dir = project_dir
        self._force = force_rebuild
        self._keyphrases = keyphrase_extractor

    @property
    def rebuilds_graph(self) -> bool:
        """True when a run rebuilds the LLM graph (an LLM and a graph methodology)."""
        return self._chat is not None and needs_llm(self._config.methodologies())

    def graph_indexer(self, stores: IndexStores, chat: ChatModel) -> GraphIndexer:
        """Return the `GraphIndexer` of ``stores`` with this pipeline's settings.

        Raises:
            ConfigurationError: a configured prompt file is unreadable or lacks a placeholder.
        """
        return GraphIndexer(
            stores,
            chat=chat,
            embedder=self._embedder,
            counter=self._budget_tokenizer,
            config=self._config,
            project_dir=self._project_dir,
            progress=self._progress,
        )

    async def run(
        self,
        stores: IndexStores,
        report: IndexReport,
        *,
        rebuild: bool = False,
        retry_quarantined: bool = False,
    ) -> None:
        """Build the graphs and record the methodologies.

        Args:
            stores: the index's (fenced) stores.
            report: receives ``graph``, ``lazy``, ``records_removed`` (the extraction records
                the graph build swept) and ``graph_items_orphaned``.
            rebuild: ``--reset``: build even when the inputs are unchanged (reusing the stored
                extraction records and the response cache) and then delete the graph items
                the new build's manifest does not list (`ingestion.reset`).
            retry_quarantined: extract the quarantined text units again.

        Raises:
            StoreError: a store failed.
            ConfigurationError: a configured prompt file is unusable.
        """
        report.graph = await self._graph(stores, rebuild=rebuild, retry=retry_quarantined)
        graph = report.graph
        if rebuild and graph is not None and not graph.error and not graph.skipped_reason:
            report.graph_items_orphaned = await sweep_graph_orphans(
                stores, relationship_vectors=any(
                    m in ("lightrag", "hipporag") for m in graph.methodologies
                ),
            )
        if graph is not None:
            report.records_removed = graph.records_swept
        report.lazy = await self._lazy(stores, rebuild=rebuild)
        await record_methodologies(stores.records, self._config.methodologies(), report)

    async def _lazy(self, stores: IndexStores, *, rebuild: bool) -> LazyBuildReport | None:
        """Build the LLM-free concept graph when ``lazy`` is selected."""
        if "lazy" not in self._config.methodologies():
            return None
        graph = self._config.graph
        return await LazyIndexer(
            stores,
            graph.lazy,
            seed=graph.communities.seed,
            max_cluster_size=graph.communities.max_cluster_size,
            min_community_size=graph.communities.min_community_size,
            extractor=self._keyphrases,
            progress=self._progress,
        ).run(force=self._force or rebuild)

    async def _graph(
        self, stores: IndexStores, *, rebuild: bool, retry: bool
    ) -> GraphBuildReport | None:
        """Build the LLM knowledge graph when a graph methodology is selected."""
        methodologies = self._config.methodologies()
        if not needs_llm(methodologies):
            return None
        if self._chat is None:
            return GraphBuildReport(
                skipped_reason="no LLM configured (llm.kind: none): text units only; set "
                "llm.kind to build " + ", ".join(sorted(methodologies))
            )
        try:
            return await self.graph_indexer(stores, self._chat).run(
                force=self._force, rebuild=rebuild, retry_quarantined=retry
            )
        except ModelError as exc:
            # the model is unreachable or refuses us: what is stored stays, the next run resumes
            logger.info("graph build stopped: %s", exc)
            return GraphBuildReport(
                methodologies=sorted(m for m in methodologies if m in GRAPH_METHODOLOGIES),
                error=" ".join(str(exc).split()),
            )
