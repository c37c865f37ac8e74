"""Retrieval strategies. Importing this package registers the built-in ones."""

from unified_kg_rag.retrieval.strategies import naive  # noqa: F401  (registers "naive")
from unified_kg_rag.retrieval.strategies.base import (
    STRATEGIES,
    Candidate,
    QueryContext,
    Strategy,
    StrategySpec,
    register_strategy,
)

__all__ = [
    "STRATEGIES",
    "Candidate",
    "QueryContext",
    "Strategy",
    "StrategySpec",
    "register_strategy",
]
