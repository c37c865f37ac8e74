"""Derived stages: one module per stage built from the stored text units (`stages.base`).

Importing this package registers the built-in stages (they run in this order):

- `graph` — the LLM knowledge graph (`graphrag`, `lightrag`, `hipporag`).
- `concepts` — the LLM-free concept graph (`lazy`).
- `summary_tree` — the RAPTOR summary tree (`raptor`).
"""

from unified_kg_rag.ingestion.stages import concepts as concepts  # registers "concepts"
from unified_kg_rag.ingestion.stages import graph as graph  # registers "graph"
from unified_kg_rag.ingestion.stages import summary_tree as summary_tree  # "summary_tree"
from unified_kg_rag.ingestion.stages.base import (
    DERIVED_STAGES,
    DerivedStage,
    StageContext,
    StageRun,
    register_stage,
    selected_stages,
)

__all__ = [
    "DERIVED_STAGES",
    "DerivedStage",
    "StageContext",
    "StageRun",
    "register_stage",
    "selected_stages",
]
