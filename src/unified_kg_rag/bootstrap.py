"""The composition root: builds the providers a configuration selects, in one typed `App`.

`App` also wires them into the application: `App.index_pipeline` and `App.chain` are what
the CLI, the service and library users call, so no entry point assembles a pipeline or a
chain by hand. The composition root therefore sits above ``ingestion``/``retrieval`` in the
layers (it names them; they never name it).

Every adapter is reached through its registry (`adapters.registry`); nothing here names a
concrete adapter class. Instances live in the `App`, never in module globals, so two apps in
one process (tests) do not share state. Close an app with ``await app.aclose()`` or
``async with build_app(...)``.
"""

from __future__ import annotations

import contextlib
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from unified_kg_rag.adapters import builtins
from unified_kg_rag.adapters.llm.middleware import wrap_chat_model
from unified_kg_rag.adapters.llm.roles import build_role_models, check_role_models
from unified_kg_rag.adapters.messages import load_message_sources
from unified_kg_rag.adapters.registry import (
    CHAT_MODELS,
    CHUNK_TOKENIZERS,
    EMBEDDERS,
    KEYPHRASE_EXTRACTORS,
    PARSERS,
    RERANKERS,
    STORE_BACKENDS,
)
from unified_kg_rag.adapters.schema_sources import load_extraction_schema
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.config.prompts import load_prompt_library
from unified_kg_rag.domain.extraction.schema import ExtractionSchema
from unified_kg_rag.domain.llm.roles import ModelRole, RoleModels
from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.ports import (
    ChatModel,
    DocumentParser,
    Embedder,
    IndexStores,
    KeyphraseExtractor,
    MessageSource,
    Reranker,
    StoreBackend,
    TokenCounter,
)
from unified_kg_rag.retrieval.strategies.base import BuildCache
from unified_kg_rag.util.errors import UsageError

if TYPE_CHECKING:  # the application layer loads on first use: `import unified_kg_rag` stays cheap
    from unified_kg_rag.config.query import QueryConfig
    from unified_kg_rag.ingestion.pipeline import IndexPipeline
    from unified_kg_rag.ingestion.status import RoleModel, StatusReport
    from unified_kg_rag.ports import ProgressReporter
    from unified_kg_rag.retrieval.access import AccessRecorder
    from unified_kg_rag.retrieval.chain import RAGChain
    from unified_kg_rag.retrieval.graph_view import GraphReader, GraphView
    from unified_kg_rag.retrieval.pipeline_presets import PipelineComponents
    from unified_kg_rag.retrieval.pipeline_strategy import PipelineStrategy
    from unified_kg_rag.retrieval.strategies.ppr import LoadedConceptGraph
    from unified_kg_rag.retrieval.strategies.tree import LoadedTree

__all__ = ["App", "IndexStores", "build_app", "check_config", "load_project_config",
           "validate_index_name"]

logger = logging.getLogger(__name__)

SHARED_SCOPE = "_shared"
"""Record-store scope of project-wide records (the LLM response cache)."""

builtins.register_all()


def validate_index_name(name: str) -> str:
    """Return ``name`` if it is a valid index name, else raise.

    Valid: 1-64 characters, letters, digits, ``_``, ``-`` and ``.``, starting with a letter or
    digit.

    Raises:
        UsageError: the name is invalid (field ``index``).
    """
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name):
        raise UsageError(
            f"invalid index name {name!r}: use 1-64 letters, digits, '_', '-' or '.', "
            "starting with a letter or digit",
            field="index",
        )
    return name


