"""Provider registries: which adapter a configuration ``kind`` (or a file extension) selects.

Each entry is a *loader*: a function that imports its library on first call and builds the
adapter from its configuration section. Registering is the only import-time effect, so
``import unified_kg_rag.adapters`` loads no heavy library. Built-in adapters register in their
own modules, imported by `unified_kg_rag.adapters.builtins`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from unified_kg_rag.config.extraction_schema import SchemaSourceConfig
from unified_kg_rag.config.lazy import LazyIndexConfig
from unified_kg_rag.config.models import (
    EmbeddingsConfig,
    LLMConfig,
    ParsingConfig,
    StoresConfig,
)
from unified_kg_rag.config.search import RerankConfig
from unified_kg_rag.domain.extraction.schema import ExtractionSchema
from unified_kg_rag.ports import (
    ChatModel,
    DocumentParser,
    Embedder,
    KeyphraseExtractor,
    MessageSource,
    Reranker,
    StoreBackend,
    TokenCounter,
)
from unified_kg_rag.util.registry import Registry

__all__ = [
    "CHAT_MODELS",
    "CHUNK_TOKENIZERS",
    "EMBEDDERS",
    "KEYPHRASE_EXTRACTORS",
    "MESSAGE_SOURCES",
    "PARSERS",
    "RERANKERS",
    "SCHEMA_SOURCES",
    "STORE_BACKENDS",
    "ChatModelLoader",
    "ChunkTokenizerLoader",
    "EmbedderLoader",
    "KeyphraseExtractorLoader",
    "MessageSourceLoader",
    "ParserLoader",
    "RerankerLoader",
    "SchemaSourceLoader",
    "StoreBackendLoader",
]

EmbedderLoader = Callable[[EmbeddingsConfig], Embedder]
"""Builds an `Embedder` from the ``embeddings`` section."""

ChatModelLoader = Callable[[LLMConfig], ChatModel | None]
"""Builds the raw (unwrapped) `ChatModel` from the ``llm`` section; kind ``none`` gives None."""

ChunkTokenizerLoader = Callable[[EmbeddingsConfig], TokenCounter]
"""Builds the `TokenCounter` chunking uses: the embedding model's own tokenizer when it has
one locally, else the script-aware estimate. Keyed by ``embeddings.kind``."""

StoreBackendLoader = Callable[[StoresConfig, Path], StoreBackend]
"""Builds a `StoreBackend` from the ``stores`` section and the project directory (relative
store paths in the configuration are relative to it)."""

ParserLoader = Callable[[ParsingConfig], DocumentParser]
"""Builds a `DocumentParser` for one file extension."""

EMBEDDERS: Registry[EmbedderLoader] = Registry("embedding provider", field="embeddings.kind")
CHAT_MODELS: Registry[ChatModelLoader] = Registry("llm provider", field="llm.kind")
CHUNK_TOKENIZERS: Registry[ChunkTokenizerLoader] = Registry(
    "chunking tokenizer", field="embeddings.kind"
)
STORE_BACKENDS: Registry[StoreBackendLoader] = Registry("store backend", field="stores.kind")
PARSERS: Registry[ParserLoader] = Registry("parser (file extension)")

KeyphraseExtractorLoader = Callable[[LazyIndexConfig], KeyphraseExtractor]
"""Builds the keyphrase extractor of the `lazy` concept graph from ``graph.lazy``."""

KEYPHRASE_EXTRACTORS: Registry[KeyphraseExtractorLoader] = Registry(
    "keyphrase extractor", field="graph.lazy.extractor"
)

RerankerLoader = Callable[[RerankConfig], Reranker | None]
"""Builds the `Reranker` from ``query.rerank``; kind ``none`` gives None."""

RERANKERS: Registry[RerankerLoader] = Registry("reranker", field="query.rerank.kind")

MessageSourceLoader = Callable[[], MessageSource]
"""Builds a `MessageSource` (iMessage ``chat.db``, generic JSON Lines). Sources are tried in
registration order (`Registry.in_order`): the first whose ``matches`` accepts a file parses it;
``--source NAME`` forces one."""

MESSAGE_SOURCES: Registry[MessageSourceLoader] = Registry("message source", field="--source")

SchemaSourceLoader = Callable[[SchemaSourceConfig, Path | None, str], ExtractionSchema]
"""Reads one ``graph.extraction.schema_sources`` entry into an `ExtractionSchema`: the entry,
the project directory (relative paths) and the entry's field name for messages
(``graph.extraction.schema_sources.0``). Raises `ConfigurationError` naming the file or field."""

SCHEMA_SOURCES: Registry[SchemaSourceLoader] = Registry(
    "schema source", field="graph.extraction.schema_sources[].kind"
)
