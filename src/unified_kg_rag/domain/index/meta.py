"""Where an index records facts about itself in its `RecordStore`.

``INDEX_NAMESPACE`` / ``METHODOLOGIES_KEY`` hold a JSON list of the methodologies whose
artefacts the index holds; strategies that need one are refused on an index without it.
``LAZY_NAMESPACE`` holds the `lazy` concept graph (`encode_concept_graph`) and its
communities; ``INDEX_NAMESPACE`` / ``LAZY_BUILD_KEY`` the digest of the inputs it was built
from, which readers use to tell a stale in-memory copy from the stored one. ``RAPTOR_NAMESPACE`` /
``SUMMARY_TREE_KEY`` hold the `raptor` summary tree (`domain.tree.nodes.SummaryTree`), and
``INDEX_NAMESPACE`` / ``RAPTOR_BUILD_KEY`` the digest of its build's inputs.
``PAGERANK_NAMESPACES`` hold the global PageRank of the entity graph and of the concept graph
(`domain.ranking.centrality`), one namespace each: ``n:<node id>`` and ``u:<text unit id>``
keys (a float as text) and a ``meta`` key (`PageRankMeta`, JSON).
"""

from __future__ import annotations

import base64
import json
from typing import Literal

from pydantic import BaseModel

from unified_kg_rag.domain.concepts.graph import ConceptGraph

__all__ = [
    "CONCEPT_COMMUNITIES_KEY",
    "CONCEPT_GRAPH_KEY",
    "INDEX_NAMESPACE",
    "LAZY_BUILD_KEY",
    "LAZY_NAMESPACE",
    "METHODOLOGIES_KEY",
    "PAGERANK_META_KEY",
    "PAGERANK_NAMESPACES",
    "RAPTOR_BUILD_KEY",
    "RAPTOR_NAMESPACE",
    "SUMMARY_TREE_KEY",
    "PageRankGraph",
    "PageRankMeta",
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

PageRankGraph = Literal["entities", "concepts"]
"""The graphs whose PageRank an index stores: the LLM entity graph, the `lazy` concepts."""
PAGERANK_NAMESPACES: dict[PageRankGraph, str] = {
    "entities": "pagerank_entities", "concepts": "pagerank_concepts",
}  # fmt: skip
PAGERANK_META_KEY = "meta"


class PageRankMeta(BaseModel):
    """What a stored PageRank was computed from (the ``meta`` key of its namespace).

    Attributes:
        version: the layout's version (1).
        digest: `domain.ranking.centrality.graph_digest` of the graph it was computed on.
        source: for the concept graph, the ``lazy_build`` digest it follows ("" otherwise).
        nodes: nodes of the graph.
        edges: distinct undirected edges of the graph.
        units: text units with a value.
        damping: the damping used.
        max_value: the largest node value (values are divided by it for 0..1).
        iterations: power-iteration steps taken.
        seconds: wall time of the computation, seconds.
    """

    version: int = 1
    digest: str
    source: str = ""
    nodes: int
    edges: int
    units: int
    damping: float
    max_value: float
    iterations: int
    seconds: float = 0.0


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
