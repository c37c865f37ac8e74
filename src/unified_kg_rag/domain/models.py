"""Domain models: documents, text units, graph items, search hits, answers and their sources.

Pure pydantic v2 models with no I/O. Ids are content-derived (see `domain.identity`), so the
same input gets the same ids in any process. Lineage (`text_unit_ids`) is the core data:
provenance, deletion and incremental updates follow it (DESIGN.md §4).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from unified_kg_rag.domain.llm.exchange import Completion, Message, TokenUsage
from unified_kg_rag.domain.messages.ref import MessageRef
from unified_kg_rag.domain.ranking.trace import PipelineTrace

__all__ = [
    "Collection",
    "Community",
    "CommunityReport",
    "Completion",
    "DocRecord",
    "DocStatus",
    "Document",
    "DocumentDelta",
    "Entity",
    "IndexInfo",
    "IndexRecord",
    "Lease",
    "Message",
    "MessageRef",
    "MetadataValue",
    "ParsedDocument",
    "RAGOutput",
    "Relationship",
    "SearchHit",
    "SearchMode",
    "Source",
    "Subgraph",
    "TextUnit",
    "TokenUsage",
]

MetadataValue = str | int | float | bool | None
"""A metadata or filter value: a JSON scalar."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def _is_none(value: object) -> bool:
    """Schema annotations are left out of dumps when unset (stored items stay as before)."""
    return value is None


class Document(_Model):
    """A parsed input document.

    Attributes:
        id: ``sha256(source_scope + NUL + relative_path)``; stable while the file stays put.
        path: path relative to the indexed root, POSIX separators.
        title: display title (first heading, HTML ``<title>``, or the file stem).
        text: the extracted plain text (NFC not applied: offsets refer to this exact string).
        content_hash: SHA-256 of the file's bytes.
        metadata: JSON-scalar metadata (``source_scope``, ``extension``, ``bytes``, parser fields).
    """

    id: str
    path: str
    title: str
    text: str
    content_hash: str
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)


class ParsedDocument(_Model):
    """What a parser extracts from one file, before ids are assigned.

    Attributes:
        title: the document's own title (first heading, HTML ``<title>``, PDF metadata), or
            empty when it has none (the loader then uses the file stem).
        text: the plain text, in reading order.
        metadata: JSON-scalar fields the parser found (``encoding``, ``pages``, ``author`` ...).
    """

    title: str = ""
    text: str
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)


class TextUnit(_Model):
    """A chunk of one document: the unit of retrieval, extraction and provenance.

    Attributes:
        id: ``sha256(document_id + NUL + start_char + NUL + text)``.
        document_id: the `Document.id` it came from.
        text: exactly ``document.text[start_char:end_char]``.
        n_tokens: length in the chunking tokenizer's tokens.
        start_char: offset of the first character in the document text (code points).
        end_char: offset one past the last character.
        metadata: JSON-scalar metadata inherited from the document plus ``chunk_index``.
    """

    id: str
    document_id: str
    text: str
    n_tokens: int
    start_char: int
    end_char: int
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)


class Entity(_Model):
    """A graph node stated by one or more text units.

    Attributes:
        id: ``sha256("entity:" + entity_key(name))``.
        name: the display form the source used.
        type: entity type label (``PERSON``, ``ORGANIZATION``, ``CONCEPT`` ...).
        description: merged description.
        text_unit_ids: lineage: the text units that state this entity, sorted.
        rank: degree over document-backed edges.
        confidence: 1-10 extraction confidence, when known.
        in_schema: the type is declared by the extraction schema (None: no schema).
        type_iri: the declared type's ontology IRI, when it has one.
    """

    id: str
    name: str
    type: str = ""
    description: str = ""
    text_unit_ids: tuple[str, ...] = ()
    rank: int = 0
    confidence: float | None = None
    in_schema: bool | None = Field(default=None, exclude_if=_is_none)
    type_iri: str | None = Field(default=None, exclude_if=_is_none)


class Relationship(_Model):
    """A directed, typed graph edge.

    Attributes:
        id: hash of both endpoint keys and the type.
        source_id: `Entity.id` of the source.
        target_id: `Entity.id` of the target.
        type: relationship type label.
        description: merged description.
        weight: sum of per-unit strengths.
        text_unit_ids: lineage, sorted.
        in_schema: the type is declared by the extraction schema (None: no schema).
        predicate_iri: the declared type's ontology IRI, when it has one.
    """

    id: str
    source_id: str
    target_id: str
    type: str = ""
    description: str = ""
    weight: float = 1.0
    text_unit_ids: tuple[str, ...] = ()
    in_schema: bool | None = Field(default=None, exclude_if=_is_none)
    predicate_iri: str | None = Field(default=None, exclude_if=_is_none)


class Subgraph(_Model):
    """Entities and the relationships among them, as a k-hop expansion returns them."""

    entities: tuple[Entity, ...] = ()
    relationships: tuple[Relationship, ...] = ()


