"""Registers the built-in adapters: importing their packages runs their ``register`` calls.

Each package registers loaders only; no heavy library is imported until a loader runs.
"""

from __future__ import annotations

__all__ = ["register_all"]


def register_all() -> None:
    """Import every built-in adapter package once, so its providers are registered."""
    from unified_kg_rag.adapters import (  # noqa: F401  (imported for registration)
        embeddings,
        keyphrases,
        llm,
        messages,
        parsers,
        postgres,
        rerank,
        schema_sources,
        sqlite,
    )
