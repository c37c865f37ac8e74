"""The derived-stage interface: one module per stage built from the stored text units.

After the text units of a run landed (or were removed), each registered `DerivedStage` whose
methodologies are selected runs in its ``order`` (the LLM graph, the concept graph, the
summary tree). A stage reads what the stores hold, skips itself when its inputs match its
last complete build, writes its report into the run's report (``report_field``), and says
which methodologies it built, so the index records what it holds. A new methodology is a
`domain.index.methodologies.register_methodology` profile naming its stage plus a module
here calling `register_stage` (as Microsoft GraphRAG keeps one module per indexing workflow).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.config.prompts import load_prompt_library
from unified_kg_rag.domain.extraction.schema import ExtractionSchema
from unified_kg_rag.domain.index.methodologies import METHODOLOGIES
from unified_kg_rag.domain.llm.roles import ModelRole, RoleModels
from unified_kg_rag.domain.prompts.library import PromptLibrary
from unified_kg_rag.ports import (
    ChatModel,
    Embedder,
    IndexStores,
    KeyphraseExtractor,
    ProgressReporter,
    TokenCounter,
)
from unified_kg_rag.util.registry import Registry

if TYPE_CHECKING:
    from unified_kg_rag.ingestion.report import IndexReport

__all__ = [
    "DERIVED_STAGES",
    "DerivedStage",
    "StageContext",
    "StageRun",
    "register_stage",
    "selected_stages",
]


@dataclass(frozen=True)
class StageContext:
    """What a derived stage may use, for one pipeline's settings.

    Attributes:
        config: the effective configuration.
        embedder: the index's embedding model.
        budget_tokenizer: token counter for prompt and summary budgets.
        progress: receives progress events.
        chat_model: the wrapped default LLM; None when ``llm.kind: none``.
        models: the model of each role (`domain.llm.roles`); None: ``chat_model`` serves
            every role. Stages ask `model` for their role's.
        project_dir: where relative prompt files are looked up.
        force_rebuild: ask the LLM again and rebuild even when the inputs are unchanged.
        keyphrase_extractor: the `lazy` concept graph's extractor (None: YAKE).
        prompts: the prompts in effect (None: read from ``config`` when a stage needs them).
        extraction_schema: the extraction schema of ``graph.extraction.schema_sources``
            (None: no schema).
    """

    config: UkrConfig
    embedder: Embedder
    budget_tokenizer: TokenCounter
    progress: ProgressReporter
    chat_model: ChatModel | None = None
    models: RoleModels[ChatModel] | None = None
    project_dir: Path | None = None
    force_rebuild: bool = False
    keyphrase_extractor: KeyphraseExtractor | None = None
    prompts: PromptLibrary | None = None

    def prompt_library(self) -> PromptLibrary:
        """Return the prompts in effect (``prompts``, else `load_prompt_library` of config).

        Raises:
            ConfigurationError: a configured prompt file is unreadable or wrong.
        """
        if self.prompts is not None:
            return self.prompts
        return load_prompt_library(self.config, self.project_dir)
    extraction_schema: ExtractionSchema | None = None

    def model(self, role: ModelRole) -> ChatModel | None:
        """Return the model serving ``role`` (``chat_model`` without ``models``), or None."""
        return self.chat_model if self.models is None else self.models.for_role(role)

    @property
    def methodologies(self) -> list[str]:
        """The methodologies the run builds (``UkrConfig.methodologies``)."""
        return self.config.methodologies()


@dataclass(frozen=True)
class StageRun:
    """One run of a derived stage: where, and how.

    Attributes:
        stores: the index's (fenced) stores.
        report: the run's report; the stage sets its ``report_field`` (and may add counts).
        rebuild: ``--reset``: build even when the inputs are unchanged, then sweep what the
            new build does not list.
        retry_quarantined: extract the quarantined text units again.
    """

    stores: IndexStores
    report: IndexReport
    rebuild: bool = False
    retry_quarantined: bool = False


class DerivedStage(Protocol):
    """A stage derived from the stored text units (`ingestion.stages`).

    Attributes:
        name: the stage name, as `MethodologyProfile.stage` names it.
        report_field: the `IndexReport` / `DeleteReport` attribute holding its report (""
            for a stage that reports nothing there).
        order: stages run by ascending order (the graph 10, concepts 20, summary tree 30).
    """

    name: str
    report_field: str
    order: int

    async def run(self, ctx: StageContext, run: StageRun) -> tuple[str, ...]:
        """Build (or skip) the stage; return the selected methodologies it now holds built.

        A stage that stopped on a model error reports it and returns ``()``: what earlier
        runs recorded stays recorded.

        Raises:
            StoreError: a store failed.
            ConfigurationError: a configured prompt file is unusable.
        """
        ...


DERIVED_STAGES: Registry[DerivedStage] = Registry("derived stage")


def register_stage(stage: DerivedStage) -> DerivedStage:
    """Register ``stage`` (stages run by ascending ``order``)."""
    return DERIVED_STAGES.register(stage.name, stage)


def selected_stages(methodologies: Sequence[str]) -> list[DerivedStage]:
    """Return the registered stages some of ``methodologies`` need, in running order."""
    wanted = {METHODOLOGIES[m].stage for m in methodologies if m in METHODOLOGIES}
    stages = [DERIVED_STAGES.get(n) for n in DERIVED_STAGES.names() if n in wanted]
    return sorted(stages, key=lambda s: s.order)
