"""Configuration of the extraction schema's sources (``graph.extraction.schema_sources``).

Each entry names a registered schema source (``adapters/schema_sources``): ``inline`` (the
schema written in ``ukr.yaml``), ``file`` (a YAML schema file), ``owl``, ``rdfs`` and ``skos``
(an ontology read with rdflib). The sources are merged in order into one `ExtractionSchema`.
Source: seed 000 §12 ("Extraction schema"), seed 003 ("Bring-your-own ontology").
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from unified_kg_rag.domain.extraction.schema import (
    EntityTypeSpec,
    RelationshipTypeSpec,
    SchemaPattern,
)

__all__ = ["SchemaAlign", "SchemaMode", "SchemaSourceConfig"]

SchemaMode = Literal["open", "strict", "align"]
"""What a graph build does with off-schema items: keep and flag, drop, or map."""

SchemaAlign = Literal["name", "llm"]
"""How ``align`` maps an off-schema type: by name, or with one batched LLM call."""


class SchemaSourceConfig(BaseModel):
    """One source of the extraction schema.

    ``kind: inline`` carries the schema itself (``entity_types``, ``relationship_types``,
    ``patterns``: the schema file's keys); the others read ``path``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str = Field(
        description="The registered schema source: `inline`, `file` (a YAML schema file), "
        "`owl`, `rdfs` or `skos` (an ontology file read with rdflib), or a plugin's name."
    )
    path: str | None = Field(
        default=None,
        description="The file to read (relative to the project directory); every kind but "
        "`inline` needs one.",
    )
    format: str | None = Field(
        default=None,
        description="The RDF syntax of an ontology file (`turtle`, `xml`, `json-ld`, `nt`, "
        "`n3`, `trig`); None: guessed from the file's suffix.",
    )
    language: str = Field(
        default="en",
        description="Preferred language of ontology labels and comments; a term without a "
        "label in it uses an untagged label, then any, then its IRI's local name.",
    )
    name_synonyms: bool = Field(
        default=True,
        description="`skos` only: use each concept's `skos:altLabel`/`skos:hiddenLabel` "
        "as a name of the entity its `skos:prefLabel` names, so entity resolution merges "
        "them (an alias that is another concept's prefLabel, or that two concepts claim, is "
        "left out).",
    )
    entity_types: tuple[EntityTypeSpec, ...] = Field(
        default=(),
        description="`inline` only: entity types (`name`, `description`, optional `iri`, "
        "`synonyms`; a bare name is shorthand for `{name: ...}`).",
    )
    relationship_types: tuple[RelationshipTypeSpec, ...] = Field(
        default=(),
        description="`inline` only: relationship types (`name`, `description`, optional "
        "`iri`; a bare name is shorthand for `{name: ...}`).",
    )
    patterns: tuple[SchemaPattern, ...] = Field(
        default=(),
        description="`inline` only: allowed `[SOURCE_TYPE, RELATIONSHIP_TYPE, TARGET_TYPE]`.",
    )
