"""The extraction and gleaning prompts' messages and the reading of their XML replies.

What belongs here: rendering the extraction / gleaning templates into chat messages, rendering
items in the shared XML record format, reading a model's reply back into `ExtractedEntity` /
`ExtractedRelationship` items (one per identity key), and merging a gleaning reply into a
unit's items. No I/O. The low-level lenient XML reading (tags, fields, character references,
name and score cleaning) lives in `unified_kg_rag.domain.extraction.xml_records`. Source: seed 000
§4.1 (XML records, gleaning as a refinement prompt).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.extraction.records import (
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionRecord,
)
from unified_kg_rag.domain.extraction.xml_records import (
    ENTITY_FIELDS,
    FENCE,
    ITEMS,
    NONE_REPLY,
    REL_FIELDS,
    SECTIONS,
    escape_value,
    read_fields,
    score,
    section_items,
    strip_reasoning,
    tag_pattern,
    to_entity,
    to_relationship,
)
from unified_kg_rag.domain.identity import entity_key
from unified_kg_rag.domain.models import Message
from unified_kg_rag.domain.prompts.render import render_messages
from unified_kg_rag.util.errors import ModelOutputError

__all__ = [
    "GleanResult",
    "ParsedExtraction",
    "glean_merge",
    "parse_extraction_reply",
    "parse_gleaning_reply",
    "render_extraction_messages",
    "render_gleaning_messages",
    "render_items",
]

logger = logging.getLogger(__name__)

RelKey = tuple[str, str, str]
_K = TypeVar("_K")
_M = TypeVar("_M", ExtractedEntity, ExtractedRelationship)



class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ParsedExtraction(_Frozen):
    """The items one extraction or gleaning reply holds, one per identity key.

    Attributes:
        entities: entities in reply order, deduplicated by `entity_key(name)` (last kept).
        relationships: relationships deduplicated by (source, target, type) keys (last kept).
        truncated: the reply was cut off (finish reason ``length`` or unclosed tags); only the
            complete records before the cut are here.
        unscored: keys of the relationships whose strength was missing or unreadable (their
            ``strength`` is the default 5.0); a gleaning correction keeps the old strength.
    """

    entities: tuple[ExtractedEntity, ...] = ()
    relationships: tuple[ExtractedRelationship, ...] = ()
    truncated: bool = False
    unscored: frozenset[RelKey] = frozenset()


class GleanResult(_Frozen):
    """A unit's items after one gleaning reply.

    Attributes:
        entities: the unit's entities, corrections in place, additions appended.
        relationships: the unit's relationships, likewise.
        added: the reply added an item or changed one (another round may be worth asking).
    """

    entities: tuple[ExtractedEntity, ...]
    relationships: tuple[ExtractedRelationship, ...]
    added: bool


def render_extraction_messages(
    text: str, *, entity_types: Sequence[str], template: str
) -> list[Message]:
    """Return the chat messages that ask for one text unit's entities and relationships.

    Args:
        text: the text unit's text (substituted for ``{text}``).
        entity_types: the configured entity types (``{entity_types}``, comma-separated).
        template: the extraction template (``extract_graph.v1`` or a user's override); a
            ``{schema_types}`` left in it (no schema configured) is filled with "".

    Returns:
        ``[system, user]``, or ``[user]`` when the template has no system part.
    """
    values = {"text": text, "entity_types": ", ".join(entity_types), "schema_types": ""}
    return render_messages(template, values)


def render_gleaning_messages(
    text: str, record: ExtractionRecord, *, entity_types: Sequence[str], template: str
) -> list[Message]:
    """Return the chat messages that ask for a unit's missing items and corrections.

    Args:
        text: the text unit's text.
        record: the unit's current extraction; its items fill ``{current_items}``.
        entity_types: the configured entity types.
        template: the gleaning template (``glean_graph.v1`` or a user's override); a
            ``{schema_types}`` left in it is filled with "".
    """
    items = render_items(record.entities, record.relationships)
    values = {"text": text, "entity_types": ", ".join(entity_types), "current_items": items,
              "schema_types": ""}  # fmt: skip
    return render_messages(template, values)


def _number(value: float) -> str:
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def _section(tag: str, item_tag: str, items: Iterable[BaseModel]) -> list[str]:
    lines = []
    for item in items:  # the models' field order is the format's field order
        lines.append(f"<{item_tag}>")
        for field, value in item:
            if value is not None:
                text = _number(value) if isinstance(value, float) else escape_value(value)
                lines.append(f"<{field}>{text}</{field}>")
        lines.append(f"</{item_tag}>")
    return [f"<{tag}>", *(lines or ["None"]), f"</{tag}>"]


def render_items(
    entities: Iterable[ExtractedEntity], relationships: Iterable[ExtractedRelationship]
) -> str:
    """Render items in the XML record format, as the parser reads them back.

    Only what would otherwise be read as markup is escaped: an ``&`` that starts a character
    reference the parser decodes (``&amp;``, ``&eacute;``, ``&#39;``) and a ``<`` that starts
    one of the format's tags. A section without items holds
    ``None``; a missing confidence is left out.
    """
    entity_lines = _section("entities", "entity", entities)
    return "\n".join(entity_lines + _section("relationships", "relationship", relationships))


def _rel_key(r: ExtractedRelationship) -> RelKey:
    return entity_key(r.source), entity_key(r.target), entity_key(r.type)


def parse_extraction_reply(reply: str, *, finish_reason: str = "stop") -> ParsedExtraction:
    """Read an extraction reply in the XML record format.

    Tolerates reasoning blocks (``<think>...</think>``, or only ``</think>``), code fences,
    prose around the XML, repeated sections (the last complete one counts), unescaped ``&``,
    ``<``, quotes and newlines in values, the format's own tags inside a value that has its
    end tag before its record's (they are text), and a reply cut off by the length limit (the
    complete records before the cut are kept and ``truncated`` is set). A section holding
    only ``None`` (or nothing) is empty; so is a reply that is just ``None``.

    Values decode XML and HTML character references that end in ``;`` (``&amp;``,
    ``&eacute;``, ``&nbsp;``, ``&#39;``); a bare ``&`` ("AT&T") stays. Names and types lose
    format characters (zero-width spaces, joiners, BOM) and have their whitespace, NBSP
    included, collapsed. An entity whose name has no letter or digit of any script ("...",
    "—") is skipped, and so is a relationship with such an endpoint.

    Args:
        reply: the model's reply text.
        finish_reason: the provider's finish reason; ``"length"`` marks the reply truncated.

    Returns:
        The items, one per identity key (the last occurrence wins, at the first's position).

    Raises:
        ModelOutputError: the reply is empty, holds no record section (another format
            entirely: tuples, JSON, prose), or holds records none of which has a usable name.
    """
    if not reply.strip():
        raise ModelOutputError("extraction reply is empty")
    text = strip_reasoning(reply)
    if not tag_pattern((*SECTIONS, *ITEMS)).search(text):
        if text.strip() and NONE_REPLY.match(FENCE.sub("", text).strip()):
            return ParsedExtraction(truncated=finish_reason == "length")
        what = "only a reasoning block" if not text.strip() else "no <entities> section"
        raise ModelOutputError(f"extraction reply holds {what}: {text.strip()[:80]!r}")
    ent_bodies, ent_cut = section_items(text, "entities", "entity")
    rel_bodies, rel_cut = section_items(text, "relationships", "relationship")
    truncated = finish_reason == "length" or ent_cut or rel_cut
    entities: dict[str, ExtractedEntity] = {}
    for fields in (read_fields(body, ENTITY_FIELDS) for body in ent_bodies):
        if entity := to_entity(fields):
            entities[entity_key(entity.name)] = entity
    relationships: dict[RelKey, ExtractedRelationship] = {}
    unscored: set[RelKey] = set()
    for fields in (read_fields(body, REL_FIELDS) for body in rel_bodies):
        if rel := to_relationship(fields):
            key = _rel_key(rel)
            relationships[key] = rel
            unscored.discard(key)
            if score(fields.get("strength")) is None:
                unscored.add(key)
    if (ent_bodies or rel_bodies) and not (entities or relationships) and not truncated:
        raise ModelOutputError("every record in the extraction reply lacks a name")
    if truncated:
        logger.debug("extraction reply truncated (finish_reason=%s)", finish_reason)
    return ParsedExtraction(
        entities=tuple(entities.values()),
        unscored=frozenset(unscored),
        relationships=tuple(relationships.values()),
        truncated=truncated,
    )


def parse_gleaning_reply(reply: str, *, finish_reason: str = "stop") -> ParsedExtraction:
    """Read a gleaning reply: like `parse_extraction_reply`, but empty means nothing missing.

    An empty or whitespace-only reply (or one holding only a reasoning block) gives an empty
    result instead of raising.

    Raises:
        ModelOutputError: a non-empty reply in another format entirely.
    """
    if not strip_reasoning(reply).strip():
        return ParsedExtraction(truncated=finish_reason == "length")
    return parse_extraction_reply(reply, finish_reason=finish_reason)


def _apply(items: dict[_K, _M], key: _K, new: _M, keep: set[str]) -> bool:
    """Put ``new`` under ``key``; over an existing item only its non-empty fields not in keep."""
    old = items.get(key)
    if old is not None:
        fixes = {k: v for k, v in new if k not in keep and v not in ("", None)}
        new = old.model_copy(update=fixes)
    items[key] = new
    return new != old


def glean_merge(
    record_entities: Sequence[ExtractedEntity],
    record_relationships: Sequence[ExtractedRelationship],
    parsed: ParsedExtraction,
) -> GleanResult:
    """Merge a gleaning reply into a unit's items.

    An item whose key the unit already has is a correction: it replaces that item in place,
    keeping the old display names, and a field the correction leaves empty (or a strength it
    leaves unscored) keeps the old value. Other items are appended.

    Returns:
        The merged items; ``added`` is True when an item was appended or changed (a repeat
        of an existing item is not an addition).
    """
    added = False
    entities = {entity_key(e.name): e for e in record_entities}
    for e in parsed.entities:
        added |= _apply(entities, entity_key(e.name), e, {"name"})
    relationships = {_rel_key(r): r for r in record_relationships}
    for r in parsed.relationships:
        key = _rel_key(r)
        keep = {"source", "target", "type", *(["strength"] if key in parsed.unscored else [])}
        added |= _apply(relationships, key, r, keep)
    return GleanResult(
        entities=tuple(entities.values()), relationships=tuple(relationships.values()), added=added
    )
