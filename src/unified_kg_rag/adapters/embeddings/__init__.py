"""Embedding providers, and the chunking tokenizer that goes with each.

Registers in `adapters.registry`:

- `EMBEDDERS` ``local``: `LocalEmbedder` (bundled all-MiniLM-L6-v2, offline, hash-checked);
- `EMBEDDERS` ``openai``: `OpenAIEmbedder` (any OpenAI-compatible ``/embeddings``);
- `CHUNK_TOKENIZERS` ``local``: `HFTokenCounter` on the local model's ``tokenizer.json``, so
  text units are sized in the embedding model's own tokens;
- `CHUNK_TOKENIZERS` ``openai``: `EstimateTokenCounter` (the remote tokenizer is unknown).

Loaders import their heavy modules (torch, sentence-transformers, openai) when called.
"""

from __future__ import annotations

from pathlib import Path

from unified_kg_rag.adapters.registry import CHUNK_TOKENIZERS, EMBEDDERS
from unified_kg_rag.config.models import EmbeddingsConfig
from unified_kg_rag.domain.text.tokens import EstimateTokenCounter
from unified_kg_rag.ports import Embedder, TokenCounter
from unified_kg_rag.util.errors import ConfigurationError

__all__ = [
    "load_estimate_tokenizer",
    "load_local_embedder",
    "load_local_tokenizer",
    "load_openai_embedder",
]


def load_local_embedder(config: EmbeddingsConfig) -> Embedder:
    """Build a `LocalEmbedder` (the model itself loads at the first embedding)."""
    from unified_kg_rag.adapters.embeddings.local import LocalEmbedder

    return LocalEmbedder(config)


def load_openai_embedder(config: EmbeddingsConfig) -> Embedder:
    """Build an `OpenAIEmbedder` from ``config.openai``."""
    from unified_kg_rag.adapters.embeddings.openai import OpenAIEmbedder

    return OpenAIEmbedder(config.openai)


def load_local_tokenizer(config: EmbeddingsConfig) -> TokenCounter:
    """Build an `HFTokenCounter` from the local model's ``tokenizer.json``.

    Raises:
        ConfigurationError: the model directory has no ``tokenizer.json``, or the bundled
            model package is not installed.
    """
    from unified_kg_rag.adapters.embeddings.local import bundled_model_path
    from unified_kg_rag.adapters.tokens.hf import HFTokenCounter

    model_dir = Path(config.local.model_path) if config.local.model_path else bundled_model_path()
    path = model_dir / "tokenizer.json"
    if not path.is_file():
        raise ConfigurationError(
            f"{model_dir} has no tokenizer.json (a fast tokenizer is needed to size text units)",
            field="embeddings.local.model_path",
        )
    return HFTokenCounter(path)


def load_estimate_tokenizer(config: EmbeddingsConfig) -> TokenCounter:
    """Return the script-aware `EstimateTokenCounter`."""
    return EstimateTokenCounter()


EMBEDDERS.register("local", load_local_embedder)
EMBEDDERS.register("openai", load_openai_embedder)
CHUNK_TOKENIZERS.register("local", load_local_tokenizer)
CHUNK_TOKENIZERS.register("openai", load_estimate_tokenizer)
