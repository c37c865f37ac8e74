"""Retrieval strategies. Importing this package registers the built-in ones."""

from unified_kg_rag.retrieval.strategies import auto as auto  # registers "auto"
from unified_kg_rag.retrieval.strategies import drift as drift  # registers "drift"
from unified_kg_rag.retrieval.strategies import global_search as global_search  # "global"
from unified_kg_rag.retrieval.strategies import iterative as iterative  # "iterative"
from unified_kg_rag.retrieval.strategies import lazy as lazy  # registers "lazy"
from unified_kg_rag.retrieval.strategies import lightrag as lightrag  # "hybrid", "mix"
from unified_kg_rag.retrieval.strategies import local as local  # registers "local"
from unified_kg_rag.retrieval.strategies import naive as naive  # registers "naive"
from unified_kg_rag.retrieval.strategies import ppr as ppr  # registers "ppr"
from unified_kg_rag.retrieval.strategies import simple as simple  # registers "simple"
from unified_kg_rag.retrieval.strategies import tree as tree  # registers "tree"
from unified_kg_rag.retrieval.strategies.base import (
    SECTION_KINDS,
    STRATEGIES,
    Bucket,
    Candidate,
    QueryContext,
    Strategy,
    StrategyResult,
    StrategySpec,
    is_fatal,
    register_strategy,
)

__all__ = [
    "SECTION_KINDS",
    "STRATEGIES",
    "Bucket",
    "Candidate",
    "QueryContext",
    "Strategy",
    "StrategyResult",
    "StrategySpec",
    "is_fatal",
    "register_strategy",
]
