"""Ports: the interfaces the application uses and the adapters implement (DESIGN.md §5).

Each port is a small `typing.Protocol` written in domain models; adapters need not inherit,
mypy checks the match. Store ports are bound to one index (namespace) when they are opened by
a `StoreBackend`. Every store port has one conformance suite (``tests/conformance/``) that
runs against every backend.

Errors: store methods raise `StoreError` subclasses (never return "no results" for a failure);
model methods raise `ModelError` subclasses.
"""

from unified_kg_rag.ports.models import (
    ChatModel,
    DocumentParser,
    Embedder,
    KeyphraseExtractor,
    LoadsModel,
    MessageSource,
    Reranker,
    TokenCounter,
)
from unified_kg_rag.ports.stores import (
    AccessLog,
    DocRegistry,
    Filters,
    GraphStore,
    IndexStores,
    PreparesVectorSearch,
    ProgressReporter,
    RecordStore,
    SearchIndex,
    StoreBackend,
)

__all__ = [
    "AccessLog",
    "ChatModel",
    "DocRegistry",
    "DocumentParser",
    "Embedder",
    "Filters",
    "GraphStore",
    "IndexStores",
    "KeyphraseExtractor",
    "LoadsModel",
    "MessageSource",
    "PreparesVectorSearch",
    "ProgressReporter",
    "RecordStore",
    "Reranker",
    "SearchIndex",
    "StoreBackend",
    "TokenCounter",
]
