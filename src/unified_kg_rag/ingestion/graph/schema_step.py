"""The extraction schema at graph build time: conformance before resolution, annotations after.

`GraphIndexer.run` calls `SchemaStep.conform` between extraction and `resolve_graph` (the
stored extraction records stay the raw model output: the step returns new records), passes
`SchemaStep.synonyms` to resolution (SKOS labels), and `SchemaStep.annotate` on the merged
items before they are written. With ``schema_align: llm``, ``align`` asks the model once per
build to map the off-schema types (the reply is cached by the chat wrapper, so an unchanged
corpus asks nothing); its ``null`` ("nothing fits") leaves a type off-schema, name alignment
maps only the types it left out; a failed call falls back to name alignment with a warning.

`schema_extractor_settings` gives the extraction prompt and settings a schema implies: its
entity types replace ``entity_types`` and the schema (types, descriptions, patterns) fills
``{schema_types}`` of ``extract_graph_schema.v1``/``glean_graph_schema.v1``. Without a schema
nothing changes, so existing records keep their keys. Source: seed 000 §4.2, §12; issue 21.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from unified_kg_rag.config.graph import ExtractionConfig
from unified_kg_rag.domain.extraction.records import ExtractionRecord
from unified_kg_rag.domain.extraction.schema import ExtractionSchema, schema_prompt_block
from unified_kg_rag.domain.extraction.schema_conformance import (
    Alignment,
    ConformanceReport,
    annotate_entities,
    annotate_relationships,
    conform_records,
    name_alignment,
    off_schema_labels,
    parse_alignment_reply,
    render_alignment_messages,
)
from unified_kg_rag.domain.identity import entity_key
from unified_kg_rag.domain.models import Entity, Relationship
from unified_kg_rag.domain.prompts.library import PACKAGED, PromptLibrary
from unified_kg_rag.ports import ChatModel
from unified_kg_rag.util.errors import ModelError

__all__ = [
    "SCHEMA_PLACEHOLDER",
    "SchemaStep",
    "schema_extractor_settings",
]

logger = logging.getLogger(__name__)

SCHEMA_PLACEHOLDER = "{schema_types}"
"""Where an extraction or gleaning template shows the schema (filled before rendering)."""

ALIGN_MAX_TOKENS = 2048
"""Longest alignment reply, in tokens."""

UnitRecords = list[tuple[str, ExtractionRecord]]


def schema_extractor_settings(
    config: ExtractionConfig, schema: ExtractionSchema, extract: str, glean: str
) -> tuple[ExtractionConfig, str, str]:
    """Return the extraction settings and templates ``schema`` implies.

    Args:
        config: ``graph.extraction``.
        schema: the extraction schema.
        extract: the extraction template in effect (``extract_graph_schema.v1`` unless a
            ``prompt_file`` overrides it).
        glean: the gleaning template in effect.

    Returns:
        ``config`` with the schema's entity types (when it declares any), and both templates
        with ``{schema_types}`` filled (a template without it is returned as it is).
    """
    if schema.entity_types:
        config = config.model_copy(update={"entity_types": schema.entity_type_names()})
    block = schema_prompt_block(schema)
    return (config, extract.replace(SCHEMA_PLACEHOLDER, block),
            glean.replace(SCHEMA_PLACEHOLDER, block))  # fmt: skip


def _prefer_llm(by_name: Alignment, by_llm: Alignment) -> Alignment:
    """The model's mapping, name alignment filling in only the labels the model left out.

    A label the model answered ``null`` for ("nothing fits") stays off-schema.
    """
    def fill(field: str, names: dict[str, str], llm: dict[str, str]) -> dict[str, str]:
        refused = set(by_llm.unmatched.get(field, ()))
        return {**{k: v for k, v in names.items() if k not in refused}, **llm}

    return Alignment(
        entity_types=fill("entity_types", by_name.entity_types, by_llm.entity_types),
        relationship_types=fill("relationship_types", by_name.relationship_types,
                                by_llm.relationship_types),
        by="llm", unmatched=by_llm.unmatched,
    )  # fmt: skip


class SchemaStep:
    """Applies the extraction schema at graph build time (a no-op without one).

    Args:
        schema: the merged schema of ``graph.extraction.schema_sources`` (None: no schema).
        config: ``graph.extraction`` (``schema_mode``, ``schema_align``,
            ``schema_align_threshold``).
        chat: the wrapped chat model (``schema_align: llm``).
        prompts: the prompts in effect (``align_schema_types.v1``; default: packaged).
    """

    def __init__(
        self,
        schema: ExtractionSchema | None,
        config: ExtractionConfig,
        chat: ChatModel | None,
        *,
        prompts: PromptLibrary = PACKAGED,
    ) -> None:
        self.schema = schema
        self._config = config
        self._chat = chat
        self._template = prompts.get("align_schema_types.v1")

    @property
    def fingerprint(self) -> str | None:
        """The schema's digest (enters the graph build digest), None without a schema."""
        return None if self.schema is None else self.schema.fingerprint

    @property
    def synonyms(self) -> dict[str, str]:
        """Alias `entity_key` → canonical `entity_key` for resolution (SKOS labels)."""
        if self.schema is None:
            return {}
        return {entity_key(alias): entity_key(canonical)
                for alias, canonical in self.schema.name_synonyms}  # fmt: skip

    async def conform(self, records: UnitRecords) -> tuple[UnitRecords, ConformanceReport | None]:
        """Return the records to resolve and the conformance report (None without a schema).

        Raises:
            ModelError: never for the alignment call (it falls back to names); only what
                the caller's model raises elsewhere.
        """
        schema = self.schema
        if schema is None:
            return records, None
        mode = self._config.schema_mode
        alignment = await self._alignment(records, schema) if mode == "align" else None
        conformed, report = conform_records(records, schema, mode, alignment)
        logger.info(
            "schema %s: entities %s, relationships %s, pattern violations %d", mode,
            report.entities.model_dump(), report.relationships.model_dump(),
            report.pattern_violations,
        )  # fmt: skip
        return conformed, report

    async def _alignment(self, records: Sequence[tuple[str, ExtractionRecord]],
                         schema: ExtractionSchema) -> Alignment:  # fmt: skip
        threshold = self._config.schema_align_threshold
        by_name = name_alignment(records, schema, threshold)
        if self._config.schema_align != "llm":
            return by_name
        entity_labels, relation_labels = off_schema_labels(records, schema)
        if not (entity_labels or relation_labels):
            return by_name
        if self._chat is None:
            logger.warning("schema_align llm needs an LLM; aligning by name")
            return by_name
        messages = render_alignment_messages(entity_labels, relation_labels, schema,
                                             self._template)  # fmt: skip
        try:
            reply = await self._chat.complete(messages, max_tokens=ALIGN_MAX_TOKENS)
            by_llm = parse_alignment_reply(reply.text, entity_labels, relation_labels, schema)
        except (ModelError, ValueError) as exc:
            logger.warning("schema alignment call failed (%s); aligning by name",
                           " ".join(str(exc).split())[:200])  # fmt: skip
            return by_name
        return _prefer_llm(by_name, by_llm)

    def annotate(
        self, entities: list[Entity], relationships: list[Relationship]
    ) -> tuple[list[Entity], list[Relationship]]:
        """Set ``in_schema`` / ``type_iri`` / ``predicate_iri`` (unchanged without a schema)."""
        if self.schema is None:
            return entities, relationships
        return (annotate_entities(entities, self.schema),
                annotate_relationships(relationships, self.schema))  # fmt: skip
