"""Browsing an index's graph: label search, slices, nodes, communities, query traces (no HTTP).

The LLM-built entity graph and the LLM-free `lazy` concept graph are read through one
`GraphReader` (`reader`); results are the typed models of `models`, a slice in graphology's
serialized shape. The service's ``/v1/graph`` routes and the MCP server call it.
"""

from unified_kg_rag.retrieval.graph_view.loaded import GraphView
from unified_kg_rag.retrieval.graph_view.models import (
    CommunityDetail,
    CommunityHierarchy,
    CommunityInfo,
    CommunityLevel,
    DocumentRef,
    GraphKind,
    GraphSlice,
    LabelMatch,
    LabelSearch,
    NodeCommunity,
    NodeDetail,
    NodeLink,
    TraceCommunity,
    TraceSource,
    UnitRef,
)
from unified_kg_rag.retrieval.graph_view.reader import GraphReader

__all__ = [
    "CommunityDetail",
    "CommunityHierarchy",
    "CommunityInfo",
    "CommunityLevel",
    "DocumentRef",
    "GraphKind",
    "GraphReader",
    "GraphSlice",
    "GraphView",
    "LabelMatch",
    "LabelSearch",
    "NodeCommunity",
    "NodeDetail",
    "NodeLink",
    "TraceCommunity",
    "TraceSource",
    "UnitRef",
]
