"""Checking extraction records against an extraction schema, and annotating graph items.

What belongs here: the pure conformance rules of the three schema modes (``strict`` drops,
``align`` maps a type to the closest declared one, ``open`` keeps and flags), name alignment
(`align_by_name`), the LLM alignment prompt's messages and the reading of its JSON reply,
the per-build `ConformanceReport`, and the annotations written on resolved items
(`annotate_entities`, `annotate_relationships`: ``in_schema``, ``type_iri``,
``predicate_iri``). The LLM call itself is the application's
(``ingestion/graph/schema_step.py``). Stored extraction records stay the raw model output:
these functions return new records. Source: seed 000 §4.2 ("Schema annotations") and §12
("Extraction schema"); issue 21.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, Field
from rapidfuzz import fuzz, process

from unified_kg_rag.domain.extraction.records import ExtractedRelationship, ExtractionRecord
from unified_kg_rag.domain.extraction.schema import (
    EntityTypeSpec,
    ExtractionSchema,
    RelationshipTypeSpec,
    schema_key,
)
from unified_kg_rag.domain.identity import entity_key
from unified_kg_rag.domain.llm.json_reply import parse_json_object
from unified_kg_rag.domain.models import Entity, Message, Relationship
from unified_kg_rag.domain.prompts.render import render_messages

__all__ = [
    "DEFAULT_ALIGN_THRESHOLD",
    "Alignment",
    "ConformanceReport",
    "KindCounts",
    "SchemaMode",
    "align_by_name",
    "annotate_entities",
    "annotate_relationships",
    "conform_records",
    "off_schema_labels",
    "parse_alignment_reply",
    "render_alignment_messages",
]

SchemaMode = Literal["open", "strict", "align"]

DEFAULT_ALIGN_THRESHOLD = 85.0
"""Least rapidfuzz ``ratio`` (Indel similarity, 0-100) of two type keys for name alignment."""

UnitRecords = Sequence[tuple[str, ExtractionRecord]]


class Alignment(BaseModel):
    """Off-schema type label keys → the declared type each is mapped to.

    Attributes:
        entity_types: entity type key → declared entity type name.
        relationship_types: relationship type key → declared relationship type name.
        by: how the mapping was made: ``name``, or ``llm`` (labels the model left out are
            aligned by name).
        unmatched: label keys the model answered ``null`` for ("nothing fits"), per kind
            (``entity_types``, ``relationship_types``): name alignment leaves them off-schema.
    """

    entity_types: dict[str, str] = Field(default_factory=dict)
    relationship_types: dict[str, str] = Field(default_factory=dict)
    by: Literal["name", "llm"] = "name"
    unmatched: dict[str, list[str]] = Field(default_factory=dict)


class KindCounts(BaseModel):
    """Conformance of one kind's extracted statements (one per item per text unit).

    Attributes:
        conforming: statements whose type is declared (or the kind declares none).
        aligned: off-schema statements mapped to a declared type (``align``).
        dropped: statements removed (``strict``; a relationship also when an endpoint was
            dropped or no pattern allows it).
        flagged: off-schema statements kept as they are (``open``; ``align`` without a match).
    """

    conforming: int = 0
    aligned: int = 0
    dropped: int = 0
    flagged: int = 0


class ConformanceReport(BaseModel):
    """Schema conformance of one graph build's extraction records.

    Attributes:
        mode: the schema mode applied.
        aligned_by: ``name`` or ``llm`` (``align`` only; "" otherwise).
        entities: counts over entity statements.
        relationships: counts over relationship statements.
        pattern_violations: relationship statements of declared types between endpoints the
            unit types with declared types that no pattern allows (dropped under ``strict``,
            flagged otherwise).
        off_schema_entity_types: off-schema entity type → statements, the 10 most frequent.
        off_schema_relationship_types: likewise for relationship types.
    """

    mode: SchemaMode = "open"
    aligned_by: str = ""
    entities: KindCounts = Field(default_factory=KindCounts)
    relationships: KindCounts = Field(default_factory=KindCounts)
    pattern_violations: int = 0
    off_schema_entity_types: dict[str, int] = Field(default_factory=dict)
    off_schema_relationship_types: dict[str, int] = Field(default_factory=dict)


def align_by_name(
    label: str, candidates: Mapping[str, str], *, threshold: float = DEFAULT_ALIGN_THRESHOLD
) -> str | None:
    """Return the declared type name ``label`` aligns to by name, else None.

    Tries, in order: the label's `schema_key` equal to a candidate key (a declared name or
    synonym), then the closest candidate key by rapidfuzz ``ratio`` (Indel similarity of the
    whole keys; partial matches do not count, so ``IN`` is not ``LOCATED_IN``) at or above
    ``threshold`` (ties: the smallest key), so ``ORGANISATION`` → ``ORGANIZATION`` and
    ``IS_LOCATED_IN`` → ``LOCATED_IN``.

    Args:
        label: the extracted type label.
        candidates: candidate key (declared names and synonyms, as `schema_key`) → the
            declared name it stands for.
        threshold: least similarity, 0-100.
    """
    key = schema_key(label)
    if not key:
        return None
    if key in candidates:
        return candidates[key]
    scored = process.extract(key, sorted(candidates), scorer=fuzz.ratio, limit=None)
    best = [(-score, choice) for choice, score, _ in scored if score >= threshold]
    return candidates[min(best)[1]] if best else None


def entity_candidates(schema: ExtractionSchema) -> dict[str, str]:
    """Candidate keys of the schema's entity types: names, then synonyms → declared name."""
    out = {t.name: t.name for t in schema.entity_types}
    for spec in schema.entity_types:
        for synonym in spec.synonyms:
            out.setdefault(synonym, spec.name)
    return out


