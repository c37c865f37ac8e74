"""Reranker providers: which adapter ``query.rerank.kind`` selects.

Registers in `adapters.registry.RERANKERS`:

- ``none``: no reranking (the fused order is kept); the loader returns None;
- ``cross_encoder``: `CrossEncoderReranker`, a local sentence-transformers cross-encoder
  loaded from ``query.rerank.model_path`` (offline; nothing is downloaded);
- ``http``: `HttpReranker`, a ``/rerank`` endpoint of the Cohere / Jina / TEI shape.

Loaders import their modules when called, so importing this package loads neither torch,
sentence-transformers nor httpx.
"""

from __future__ import annotations

from unified_kg_rag.adapters.registry import RERANKERS
from unified_kg_rag.config.search import RerankConfig
from unified_kg_rag.ports import Reranker

__all__ = ["load_cross_encoder", "load_http", "load_none"]


def load_none(config: RerankConfig) -> Reranker | None:
    """Return None: no reranker is configured."""
    return None


def load_cross_encoder(config: RerankConfig) -> Reranker:
    """Build a `CrossEncoderReranker` from ``config`` (the model loads at the first call).

    Raises:
        ConfigurationError: ``model_path`` is not set.
    """
    from unified_kg_rag.adapters.rerank.cross_encoder import CrossEncoderReranker

    return CrossEncoderReranker.from_config(config)


def load_http(config: RerankConfig) -> Reranker:
    """Build an `HttpReranker` from ``config``.

    Raises:
        ConfigurationError: ``url`` is not an http(s) URL.
    """
    from unified_kg_rag.adapters.rerank.http import HttpReranker

    return HttpReranker.from_config(config)


RERANKERS.register("none", load_none)
RERANKERS.register("cross_encoder", load_cross_encoder)
RERANKERS.register("http", load_http)
