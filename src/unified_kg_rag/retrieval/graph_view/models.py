"""The typed results of the graph view: label matches, slices, node details, communities.

A `GraphSlice` is graphology's serialized-graph shape (``{attributes, options, nodes: [{key,
attributes}], edges: [{key, source, target, attributes}]}``), so a browser loads it with
``Graph.from(slice)`` and draws it with sigma.js as it comes. Node and edge attributes avoid
the name ``type``, which sigma reads as the name of its rendering program: an entity's type is
``entity_type``, a relationship's is ``relation``.

Not here: how the results are computed (`graph_view.view`, `graph_view.detail`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from unified_kg_rag.domain.models import MessageRef

__all__ = [
    "CommunityDetail",
    "CommunityHierarchy",
    "CommunityInfo",
    "CommunityLevel",
    "DocumentRef",
    "GraphKind",
    "GraphOptions",
    "GraphSlice",
    "LabelMatch",
    "LabelSearch",
    "NodeCommunity",
    "NodeDetail",
    "NodeLink",
    "SliceAttributes",
    "SliceEdge",
    "SliceEdgeAttributes",
    "SliceNode",
    "SliceNodeAttributes",
    "TraceCommunity",
    "TraceSource",
    "UnitRef",
]

GraphKind = Literal["entities", "concepts"]
"""Which graph: the LLM-built entity graph, or the LLM-free `lazy` concept graph."""


def _unset(value: object) -> bool:
    """A trace-only attribute left out of plain slices (their JSON stays as it was)."""
    return value is None


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class LabelMatch(_Model):
    """One node whose label matches a search.

    Attributes:
        id: the node's id (an entity id, or a concept id).
        label: its display name.
        entity_type: the entity's type (``PERSON`` ...); ``concept`` for a concept.
        degree: its edges in the whole graph (relationships, or co-occurring concepts).
        match: ``exact`` (the whole label, ignoring case), ``prefix`` (the label starts with
            the query) or ``word`` (a later word of the label starts with it); None outside
            a search (a community's members).
    """

    id: str
    label: str
    entity_type: str
    degree: int
    match: Literal["exact", "prefix", "word"] | None = None


class LabelSearch(_Model):
    """The answer of a label search: best first (exact, prefix, word; then by degree)."""

    index: str
    graph: GraphKind
    query: str
    matches: list[LabelMatch]


class SliceNodeAttributes(_Model):
    """What a slice says about one node (graphology node attributes).

    Attributes:
        label: its display name (sigma's ``label``).
        entity_type: the entity's type; ``concept`` for a concept.
        degree: its edges in the whole graph, not only in the slice.
        depth: hops from the centre (0: the centre).
        community: the id of its smallest (deepest) community, None when it has none.
        community_level: that community's level (0: top).
        trace: in a query trace, True for a node that was in the answer's context (absent
            from plain slices and from the trace's neighbours).
        sources: in a query trace, the numbered sources ``[n]`` the node came through,
            ascending (absent elsewhere).
    """

    label: str
    entity_type: str
    degree: int
    depth: int
    community: str | None = None
    community_level: int | None = None
    trace: bool | None = Field(default=None, exclude_if=_unset)
    sources: list[int] | None = Field(default=None, exclude_if=_unset)


class SliceNode(_Model):
    """One node of a slice, as graphology serializes it."""

    key: str
    attributes: SliceNodeAttributes


class SliceEdgeAttributes(_Model):
    """What a slice says about one edge.

    Attributes:
        weight: the relationship's strength, or the units two concepts share.
        relation: the relationship's type (``BORN_IN`` ...); ``co-occurs`` for concepts.
        description: the relationship's description (empty for concepts).
        trace: in a query trace, True for an edge that was in the answer's context (a
            relationship source, or a relationship or co-occurrence its text units state).
        sources: in a query trace, the numbered sources of a traced edge, ascending.
    """

    weight: float
    relation: str
    description: str = ""
    trace: bool | None = Field(default=None, exclude_if=_unset)
    sources: list[int] | None = Field(default=None, exclude_if=_unset)


class SliceEdge(_Model):
    """One edge of a slice: both ends are nodes of the slice."""

    key: str
    source: str
    target: str
    attributes: SliceEdgeAttributes


class GraphOptions(_Model):
    """graphology's graph options: entity graphs are directed multigraphs, concepts not."""

    type: Literal["directed", "undirected"]
    multi: bool
    allowSelfLoops: bool = True  # noqa: N815 (graphology's name)


class TraceSource(_Model):
    """One numbered source of an answer, as a query trace reads it (a `Source`'s ids).

    Attributes:
        n: its number in the answer (``[n]``), 1-based.
        kind: ``entity``, ``relationship``, ``report`` (a community), ``concept``,
            ``claim`` (its subject entity, and its object when resolved) or ``text_unit``;
            other kinds (``key_points``, ``notes``) name no node.
        id: the item's id (a community id for a report).
        text_unit_ids: the text units it rests on (a text unit's own id included or not).
    """

    n: int = Field(ge=1)
    kind: str = Field(max_length=100)
    id: str = Field(max_length=1000)
    text_unit_ids: list[str] = Field(default_factory=list, max_length=10_000)


class TraceCommunity(_Model):
    """A community in an answer's context (a report source), in a query trace.

    Attributes:
        id: the community id.
        level: its level (0: top).
        title: its report's title (None without a report).
        sources: the numbered sources it came through, ascending.
    """

    id: str
    level: int
    title: str | None = None
    sources: list[int] = Field(default_factory=list)


class SliceAttributes(_Model):
    """Graph-level attributes of a slice.

    Attributes:
        index: the index it was read from.
        graph: ``entities`` or ``concepts``.
        label: the label asked for (``*``: the most connected nodes of the whole graph;
            empty for a community's slice).
        centre: the key of the centre node (None for ``*`` and for a community).
        max_depth: hops walked from the centre.
        max_nodes: the node cap.
        truncated: the cap left out nodes within ``max_depth`` hops (or, for ``*``, nodes of
            the graph; for a community, its members): the view must say so rather than
            pretend it drew everything; in a trace, also that the traced nodes alone exceeded
            ``max_nodes``.
        communities: in a query trace, the communities in the answer's context (absent
            from plain slices).
        notes: in a query trace, what could not be drawn (an id the graph does not hold, a
            source kind that names no node), one line each (absent from plain slices).
        community: the community whose members the slice holds (None: a label's slice).
        total: the nodes the slice would hold without the cap, when known (a community's
            size, the graph's nodes for ``*``); None for a label's neighbourhood.
    """

    index: str
    graph: GraphKind
    label: str
    centre: str | None
    max_depth: int
    max_nodes: int
    truncated: bool
    communities: list[TraceCommunity] | None = Field(default=None, exclude_if=_unset)
    notes: list[str] | None = Field(default=None, exclude_if=_unset)
    community: str | None = None
    total: int | None = None


class GraphSlice(_Model):
    """A label-centred slice of a graph, loadable as is by graphology's ``Graph.from``.

    Nodes come in breadth-first order from the centre, each ring by degree (highest first);
    edges are every edge between two nodes of the slice.
    """

    attributes: SliceAttributes
    options: GraphOptions
    nodes: list[SliceNode]
    edges: list[SliceEdge]


class NodeLink(_Model):
    """One edge of a node, with its other end.

    Attributes:
        id: the relationship id (the slice's edge key).
        direction: ``out`` (the node is the source), ``in``, or ``both`` (concepts).
        other_id: the other end's id.
        other_label: the other end's label.
        relation: the relationship's type; ``co-occurs`` for concepts.
        description: the relationship's description (empty for concepts).
        weight: its strength, or the units two concepts share.
    """

    id: str
    direction: Literal["out", "in", "both"]
    other_id: str
    other_label: str
    relation: str
    description: str = ""
    weight: float


class CommunityInfo(_Model):
    """One community in the hierarchy.

    Attributes:
        id: its id.
        level: 0 for the top level; a sub-community is one deeper.
        size: its members.
        parent_id: the enclosing community (None at level 0).
        children_ids: its sub-communities.
        title: its report's title (None without a report: concept communities have none).
        rating: its report's 0-10 importance rating (None without a report).
        top_members: the labels of its (at most 3) best connected members, most links first
            (ties by label): a name for a community without a report title.
    """

    id: str
    level: int
    size: int
    parent_id: str | None = None
    children_ids: list[str] = Field(default_factory=list)
    title: str | None = None
    rating: float | None = None
    top_members: list[str] = Field(default_factory=list)


class CommunityLevel(_Model):
    """The communities of one level, biggest first."""

    level: int
    communities: list[CommunityInfo]


class CommunityHierarchy(_Model):
    """Every community of a graph, by level (0: top)."""

    index: str
    graph: GraphKind
    total: int
    levels: list[CommunityLevel]


class CommunityDetail(_Model):
    """One community: its place in the hierarchy, its report and its best-connected members.

    Attributes:
        community: the community.
        summary: its report's summary (None without a report).
        findings: its report's findings, ``"summary: explanation"`` each.
        full_content: its report as Markdown (empty without a report).
        members: its members by degree (at most the ``limit`` asked for).
    """

    index: str
    graph: GraphKind
    community: CommunityInfo
    summary: str | None = None
    findings: list[str] = Field(default_factory=list)
    full_content: str = ""
    members: list[LabelMatch]


class NodeCommunity(_Model):
    """A community holding a node, with its report's summary (None without a report)."""

    community: CommunityInfo
    summary: str | None = None


class UnitRef(_Model):
    """One text unit that states a node, with the messages in it (for message archives).

    Attributes:
        id: the text unit id.
        excerpt: its first 300 characters.
        start_char: where it starts in its document.
        end_char: where it ends.
        messages: the messages of a transcript it holds (sender, time, thread), at most the
            cap asked for; empty for ordinary documents.
    """

    id: str
    excerpt: str
    start_char: int | None = None
    end_char: int | None = None
    messages: list[MessageRef] = Field(default_factory=list)


class DocumentRef(_Model):
    """One document a node was read from, with the units that state it."""

    document_id: str
    path: str | None = None
    units: list[UnitRef]


class NodeDetail(_Model):
    """Everything the index knows about one node, with capped lists and their full counts.

    Attributes:
        index: the index.
        graph: ``entities`` or ``concepts``.
        id: the node's id.
        label: its display name.
        entity_type: its type (``concept`` for a concept).
        description: the entity's description (empty for a concept).
        degree: its edges in the whole graph.
        links: its edges with the other end, strongest first (capped).
        links_total: all its edges.
        communities: the communities holding it, top level first, with their reports.
        documents: the documents of its first text units, with those units and messages.
        text_units_total: all the text units it rests on (``documents`` shows the first few).
    """

    index: str
    graph: GraphKind
    id: str
    label: str
    entity_type: str
    description: str = ""
    degree: int
    links: list[NodeLink]
    links_total: int
    communities: list[NodeCommunity]
    documents: list[DocumentRef]
    text_units_total: int