def off_schema_labels(
    records: UnitRecords, schema: ExtractionSchema
) -> tuple[list[str], list[str]]:
    """Return the off-schema (entity type keys, relationship type keys), sorted.

    A kind the schema declares no type of has no off-schema label.
    """
    entity: set[str] = set()
    relation: set[str] = set()
    for _, record in records:
        if schema.entity_types:
            entity.update(k for e in record.entities
                          if (k := schema_key(e.type)) and schema.entity_type(k) is None)
        if schema.relationship_types:
            relation.update(k for r in record.relationships
                            if (k := schema_key(r.type)) and schema.relationship_type(k) is None)
    return sorted(entity), sorted(relation)


def name_alignment(
    records: UnitRecords, schema: ExtractionSchema, threshold: float = DEFAULT_ALIGN_THRESHOLD
) -> Alignment:
    """Return the name `Alignment` of every off-schema label in ``records``."""
    entity_labels, relation_labels = off_schema_labels(records, schema)
    entities, relations = entity_candidates(schema), {t.name: t.name for t in
                                                      schema.relationship_types}
    return Alignment(
        entity_types={k: v for k in entity_labels
                      if (v := align_by_name(k, entities, threshold=threshold))},
        relationship_types={k: v for k in relation_labels
                            if (v := align_by_name(k, relations, threshold=threshold))},
    )


def render_alignment_messages(
    entity_labels: Sequence[str],
    relation_labels: Sequence[str],
    schema: ExtractionSchema,
    template: str,
) -> list[Message]:
    """Return the messages asking the model to map off-schema labels to declared types.

    Fills ``{entity_types}``, ``{relationship_types}`` (declared types with descriptions, one
    per line), ``{off_entity_types}`` and ``{off_relationship_types}`` (one label per line;
    ``None`` when empty) of ``template`` (``align_schema_types.v1``).
    """
    def declared(specs: Iterable[tuple[str, str]]) -> str:
        return "\n".join(f"- {n}: {d}" if d else f"- {n}" for n, d in specs) or "None"

    return render_messages(template, {
        "entity_types": declared((t.name, t.description) for t in schema.entity_types),
        "relationship_types": declared(
            (t.name, t.description) for t in schema.relationship_types
        ),
        "off_entity_types": "\n".join(entity_labels) or "None",
        "off_relationship_types": "\n".join(relation_labels) or "None",
    })  # fmt: skip


