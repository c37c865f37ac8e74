"""What evaluation needs of the application: the `App` surface it calls, as a protocol.

Evaluation drives the application API only (an import-linter contract forbids it the
adapters, which the composition root names), so it types `bootstrap.App` structurally.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from unified_kg_rag.config.models import UkrConfig
    from unified_kg_rag.domain.llm.roles import ModelRole
    from unified_kg_rag.domain.prompts.library import PromptLibrary
    from unified_kg_rag.ingestion.status import StatusReport
    from unified_kg_rag.ports import ChatModel, Embedder, IndexStores
    from unified_kg_rag.retrieval.chain import RAGChain

__all__ = ["EvalApp"]


class EvalApp(Protocol):
    """The part of `unified_kg_rag.bootstrap.App` a comparison run uses."""

    @property
    def config(self) -> UkrConfig:
        """The effective configuration."""
        ...

    @property
    def chat_model(self) -> ChatModel | None:
        """The default model (``llm``), or None."""
        ...

    def model_for(self, role: ModelRole) -> ChatModel | None:
        """The model serving ``role`` (``answer``: the answer model; None: extractive)."""
        ...

    @property
    def prompts(self) -> PromptLibrary:
        """The prompt templates in effect."""
        ...

    @property
    def embedder(self) -> Embedder:
        """The embedding model (loaded before the first timed answer)."""
        ...

    def index(self, name: str | None = None) -> IndexStores:
        """The store ports of an index."""
        ...

    def chain(self, index: str | None = None) -> RAGChain:
        """The query chain over an index."""
        ...

    def judge_model(self) -> tuple[ChatModel | None, bool]:
        """The judge and whether it is the answer model."""
        ...

    async def status(self) -> StatusReport:
        """Every index of the project, described."""
        ...
