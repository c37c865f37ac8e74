"""Retrieval strategies. Importing this package registers the built-in ones."""

from unified_kg_rag.retrieval.strategies import auto as auto  # registers "auto"
from unified_kg_rag.retrieval.strategies import lazy as lazy  # registers "lazy"
from unified_kg_rag.retrieval.strategies import naive as naive  # registers "naive"
from unified_kg_rag.retrieval.strategies import ppr as ppr  # registers "ppr"
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