def parse_alignment_reply(
    reply: str, entity_labels: Sequence[str], relation_labels: Sequence[str],
    schema: ExtractionSchema,
) -> Alignment:
    """Read the alignment reply (one JSON object of two label → type-or-null mappings).

    The reply reads ``{"entity_types": {label: type|null}, "relationship_types": {...}}``.
    Only asked labels are read, and only targets the schema declares (by key) are kept. A
    ``null`` is the model's "nothing fits": the label is listed in ``unmatched`` and stays
    off-schema (the caller does not align it by name); a label left out or mapped to an
    unknown target is unaligned here (the caller may align it by name).

    Raises:
        ValueError: the reply holds no JSON object.
    """
    data = parse_json_object(reply)
    if data is None:
        raise ValueError(f"alignment reply holds no JSON object: {reply.strip()[:80]!r}")
    out = Alignment(by="llm")
    for field, asked, lookup in (
        ("entity_types", entity_labels, schema.entity_type),
        ("relationship_types", relation_labels, schema.relationship_type),
    ):
        mapping = data.get(field)
        if not isinstance(mapping, dict):
            continue
        wanted = {schema_key(label): label for label in asked}
        target_map: dict[str, str] = getattr(out, field)
        for label, target in mapping.items():
            key = schema_key(str(label))
            if key not in wanted:
                continue
            if target is None:
                out.unmatched.setdefault(field, []).append(key)
            elif isinstance(target, str) and (spec := lookup(target)):
                target_map[key] = spec.name
    return out


def conform_records(
    records: UnitRecords,
    schema: ExtractionSchema,
    mode: SchemaMode,
    alignment: Alignment | None = None,
) -> tuple[list[tuple[str, ExtractionRecord]], ConformanceReport]:
    """Apply ``mode`` to each unit's record; return the records to resolve and the report.

    Per statement, per text unit (order-free, so an incremental run equals a full build):

    - a declared type (by key or synonym) is written as declared;
    - ``strict`` drops an off-schema entity with the unit's relationships naming it, a
      relationship of an off-schema type, and one whose endpoints the unit types with
      declared types that the patterns of its type do not allow (a type no pattern names
      is not checked);
    - each statement is counted once in its kind's `KindCounts`, so the four counts add up
      to the statements; an off-schema relationship type is listed in the report also when
      the relationship was dropped for a dropped endpoint;
    - ``align`` maps an off-schema type through ``alignment``; one it does not map is kept
      and flagged;
    - ``open`` keeps everything (off-schema statements are flagged).

    A kind the schema declares no type of conforms whatever its types; an empty type is
    off-schema. Returns new records; the inputs are untouched.
    """
    report = ConformanceReport(mode=mode, aligned_by=alignment.by if alignment and
                               mode == "align" else "")  # fmt: skip
    mapped = alignment or Alignment()
    off_entities: Counter[str] = Counter()
    off_relations: Counter[str] = Counter()
    out: list[tuple[str, ExtractionRecord]] = []
    for unit, record in records:
        entities, types, dropped = [], {}, set()
        for ent in record.entities:
            kind, outcome = _conform_type(ent.type, schema.entity_type if schema.entity_types
                                          else None, mapped.entity_types, mode, off_entities)
            _count(report.entities, outcome)
            if kind is None:
                dropped.add(entity_key(ent.name))
                continue
            entities.append(ent if kind == ent.type else ent.model_copy(update={"type": kind}))
            types[entity_key(ent.name)] = kind
        relationships = []
        lookup = schema.relationship_type if schema.relationship_types else None
        for rel in record.relationships:
            if entity_key(rel.source) in dropped or entity_key(rel.target) in dropped:
                report.relationships.dropped += 1
                if lookup is not None and lookup(rel.type) is None:
                    off_relations[schema_key(rel.type) or "(none)"] += 1
                continue
            kind, outcome = _conform_type(rel.type, lookup, mapped.relationship_types, mode,
                                          off_relations)  # fmt: skip
            if kind is not None and not _pattern_ok(rel, kind, types, schema):
                report.pattern_violations += 1
                if mode == "strict":
                    kind, outcome = None, "dropped"
            _count(report.relationships, outcome)
            if kind is None:
                continue
            relationships.append(rel if kind == rel.type else rel.model_copy(update={"type": kind}))
        out.append((unit, record.model_copy(update={
            "entities": tuple(entities), "relationships": tuple(relationships),
        })))  # fmt: skip
    report.off_schema_entity_types = dict(_top(off_entities))
    report.off_schema_relationship_types = dict(_top(off_relations))
    return out, report