@dataclass
class App:
    """The providers of one project, built from its configuration.

    Attributes:
        config: the effective configuration.
        project_dir: the project directory (holds ``ukr.yaml`` and ``.ukr/``).
        backend: the store backend.
        embedder: the embedding model (loads its weights on first use).
        chunk_tokenizer: the tokenizer text units are measured in (the embedder's own).
        budget_tokenizer: the script-aware estimate used for context budgets.
        chat_model: the wrapped default LLM (``llm``), or None when ``llm.kind`` is
            ``none``.
        models: the wrapped model of each role (``llm.tiers``, ``llm.roles``); by default
            ``chat_model`` serves every role.
        parsers: parser per file extension (``.txt`` ...).
        keyphrase_extractor: the `lazy` concept graph's keyphrase extractor
            (``graph.lazy.extractor``; loads its library on first use).
        reranker: the reranker of ``query.rerank``, or None when its kind is ``none``
            (a local model loads on first use).
        message_sources: the message-archive sources, in dispatch order (iMessage, JSON
            Lines ...).
        concept_graphs: the `lazy` concept graphs loaded by this app's chains, kept for
            the next queries (the service answers many over one load).
        graph_views: the graphs loaded for browsing (`graph_reader`), kept per build.
        summary_trees: the `raptor` summary trees loaded by this app's chains (`tree`).
        prompts: the prompt templates in effect (packaged, with the ``prompts`` section's
            and the older ``*.prompt_file`` fields' overrides), read and checked at start.
        opened_models: the unwrapped provider models built for ``models``; `aclose` closes
            the HTTP clients of those that hold any.
        access_recorders: the access-count recorder of each index queried with
            ``query.access.record`` on (`access_recorder`); `aclose` writes what they queued.
    """

    config: UkrConfig
    project_dir: Path
    backend: StoreBackend
    embedder: Embedder
    chunk_tokenizer: TokenCounter
    budget_tokenizer: TokenCounter
    chat_model: ChatModel | None
    models: RoleModels[ChatModel] | None = None
    parsers: dict[str, DocumentParser] = field(default_factory=dict)
    keyphrase_extractor: KeyphraseExtractor | None = None
    reranker: Reranker | None = None
    message_sources: list[MessageSource] = field(default_factory=list)
    concept_graphs: BuildCache[LoadedConceptGraph] = field(default_factory=BuildCache)
    graph_views: BuildCache[GraphView] = field(default_factory=BuildCache)
    summary_trees: BuildCache[LoadedTree] = field(default_factory=BuildCache)
    prompts: PromptLibrary = PACKAGED
    opened_models: list[object] = field(default_factory=list)
    access_recorders: dict[str, AccessRecorder] = field(default_factory=dict)
    _schema: tuple[ExtractionSchema | None] | None = field(default=None, init=False, repr=False)
    _pipeline_warned: set[str] = field(default_factory=set, init=False, repr=False)

    def extraction_schema(self) -> ExtractionSchema | None:
        """Return the extraction schema of ``graph.extraction.schema_sources`` (read once).

        None when no LLM graph is built (no LLM, or no methodology that extracts) or no
        source is configured, so a lazy-only project never reads its ontology.

        Raises:
            ConfigurationError: a source cannot be read (one line naming the file or field).
        """
        from unified_kg_rag.domain.index.methodologies import needs_llm

        if self.model_for("extraction") is None or not needs_llm(self.config.methodologies()):
            return None
        if self._schema is None:
            self._schema = (load_extraction_schema(self.config.graph.extraction, self.project_dir),)
        return self._schema[0]

    @property
    def role_models(self) -> RoleModels[ChatModel]:
        """The model of each role (``chat_model`` for every role when none were built)."""
        return self.models if self.models is not None else RoleModels.single(self.chat_model)

    def model_for(self, role: ModelRole) -> ChatModel | None:
        """Return the wrapped model serving ``role`` (`domain.llm.roles`), or None."""
        return self.role_models.for_role(role)

    def index(self, name: str | None = None) -> IndexStores:
        """Return the store ports of index ``name`` (default: ``query.index``).

        Raises:
            UsageError: the name is not a valid index name.
        """
        index = validate_index_name(self.config.query.index if name is None else name)
        b = self.backend
        return IndexStores(name=index, search=b.search_index(index), graph=b.graph_store(index),
                           registry=b.doc_registry(index), records=b.record_store(index))

    async def connect_cluster(self) -> None:
        """Connect to ``indexing.cluster`` (if set) off the event loop (`adapters.ray`).

        Raises ConfigurationError when no cluster answers, as `index_pipeline` would.
        """
        if self.config.indexing.cluster:
            from unified_kg_rag.adapters.ray import connect_cluster
            await connect_cluster(self.config, self.opened_models)

    def index_pipeline(
        self,
        index: str | None = None,
        *,
        progress: ProgressReporter | None = None,
        force_rebuild: bool = False,
    ) -> IndexPipeline:
        """Return the indexing pipeline of ``index`` wired with every provider of this app.

        The one place indexing, estimating and deleting get their pipeline (the CLI and the
        service alike), so none misses a provider. With ``indexing.cluster`` its models run on
        a Ray cluster, connected here (unless `connect_cluster` did) before anything is written.

        Args:
            index: the index name (default: ``query.index``).
            progress: where the pipeline reports progress (None: nowhere).
            force_rebuild: rebuild derived stages even when nothing changed (``--reset``).

        Raises:
            UsageError: the name is not a valid index name.
        """
        from unified_kg_rag.ingestion.pipeline import IndexPipeline

        embedder, models = self.embedder, self.role_models
        if self.config.indexing.cluster:  # the model work runs on a Ray cluster (adapters.ray)
            from unified_kg_rag.adapters.ray import cluster_models
            cache = self.backend.record_store(SHARED_SCOPE) if self.config.llm.cache else None
            on = cluster_models(self.config, self.embedder, cache, self.opened_models)
            embedder, models = on.embedder, on.models
        return IndexPipeline(
            self.index(index),
            embedder=embedder,
            chunk_tokenizer=self.chunk_tokenizer,
            parsers=self.parsers,
            config=self.config,
            progress=progress,
            chat_model=models.default,
            models=models,
            budget_tokenizer=self.budget_tokenizer,
            project_dir=self.project_dir,
            force_rebuild=force_rebuild,
            keyphrase_extractor=self.keyphrase_extractor,
            message_sources=self.message_sources,
            prompts=self.prompts,
            extraction_schema=self.extraction_schema(),
        )

    def chain(
        self, index: str | None = None, *, query: QueryConfig | None = None,
        pipeline: PipelineStrategy | None = None,
    ) -> RAGChain:
        """Return the query chain over ``index`` with this app's models and reranker.

        Args:
            index: the index name (default: ``query.index``).
            query: query settings to use instead of the configuration's ``query``.
            pipeline: a staged pipeline as the retrieval step in place of a strategy
                (`retrieval.pipeline_strategy.choose_pipeline` over `pipeline_components`).

        Raises:
            UsageError: the name is not a valid index name.
        """
        from unified_kg_rag.retrieval.chain import RAGChain

        stores = self.index(index)
        settings = query or self.config.query
        return RAGChain(
            stores,
            embedder=self.embedder,
            chat_model=self.chat_model,
            models=self.role_models,
            budget_tokenizer=self.budget_tokenizer,
            config=settings,
            reranker=self.reranker,
            concept_graphs=self.concept_graphs,
            summary_trees=self.summary_trees,
            prompts=self.prompts,
            pipeline=pipeline,
            access_recorder=self.access_recorder(stores.name) if settings.access.record else None,
        )

    async def pipeline_components(self, index: str | None = None) -> PipelineComponents:
        """Return what pipeline stages over ``index`` are built from (`components_of`).

        Raises:
            UsageError: the name is not a valid index name.
            ConfigurationError: a module of ``query.pipeline_modules`` failed to import.
            StoreError: the index's records could not be read.
        """
        from unified_kg_rag.retrieval.pipeline_presets import components_of

        stores = self.index(index)
        return await components_of(
            stores, embedder=self.embedder, reranker=self.reranker, settings=self.config.query,
            concept_graphs=self.concept_graphs, warned=self._pipeline_warned,
            access_log=self.backend.access_log(stores.name), base_dir=self.project_dir,
        )  # fmt: skip

    def access_recorder(self, index: str | None = None) -> AccessRecorder:
        """Return the access-count recorder of ``index`` (one per index; `aclose` flushes it).

        Raises:
            UsageError: the name is not a valid index name.
        """
        from unified_kg_rag.retrieval.access import AccessRecorder

        name, settings = self.index(index).name, self.config.query.access
        if name not in self.access_recorders:
            self.access_recorders[name] = AccessRecorder(
                self.backend.access_log(name), flush_interval_s=settings.flush_interval_s,
                max_pending=settings.max_pending, index=name)  # fmt: skip
        return self.access_recorders[name]

    def graph_reader(self, index: str | None = None) -> GraphReader:
        """Return the graph browser of ``index`` (default: ``query.index``).

        Over this app's loaded-graph caches; reads of a missing index raise `NotFoundError`.

        Raises:
            UsageError: the name is not a valid index name.
        """
        from unified_kg_rag.retrieval.graph_view import GraphReader

        return GraphReader(self.index(index), self.graph_views, self.concept_graphs,
                           indexes=self.backend.list_indexes)  # fmt: skip

    def judge_model(self) -> tuple[ChatModel | None, bool]:
        """Return the model that judges answers and whether it is the answer model.

        An ``evaluation.judge`` with a provider wins; with its ``kind: none`` (the default)
        the model of ``llm.roles.judge`` judges (by default the top-level ``llm`` model).
        The flag says True when the judge is also the answer model (``llm.roles.answer``),
        so a run can warn that a judge favours its own answers (seed 000 §9); a judge
        configured with the same provider and model name counts as the answer model too.
        ``evaluation.judge`` is built on each call (cheap: no connection is made until the
        first request); replies are cached like the answer model's.

        Raises:
            ConfigurationError: ``evaluation.judge.kind`` names no registered provider.
        """
        judge_cfg = self.config.evaluation.judge
        answer = self.model_for("answer")
        judge = self.model_for("judge")
        if judge_cfg.kind != "none" and (raw := CHAT_MODELS.get(judge_cfg.kind)(judge_cfg)):
            cache = self.backend.record_store(SHARED_SCOPE) if judge_cfg.cache else None
            self.opened_models.append(raw)
            judge = wrap_chat_model(raw, judge_cfg, cache)
        if judge is None:
            return None, False
        return judge, answer is not None and judge.model_id == answer.model_id

    async def status(self) -> StatusReport:
        """Describe every index of the project (`ingestion.status.describe_index`).

        With an LLM graph methodology configured, each index also counts the extraction
        records no text unit reads any more (their keys need the extractor's prompts).

        Raises:
            StoreError: a store failed.
        """
        from unified_kg_rag.domain.index.methodologies import needs_llm
        from unified_kg_rag.ingestion.graph.build import graph_extractor
        from unified_kg_rag.ingestion.status import StatusReport, describe_index

        indexes = []
        for name in await self.backend.list_indexes():
            index = self.index(name)
            chat = self.model_for("extraction") if needs_llm(self.config.methodologies()) else None
            extractor = (graph_extractor(self.config, chat, index.records,
                                         schema=self.extraction_schema(), prompts=self.prompts)
                         if chat is not None else None)  # fmt: skip
            described = await describe_index(
                index, reset_drift_share=self.config.indexing.reset_drift_share,
                quarantine_after=self.config.indexing.quarantine_after, extractor=extractor,
            )  # fmt: skip
            totals = await self.backend.access_log(name).totals()
            indexes.append(described.model_copy(update={"access_counts": totals}))
        return StatusReport(
            project_dir=str(self.project_dir), store=self.backend.location, indexes=indexes,
            models=self.role_status(),
        )

    def role_status(self) -> list[RoleModel]:
        """Return which model serves each role (``ukr status``), in `ROLES` order.

        The judge reads ``evaluation.judge`` when it names a provider (it wins); summaries
        and reports without a model of their own name the extraction model a graph build
        falls back to.
        """
        from unified_kg_rag.ingestion.status import roles_in_use

        judge = (self.judge_model()[0], "evaluation.judge") \
            if self.config.evaluation.judge.kind != "none" else None  # fmt: skip
        return roles_in_use(self.role_models, judge)

    async def aclose(self) -> None:
        """Write the queued access counts, then release the models' and the stores' connections.

        Seed 000 §8.2.
        """
        for recorder in self.access_recorders.values():
            await recorder.aclose()  # never raises: what cannot be written is logged
        self.access_recorders.clear()
        for model in self.opened_models:
            close = getattr(model, "aclose", None)
            if close is not None:
                with contextlib.suppress(Exception):
                    await close()
        self.opened_models.clear()
        await self.backend.aclose()

    async def __aenter__(self) -> App:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:  # fmt: skip
        await self.aclose()


