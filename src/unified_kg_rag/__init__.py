"""unified-kg-rag: knowledge-graph and hybrid-search RAG, offline by default.

The names in ``__all__`` are the supported public API; they resolve on first access, so
``import unified_kg_rag`` loads nothing heavy (no torch, no SQLite, no model SDK). Other
module paths are internal and may change between releases.

Example::

    import asyncio
    from pathlib import Path
    from unified_kg_rag import RAGInput, build_app, load_config

    async def main() -> None:
        project = Path(".")
        config = load_config(project)
        async with build_app(config, project) as app:
            chain = app.chain()
            out = await chain.ainvoke(RAGInput(question="What is in my notes?", strategy="mix"))
            print(out.answer)

    asyncio.run(main())
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # configuration
    "UkrConfig": "unified_kg_rag.config.models",
    "load_config": "unified_kg_rag.config.load",
    # composition root
    "App": "unified_kg_rag.bootstrap",
    "build_app": "unified_kg_rag.bootstrap",
    # application
    "IndexPipeline": "unified_kg_rag.ingestion.pipeline",
    "IndexReport": "unified_kg_rag.ingestion.report",
    "GraphIndexer": "unified_kg_rag.ingestion.graph.build",
    "GraphBuildReport": "unified_kg_rag.ingestion.graph.report",
    "ExtractionRecord": "unified_kg_rag.domain.extraction.records",
    "describe_index": "unified_kg_rag.ingestion.status",
    "RAGChain": "unified_kg_rag.retrieval.chain",
    "RetrievalOutput": "unified_kg_rag.retrieval.chain",
    "RAGInput": "unified_kg_rag.retrieval.chain",
    "SearchOutput": "unified_kg_rag.retrieval.chain",
    "register_strategy": "unified_kg_rag.retrieval.strategies",
    "STRATEGIES": "unified_kg_rag.retrieval.strategies",
    "evaluate": "unified_kg_rag.evaluation.runner",
    "EvalReport": "unified_kg_rag.evaluation.runner",
    "load_dataset": "unified_kg_rag.evaluation.dataset",
    # domain models
    "Document": "unified_kg_rag.domain.models",
    "TextUnit": "unified_kg_rag.domain.models",
    "Entity": "unified_kg_rag.domain.models",
    "Relationship": "unified_kg_rag.domain.models",
    "Community": "unified_kg_rag.domain.models",
    "CommunityReport": "unified_kg_rag.domain.models",
    "RAGOutput": "unified_kg_rag.domain.models",
    "Source": "unified_kg_rag.domain.models",
    "TokenUsage": "unified_kg_rag.domain.models",
    "entity_key": "unified_kg_rag.domain.identity",
    # ports and registries (for extending)
    "ChatModel": "unified_kg_rag.ports",
    "Embedder": "unified_kg_rag.ports",
    "TokenCounter": "unified_kg_rag.ports",
    "SearchIndex": "unified_kg_rag.ports",
    "GraphStore": "unified_kg_rag.ports",
    "DocRegistry": "unified_kg_rag.ports",
    "RecordStore": "unified_kg_rag.ports",
    "StoreBackend": "unified_kg_rag.ports",
    "DocumentParser": "unified_kg_rag.ports",
    "Reranker": "unified_kg_rag.ports",
    "EMBEDDERS": "unified_kg_rag.adapters.registry",
    "CHAT_MODELS": "unified_kg_rag.adapters.registry",
    "STORE_BACKENDS": "unified_kg_rag.adapters.registry",
    "PARSERS": "unified_kg_rag.adapters.registry",
    # errors
    "UkrError": "unified_kg_rag.util.errors",
    "BuildInProgress": "unified_kg_rag.util.errors",
    "ConfigurationError": "unified_kg_rag.util.errors",
    "UsageError": "unified_kg_rag.util.errors",
    "InputError": "unified_kg_rag.util.errors",
    "StoreError": "unified_kg_rag.util.errors",
    "ModelError": "unified_kg_rag.util.errors",
    "MethodologyNotIndexedError": "unified_kg_rag.util.errors",
}

__all__ = [
    "CHAT_MODELS",
    "EMBEDDERS",
    "PARSERS",
    "STORE_BACKENDS",
    "STRATEGIES",
    "App",
    "BuildInProgress",
    "ChatModel",
    "Community",
    "CommunityReport",
    "ConfigurationError",
    "DocRegistry",
    "Document",
    "DocumentParser",
    "Embedder",
    "Entity",
    "EvalReport",
    "ExtractionRecord",
    "GraphBuildReport",
    "GraphIndexer",
    "GraphStore",
    "IndexPipeline",
    "IndexReport",
    "InputError",
    "MethodologyNotIndexedError",
    "ModelError",
    "RAGChain",
    "RAGInput",
    "RAGOutput",
    "RecordStore",
    "Relationship",
    "Reranker",
    "RetrievalOutput",
    "SearchIndex",
    "SearchOutput",
    "Source",
    "StoreBackend",
    "StoreError",
    "TextUnit",
    "TokenCounter",
    "TokenUsage",
    "UkrConfig",
    "UkrError",
    "UsageError",
    "__version__",
    "build_app",
    "describe_index",
    "entity_key",
    "evaluate",
    "load_config",
    "load_dataset",
    "register_strategy",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'unified_kg_rag' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - names for type checkers and IDEs
    from unified_kg_rag.adapters.registry import CHAT_MODELS, EMBEDDERS, PARSERS, STORE_BACKENDS
    from unified_kg_rag.bootstrap import App, build_app
    from unified_kg_rag.config.load import load_config
    from unified_kg_rag.config.models import UkrConfig
    from unified_kg_rag.domain.extraction.records import ExtractionRecord
    from unified_kg_rag.domain.identity import entity_key
    from unified_kg_rag.domain.models import (
        Community,
        CommunityReport,
        Document,
        Entity,
        RAGOutput,
        Relationship,
        Source,
        TextUnit,
        TokenUsage,
    )
    from unified_kg_rag.evaluation.dataset import load_dataset
    from unified_kg_rag.evaluation.runner import EvalReport, evaluate
    from unified_kg_rag.ingestion.graph.build import GraphIndexer
    from unified_kg_rag.ingestion.graph.report import GraphBuildReport
    from unified_kg_rag.ingestion.pipeline import IndexPipeline
    from unified_kg_rag.ingestion.report import IndexReport
    from unified_kg_rag.ingestion.status import describe_index
    from unified_kg_rag.ports import (
        ChatModel,
        DocRegistry,
        DocumentParser,
        Embedder,
        GraphStore,
        RecordStore,
        Reranker,
        SearchIndex,
        StoreBackend,
        TokenCounter,
    )
    from unified_kg_rag.retrieval.chain import RAGChain, RAGInput, RetrievalOutput, SearchOutput
    from unified_kg_rag.retrieval.strategies import STRATEGIES, register_strategy
    from unified_kg_rag.util.errors import (
        BuildInProgress,
        ConfigurationError,
        InputError,
        MethodologyNotIndexedError,
        ModelError,
        StoreError,
        UkrError,
        UsageError,
    )