class Community(_Model):
    """A community of the hierarchical Leiden partition (``domain.graph.communities``).

    As in Microsoft GraphRAG, level 0 holds the top-level (coarsest) communities; a community
    over ``max_cluster_size`` members is split again into sub-communities at ``level + 1``.

    Attributes:
        id: ``sha256("community", level, *sorted member ids)``.
        level: 0 for the top-level communities; a sub-community is one level deeper than its
            parent.
        member_ids: entity ids, sorted; a parent's members are the union of its children's.
        parent_id: the enclosing community at ``level - 1``; None at level 0.
        children_ids: the sub-communities at ``level + 1``, biggest first (then by id); empty
            for a community that was not split.
    """

    id: str
    level: int
    member_ids: tuple[str, ...]
    parent_id: str | None = None
    children_ids: tuple[str, ...] = ()


class CommunityReport(_Model):
    """The LLM-written report of one community (GraphRAG; built by ``domain.graph.reports``).

    Attributes:
        community_id: the `Community.id` reported on.
        title: the report's title.
        summary: its executive summary.
        rating: the model's 0-10 importance rating.
        findings: ``"summary: explanation"`` per finding, in the model's order.
        full_content: the whole report as Markdown: what is embedded and searched.
        rank: the sum of the members' document-backed degrees (orders reports without a
            query).
        text_unit_ids: the members' lineage, sorted (provenance, not citation support).
        rating_explanation: the model's reason for ``rating``.
        level: the community's level (0: top level).
    """

    community_id: str
    title: str
    summary: str
    rating: float = 0.0
    findings: tuple[str, ...] = ()
    full_content: str = ""
    rank: float = 0.0
    text_unit_ids: tuple[str, ...] = ()
    rating_explanation: str = ""
    level: int = 0


class Collection(StrEnum):
    """A search-index collection (one per kind of searchable item)."""

    TEXT_UNITS = "text_units"
    ENTITIES = "entities"
    RELATIONSHIPS = "relationships"
    REPORTS = "reports"
    CLAIMS = "claims"
    SUMMARY_NODES = "summary_nodes"
    CONCEPTS = "concepts"


class SearchMode(StrEnum):
    """How a `SearchIndex` ranks: BM25 only, vector kNN only, or both fused by weighted RRF."""

    LEXICAL = "lexical"
    VECTOR = "vector"
    HYBRID = "hybrid"


class IndexRecord(_Model):
    """One searchable item as stored: its id, text and filterable fields (vector kept apart).

    Attributes:
        id: the item id (a `TextUnit.id`, `Entity.id` ...).
        text: the text searched lexically and returned to callers.
        fields: JSON-scalar fields usable in filters (``document_id``, ``path`` ...).
    """

    id: str
    text: str
    fields: dict[str, MetadataValue] = Field(default_factory=dict)


class SearchHit(_Model):
    """One ranked search result.

    Attributes:
        id: the item id.
        score: higher is better; its scale depends on ``mode`` (cosine, negated BM25, RRF sum).
        text: the stored text.
        fields: the stored fields.
        lexical_rank: 1-based rank in the BM25 list, if the item was in it.
        vector_rank: 1-based rank in the kNN list, if the item was in it.
    """

    id: str
    score: float
    text: str = ""
    fields: dict[str, MetadataValue] = Field(default_factory=dict)
    lexical_rank: int | None = None
    vector_rank: int | None = None


class DocStatus(StrEnum):
    """Where a document stands in the doc registry."""

    PROCESSED = "processed"
    FAILED = "failed"
    PENDING = "pending"
    DELETING = "deleting"
    QUARANTINED = "quarantined"


class DocRecord(_Model):
    """The doc registry's record of one document in one index.

    Attributes:
        document_id: `Document.id`.
        path: relative path.
        source_scope: the root the path is relative to.
        content_hash: fingerprint of the bytes last indexed (or last attempted, when failed)
            and of the settings that shaped their text units (chunk size, overlap, chunking
            and embedding-input versions): a change to either re-indexes the document.
        status: processed, failed, pending (written ahead of a document's store writes
            and replaced once they landed), deleting (written ahead of the removal of its
            text units, the record deleted once they are gone; a run finishes it), or
            quarantined (failed on ``indexing.quarantine_after`` consecutive runs at this
            content: not retried until the content changes or ``--retry-quarantined``).
        text_unit_ids: the text units this document produced, in order.
        error: the one-line reason of the last failure.
        updated_at: UNIX time (seconds) of the last change.
        failure_count: consecutive runs that failed on this content for a reason of its own
            (0 once it is processed, or when its content changed).
    """

    document_id: str
    path: str
    source_scope: str
    content_hash: str
    status: DocStatus
    text_unit_ids: tuple[str, ...] = ()
    error: str | None = None
    updated_at: float = 0.0
    failure_count: int = 0


