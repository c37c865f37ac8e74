"""Where an index records facts about itself in its `RecordStore`.

``INDEX_NAMESPACE`` / ``METHODOLOGIES_KEY`` hold a JSON list of the methodologies whose
artefacts the index holds; strategies that need one are refused on an index without it.
``LAZY_NAMESPACE`` holds the `lazy` concept graph (`encode_concept_graph`) and its
communities; ``INDEX_NAMESPACE`` / ``LAZY_BUILD_KEY`` the digest of the inputs it was built
from, which readers use to tell a stale in-memory copy from the stored one. ``RAPTOR_NAMESPACE`` /
``SUMMARY_TREE_KEY`` hold the `raptor` summary tree (`domain.tree.nodes.SummaryTree`), and
``INDEX_NAMESPACE`` / ``RAPTOR_BUILD_KEY`` the digest of its build's inputs.
"""

from __future__ import annotations

import base64
import json

from unified_kg_rag.domain.concepts.graph import ConceptGraph

__all__ = [
    "CONCEPT_COMMUNITIES_KEY",
    "CONCEPT_GRAPH_KEY",
    "INDEX_NAMESPACE",
    "LAZY_BUILD_KEY",
    "LAZY_NAMESPACE",
    "METHODOLOGIES_KEY",
    "RAPTOR_BUILD_KEY",
    "RAPTOR_NAMESPACE",
    "SUMMARY_TREE_KEY",
    "decode_concept_graph",
    "encode_concept_graph",
    "parse_methodologies",
]

INDEX_NAMESPACE = "index"
METHODOLOGIES_KEY = "methodologies"
LAZY_NAMESPACE = "lazy"
CONCEPT_GRAPH_KEY = "concept_graph"
CONCEPT_COMMUNITIES_KEY = "communities"
LAZY_BUILD_KEY = "lazy_build"
RAPTOR_NAMESPACE = "raptor"
SUMMARY_TREE_KEY = "tree"
RAPTOR_BUILD_KEY = "raptor_build"


def encode_concept_graph(graph: ConceptGraph) -> str:
    """Return the record-store text of a concept graph (base64 of its versioned bytes)."""
    return base64.b64encode(graph.to_bytes()).decode("ascii")


def decode_concept_graph(text: str) -> ConceptGraph:
    """Return the concept graph stored by `encode_concept_graph`.

    Raises:
        StoreSchemaError: the stored bytes are not a concept graph of a known version.
    """
    return ConceptGraph.from_bytes(base64.b64decode(text.encode("ascii")))


def parse_methodologies(raw: str | None) -> tuple[str, ...]:
    """Return the methodologies recorded in ``raw`` (a JSON list), or ``()`` when unset."""
    if not raw:
        return ()
    value = json.loads(raw)
    return tuple(str(v) for v in value) if isinstance(value, list) else ()