def _conform_type(
    label: str,
    lookup: Callable[[str], EntityTypeSpec | RelationshipTypeSpec | None] | None,
    mapping: Mapping[str, str],
    mode: SchemaMode,
    off: Counter[str],
) -> tuple[str | None, str]:
    """Return the type to keep for one statement (None: drop it) and its `KindCounts` field.

    Off-schema labels are counted in ``off``; the caller counts the outcome once (a
    relationship a pattern then drops counts as dropped only).
    """
    if lookup is None:  # the kind declares no type: everything conforms
        return label, "conforming"
    spec = lookup(label)
    if spec is not None:
        return spec.name, "conforming"
    key = schema_key(label)
    off[key or "(none)"] += 1
    if mode == "strict":
        return None, "dropped"
    if mode == "align" and key in mapping:
        return mapping[key], "aligned"
    return label, "flagged"


def _count(counts: KindCounts, outcome: str) -> None:
    setattr(counts, outcome, getattr(counts, outcome) + 1)


def _pattern_ok(
    rel: ExtractedRelationship, kind: str, types: Mapping[str, str], schema: ExtractionSchema
) -> bool:
    """Whether a pattern allows the relationship between its endpoints' types in the unit.

    True when the schema has no pattern, the type is not declared, or an endpoint is not
    typed with a declared type in this unit (nothing to check it against).
    """
    if not schema.patterns or schema.relationship_type(kind) is None:
        return True
    source = schema.entity_type(types.get(entity_key(rel.source), ""))
    target = schema.entity_type(types.get(entity_key(rel.target), ""))
    if source is None or target is None:
        return True
    return schema.allows(source.name, schema_key(kind), target.name)


def _top(counter: Counter[str], n: int = 10) -> list[tuple[str, int]]:
    return sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def annotate_entities(entities: Iterable[Entity], schema: ExtractionSchema) -> list[Entity]:
    """Set ``in_schema`` and ``type_iri`` of merged entities from their (merged) type.

    ``in_schema``: the type names a declared type (by key or synonym), or the schema declares
    no entity type; ``type_iri``: the declared type's IRI, else None.
    """
    out = []
    for entity in entities:
        spec = schema.entity_type(entity.type)
        in_schema = spec is not None or not schema.entity_types
        iri = spec.iri if spec is not None else None
        out.append(entity.model_copy(update={"in_schema": in_schema, "type_iri": iri}))
    return out


def annotate_relationships(
    relationships: Iterable[Relationship], schema: ExtractionSchema
) -> list[Relationship]:
    """Set ``in_schema`` and ``predicate_iri`` of merged relationships from their type.

    Pattern conformance is not stored: it depends on endpoint types other units can change.
    """
    out = []
    for rel in relationships:
        spec = schema.relationship_type(rel.type)
        in_schema = spec is not None or not schema.relationship_types
        iri = spec.iri if spec is not None else None
        out.append(rel.model_copy(update={"in_schema": in_schema, "predicate_iri": iri}))
    return out