class Lease(_Model):
    """The single-writer lease of one index (DocRegistry), renewed by a heartbeat.

    Attributes:
        holder: who holds it (``host:pid:run-id`` of an indexing run).
        acquired_at: UNIX time (seconds, the store's clock) it was first taken by ``holder``.
        expires_at: UNIX time (seconds, the store's clock) it lapses unless renewed.
    """

    holder: str
    acquired_at: float
    expires_at: float


class DocumentDelta(_Model):
    """A corpus diffed against the registry by content hash (document ids in each set).

    ``quarantined`` lists the documents of ``unchanged`` whose record is quarantined (a
    subset: a quarantined document whose content changed is in ``changed``).
    """

    new: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    failed_before: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    quarantined: tuple[str, ...] = ()


class IndexInfo(_Model):
    """What one index (namespace) holds.

    Attributes:
        name: the index name.
        methodologies: the methodologies whose artefacts it holds (``naive`` text search is
            always available when it holds text units).
        embedding_model: the model id its vectors were made with, if any.
        embedding_dimension: the vector dimension, if any.
        counts: number of stored items per collection or table.
        documents: documents per status.
        writer: the single-writer lease, if a run holds one (it may have lapsed).
    """

    name: str
    methodologies: tuple[str, ...] = ()
    embedding_model: str | None = None
    embedding_dimension: int | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    documents: dict[str, int] = Field(default_factory=dict)
    writer: Lease | None = None


class Source(_Model):
    """One section the answer model saw, with its provenance.

    Attributes:
        n: 1-based citation number as shown in the context (``[n]``).
        kind: ``text_unit`` (later also ``entity``, ``relationship``, ``report`` ...).
        id: the item id.
        text: exactly the text placed in the context (truncated text included).
        document_id: the document it came from.
        path: the document's path relative to the folder it was indexed from.
        location: the document's full path (that folder joined with ``path``), when the
            source scope is a folder; tells apart same-named files of different folders.
        title: the document's title.
        text_unit_ids: the text units the section rests on.
        start_char: offset of ``text`` in the document, when it is a text unit.
        end_char: end offset in the document.
        score: the fused retrieval score.
        truncated: True when the budget cut the section short.
        document_ids: the documents of ``text_unit_ids``, for graph items (entities,
            relationships, reports), first seen first.
        metadata: further provenance (a report's level, a message's sender and time ...).
        messages: for a message archive, the messages the section holds (a passage: every
            message in it; an entity or relationship: the messages of its text units that
            name it), in transcript order.
    """

    n: int
    kind: str
    id: str
    text: str
    document_id: str | None = None
    path: str | None = None
    location: str | None = None
    title: str | None = None
    text_unit_ids: tuple[str, ...] = ()
    start_char: int | None = None
    end_char: int | None = None
    score: float = 0.0
    truncated: bool = False
    document_ids: tuple[str, ...] = ()
    metadata: dict[str, MetadataValue] = Field(default_factory=dict)
    messages: tuple[MessageRef, ...] = ()


class RAGOutput(_Model):
    """An answer with exactly the sources the answer step saw.

    Attributes:
        question: the question as asked.
        answer: the answer text, citing sources as ``[n]``.
        answer_kind: ``generative`` (an LLM wrote it), ``extractive`` (selected sentences) or
            ``cannot_answer`` (no context).
        strategy: the strategy that retrieved the context.
        index: the index queried.
        sources: the sections in the context, in citation order: exactly what the answer step
            saw.
        cited: the numbers ``n`` of the sources the answer cites, ascending.
        usage: model usage of this query.
        timings_ms: wall time per step (``rewrite``, ``route``, ``retrieve``, ``fuse``,
            ``pack``, ``answer``, ``total``), milliseconds.
        metadata: what the strategy and the chain report: ``degraded`` sections and their
            errors, ``llm_calls``, ``buckets``, ``rerank``, ``route``, ``rewrite``,
            ``answer_style``, ``context_tokens``, ``abstained``, and the answer's flags:
            ``answer_complete``, ``finish_reason``, ``incomplete_replies``,
            ``invalid_citations``, ``deadline_hit`` ...
        evidence: over a message archive, the messages the answer rests on: those it cites as
            ``[n.m]``, and for a plain ``[n]`` the messages of source ``n`` whose words the
            citing sentence shares (not the whole passage).
        pipeline: when a staged pipeline retrieved the context (``--pipeline``), its stages'
            figures and its ranking (`domain.ranking.trace.PipelineTrace`); else None.
    """

    question: str
    answer: str
    answer_kind: str
    strategy: str
    index: str
    sources: tuple[Source, ...] = ()
    cited: tuple[int, ...] = ()
    usage: TokenUsage = Field(default_factory=TokenUsage)
    timings_ms: dict[str, float] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    evidence: tuple[MessageRef, ...] = ()
    pipeline: PipelineTrace | None = None
