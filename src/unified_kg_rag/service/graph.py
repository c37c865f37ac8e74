"""Routes over an index's graph under ``/v1/graph``: labels, slices, nodes, communities, traces.

Thin over `retrieval.graph_view.GraphReader`. ``graph`` picks the LLM-built entity graph
(``entities``) or the `lazy` concept graph (``concepts``); without it the entity graph when
the index has one, else the concept graph. An index without the graph asked for answers 409
(``MethodologyNotIndexedError``), an unknown label or id 404 (``NotFoundError``), a parameter
out of its bounds 422. The graph is loaded once per build and kept by the `App`, so a
request reads the store only for the texts it shows.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, ConfigDict, Field

from unified_kg_rag.retrieval.graph_view import (
    CommunityDetail,
    CommunityHierarchy,
    GraphKind,
    GraphSlice,
    LabelSearch,
    NodeDetail,
    TraceSource,
)
from unified_kg_rag.service.auth import requires
from unified_kg_rag.service.deps import app_of

__all__ = ["MAX_DEPTH", "MAX_NODES", "MAX_TRACE_SOURCES", "TraceRequest", "router"]

router = APIRouter(prefix="/v1/graph", dependencies=[Depends(requires("read"))])

MAX_NODES = 2000
"""The most nodes a slice may ask for."""
MAX_DEPTH = 5
"""The most hops a slice may walk."""
MAX_TRACE_SOURCES = 1000
"""The most sources a trace may name."""

_GRAPH = Query(default=None, description="entities or concepts (default: entities if held)")


@router.get("/labels")
async def labels(
    request: Request,
    q: str = Query(default="", max_length=200, description="label text (case-insensitive)"),
    limit: int = Query(default=20, ge=1, le=200),
    index: str | None = None,
    graph: GraphKind | None = _GRAPH,
) -> LabelSearch:
    """Node labels matching ``q``: exact, then prefix, then word-prefix matches, by degree."""
    return await app_of(request).graph_reader(index).labels(q, graph=graph, limit=limit)


@router.get("/slice")
async def graph_slice(
    request: Request,
    label: str | None = Query(default=None, min_length=1, max_length=500,
                              description="centre node's label or id; * for the whole graph"),
    community: str | None = Query(default=None, min_length=1, max_length=500,
                                  description="a community id: its members (instead of label)"),
    max_depth: int = Query(default=2, ge=0, le=MAX_DEPTH),
    max_nodes: int = Query(default=200, ge=1, le=MAX_NODES),
    index: str | None = None,
    graph: GraphKind | None = _GRAPH,
) -> GraphSlice:
    """A neighbourhood of ``label`` or a community's members (graphology's serialized graph).

    The nodes within ``max_depth`` hops of ``label``: breadth-first, each ring by degree, at
    most ``max_nodes``; or a community's members by degree. ``attributes.truncated`` says the
    cap left nodes out. Give ``label`` or ``community``: neither or both is 400.
    """
    reader = app_of(request).graph_reader(index)
    return await reader.slice(label, graph=graph, max_depth=max_depth, max_nodes=max_nodes,
                              community=community)  # fmt: skip


class TraceRequest(BaseModel):
    """The body of ``POST /v1/graph/trace``: an answer's numbered sources.

    Attributes:
        index: the index the answer came from (None: ``query.index``).
        graph: ``entities`` or ``concepts`` (None: the entity graph when held).
        sources: the answer's sources (``n``, ``kind``, ``id``, ``text_unit_ids`` of each
            `Source`); at least one.
        max_nodes: the node cap (traced nodes first, then their neighbours).
        max_depth: hops of neighbourhood drawn around the traced nodes.
    """

    model_config = ConfigDict(extra="ignore")

    index: str | None = None
    graph: GraphKind | None = None
    sources: list[TraceSource] = Field(min_length=1, max_length=MAX_TRACE_SOURCES)
    max_nodes: int = Field(default=200, ge=1, le=MAX_NODES)
    max_depth: int = Field(default=1, ge=0, le=MAX_DEPTH)


@router.post("/trace")
async def trace(request: Request, body: TraceRequest) -> GraphSlice:
    """What an answer's sources put in context, highlighted inside its neighbourhood.

    Entities, concepts, relationships (both ends and the edge), reports (the community and
    its top members) and text units (the entities or concepts they state) get
    ``attributes.trace`` and ``attributes.sources`` (the ``[n]`` they came through); the
    communities in context are listed in the slice's ``attributes.communities``; ids the
    graph lacks become ``attributes.notes``. Traced nodes are never cut before neighbours.
    """
    reader = app_of(request).graph_reader(body.index)
    return await reader.trace(body.sources, graph=body.graph, max_nodes=body.max_nodes,
                              max_depth=body.max_depth)  # fmt: skip


@router.get("/nodes/{key}")
async def node(
    request: Request,
    key: str,
    index: str | None = None,
    graph: GraphKind | None = _GRAPH,
    links_limit: int = Query(default=50, ge=1, le=1000),
    units_limit: int = Query(default=20, ge=1, le=200),
    messages_per_unit: int = Query(default=10, ge=0, le=100),
) -> NodeDetail:
    """One entity or concept (by id or label): description, edges, communities, sources."""
    return await app_of(request).graph_reader(index).node(
        key, graph=graph, links_limit=links_limit, units_limit=units_limit,
        messages_per_unit=messages_per_unit,
    )  # fmt: skip


@router.get("/entities/{key}")
async def entity(
    request: Request,
    key: str,
    index: str | None = None,
    links_limit: int = Query(default=50, ge=1, le=1000),
    units_limit: int = Query(default=20, ge=1, le=200),
    messages_per_unit: int = Query(default=10, ge=0, le=100),
) -> NodeDetail:
    """One entity of the LLM graph (``/nodes/{key}?graph=entities``)."""
    return await app_of(request).graph_reader(index).node(
        key, graph="entities", links_limit=links_limit, units_limit=units_limit,
        messages_per_unit=messages_per_unit,
    )  # fmt: skip


@router.get("/concepts/{key}")
async def concept(
    request: Request,
    key: str,
    index: str | None = None,
    links_limit: int = Query(default=50, ge=1, le=1000),
    units_limit: int = Query(default=20, ge=1, le=200),
) -> NodeDetail:
    """One concept of the `lazy` graph: co-occurring concepts, units, communities."""
    return await app_of(request).graph_reader(index).node(
        key, graph="concepts", links_limit=links_limit, units_limit=units_limit
    )


@router.get("/communities")
async def communities(
    request: Request,
    index: str | None = None,
    graph: GraphKind | None = _GRAPH,
    level: int | None = Query(default=None, ge=0),
) -> CommunityHierarchy:
    """The community hierarchy by level: size, parent, children and report title of each."""
    return await app_of(request).graph_reader(index).communities(graph=graph, level=level)


@router.get("/communities/{community_id}")
async def community(
    request: Request,
    community_id: str,
    index: str | None = None,
    graph: GraphKind | None = _GRAPH,
    members_limit: int = Query(default=50, ge=1, le=1000),
) -> CommunityDetail:
    """One community: its report (title, summary, rating, findings) and top members."""
    return await app_of(request).graph_reader(index).community(
        community_id, graph=graph, members_limit=members_limit
    )