def check_config(config: UkrConfig) -> None:
    """Check that every provider ``kind`` in ``config`` names a registered provider.

    Raises:
        ConfigurationError: the first unknown kind, with its field and the registered names;
            a role (``llm.roles.<role>``) naming a tier that is not configured.
    """
    STORE_BACKENDS.get(config.stores.kind)
    EMBEDDERS.get(config.embeddings.kind)
    CHUNK_TOKENIZERS.get(config.embeddings.kind)
    check_role_models(config.llm)
    CHAT_MODELS.get(config.evaluation.judge.kind)
    KEYPHRASE_EXTRACTORS.get(config.graph.lazy.extractor)
    RERANKERS.get(config.query.rerank.kind)


def load_project_config(
    project_dir: Path, *, config_file: Path | None = None, stores: str | None = None
) -> UkrConfig:
    """Load and check the configuration of the project at ``project_dir``.

    The CLI and the service both start here; nothing here touches logging (an entry point
    sets up its own: the CLI on stderr, the service under its server's handlers).

    Args:
        project_dir: the project directory (holds ``ukr.yaml``).
        config_file: a configuration file to read instead of ``PROJECT/ukr.yaml``.
        stores: a store backend overriding ``stores.kind`` (``--stores``).

    Raises:
        ConfigurationError: the configuration is invalid, or a ``kind`` names no
            registered provider.
    """
    from unified_kg_rag.config.load import load_config

    config = load_config(project_dir, config_file=config_file)
    if stores:  # the caller's choice wins over the file and the environment
        config = config.model_copy(
            update={"stores": config.stores.model_copy(update={"kind": stores})}
        )
    check_config(config)
    return config


