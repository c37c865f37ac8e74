"""Token counters backed by real tokenizers (``tokenizers`` library).

The script-aware estimate needs no library and lives in `unified_kg_rag.domain.text.tokens`.
Which counter chunking uses is chosen by `adapters.registry.CHUNK_TOKENIZERS`, registered by
`unified_kg_rag.adapters.embeddings` (the counter follows the embedding model).
"""

from __future__ import annotations

from unified_kg_rag.adapters.tokens.hf import HFTokenCounter

__all__ = ["HFTokenCounter"]