def build_app(config: UkrConfig, project_dir: Path) -> App:
    """Build the providers ``config`` selects for the project at ``project_dir``.

    Nothing heavy is loaded here: the embedding model loads on first use and the store opens
    its file on first access.

    Raises:
        ConfigurationError: a ``kind`` names no registered provider (the message lists them),
            or a role names a tier that is not configured, or a prompt override file is
            unreadable or has wrong placeholders (one line naming the file).
    """
    prompts = load_prompt_library(config, project_dir)
    backend = STORE_BACKENDS.get(config.stores.kind)(config.stores, project_dir)
    embedder = EMBEDDERS.get(config.embeddings.kind)(config.embeddings)
    chunk_tokenizer = CHUNK_TOKENIZERS.get(config.embeddings.kind)(config.embeddings)
    cache = backend.record_store(SHARED_SCOPE) if config.llm.cache else None
    opened: list[object] = []
    models = build_role_models(config.llm, cache, opened)
    parsers = {ext: PARSERS.get(ext)(config.parsing) for ext in PARSERS.names()}
    return App(
        config=config,
        project_dir=project_dir,
        backend=backend,
        embedder=embedder,
        chunk_tokenizer=chunk_tokenizer,
        budget_tokenizer=EstimateTokenCounter(),
        chat_model=models.default,
        models=models,
        parsers=parsers,
        keyphrase_extractor=KEYPHRASE_EXTRACTORS.get(config.graph.lazy.extractor)(
            config.graph.lazy
        ),
        reranker=RERANKERS.get(config.query.rerank.kind)(config.query.rerank),
        message_sources=load_message_sources(),
        prompts=prompts,
        opened_models=opened,
    )
