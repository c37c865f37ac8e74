"""The extraction and gleaning prompts' messages and the lenient reader of their XML replies.

What belongs here: rendering the extraction / gleaning templates into chat messages, rendering
items in the shared XML record format, reading a model's reply back into `ExtractedEntity` /
`ExtractedRelationship` items, and merging a gleaning reply into a unit's items. No I/O.

Replies are read with regular expressions, not an XML parser: models do not escape ``&`` or
``<``, wrap the XML in code fences, reasoning blocks or prose, repeat sections and get cut off
by the length limit. Source: seed 000 §4.1 (XML records, gleaning as a refinement prompt).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TypeVar

import regex
from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.extraction import (
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionRecord,
)
from unified_kg_rag.domain.identity import entity_key
from unified_kg_rag.domain.models import Message
from unified_kg_rag.util.errors import ModelOutputError

__all__ = [
    "USER_MARKER",
    "GleanResult",
    "ParsedExtraction",
    "glean_merge",
    "parse_extraction_reply",
    "parse_gleaning_reply",
    "render_extraction_messages",
    "render_gleaning_messages",
    "render_items",
    "split_template",
]

logger = logging.getLogger(__name__)

USER_MARKER = "=== user ==="
"""The line that splits a template into its system part (before) and user part (after)."""

RelKey = tuple[str, str, str]
_K = TypeVar("_K")
_M = TypeVar("_M", ExtractedEntity, ExtractedRelationship)

_MARKER_LINE = regex.compile(r"^[ \t]*=== user ===[ \t]*$", regex.M)
_PLACEHOLDER = regex.compile(r"\{(entity_types|text|current_items)\}")
_THINK = r"think|thinking|reasoning"


def _aliases(names: str, **aliases: str) -> dict[str, str]:
    return {name: name for name in names.split()} | aliases


_ENTITY_FIELDS = _aliases(
    "name type description confidence span",
    entity_name="name",
    entity_type="type",
    source_text="span",
)
_REL_FIELDS = _aliases(
    "source target type description strength span",
    source_entity="source",
    target_entity="target",
    relationship_type="type",
    weight="strength",
    source_text="span",
)
_SECTIONS = ("entities", "relationships")
_ITEMS = ("entity", "relationship")
_TAG_NAMES = "|".join([*_SECTIONS, *_ITEMS, _THINK, *_ENTITY_FIELDS, *_REL_FIELDS])
_UNSAFE_LT = regex.compile(rf"<(?=\s*/?\s*(?:{_TAG_NAMES})(?![\w-]))", regex.I)
_ESCAPE = r"&(amp|lt|gt|quot|apos|#[0-9]+|#[xX][0-9a-fA-F]+);"
_ESCAPED = regex.compile(_ESCAPE)
_UNSAFE_AMP = regex.compile(f"&(?={_ESCAPE[1:]})")
_NAMED = {"amp": "&", "lt": "<", "gt": ">", "quot": '"', "apos": "'"}
_THINK_BLOCK = regex.compile(rf"<\s*({_THINK})\s*>.*?<\s*/\s*\1\s*>", regex.I | regex.S)
_THINK_CLOSE = regex.compile(rf"<\s*/\s*(?:{_THINK})\s*>", regex.I)
_THINK_OPEN = regex.compile(rf"<\s*(?:{_THINK})\s*>", regex.I)
_FENCE = regex.compile(r"^\s*```[\w-]*\s*$", regex.M)
_NONE_REPLY = regex.compile(
    r"^[\W_]*(?:none|n/?a|null|nil|nothing(?:\s+\w+){0,3}|no(?:\s+\w+){1,4})?[\W_]*$", regex.I
)
_OTHER_FORMAT = regex.compile(r"\{\s*\"|\[\s*\{|<\|>|\(\s*[\"']")  # JSON or tuple records
_NUMBER = regex.compile(r"(\d+(?:\.\d+)?)\s*(?:(/)\s*(\d+(?:\.\d+)?)|(%))?")
_QUOTE_PAIRS = {'"': '"', "'": "'", "“": "”", "‘": "’", "「": "」", "『": "』", "«": "»", "`": "`"}


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


def split_template(template: str) -> tuple[str, str]:
    """Split a template into (system, user) on its ``=== user ===`` line.

    A template without that line is all user text, with an empty system part. Both parts are
    stripped of surrounding whitespace.
    """
    parts = _MARKER_LINE.split(template, maxsplit=1)
    if len(parts) == 1:
        return "", template.strip()
    return parts[0].strip(), parts[1].strip()


def _fill(template: str, values: dict[str, str]) -> list[Message]:
    # One pass, so a value holding "{text}" (unit text has braces) is never substituted again.
    def sub(m: regex.Match[str]) -> str:
        return values.get(m.group(1), m.group(0))

    system, user = (_PLACEHOLDER.sub(sub, part) for part in split_template(template))
    messages = [Message(role="system", content=system)] if system else []
    return [*messages, Message(role="user", content=user)]


def render_extraction_messages(
    text: str, *, entity_types: Sequence[str], template: str
) -> list[Message]:
    """Return the chat messages that ask for one text unit's entities and relationships.

    Args:
        text: the text unit's text (substituted for ``{text}``).
        entity_types: the configured entity types (``{entity_types}``, comma-separated).
        template: the extraction template (``extract_graph.v1`` or a user's override).

    Returns:
        ``[system, user]``, or ``[user]`` when the template has no system part.
    """
    return _fill(template, {"text": text, "entity_types": ", ".join(entity_types)})


def render_gleaning_messages(
    text: str, record: ExtractionRecord, *, entity_types: Sequence[str], template: str
) -> list[Message]:
    """Return the chat messages that ask for a unit's missing items and corrections.

    Args:
        text: the text unit's text.
        record: the unit's current extraction; its items fill ``{current_items}``.
        entity_types: the configured entity types.
        template: the gleaning template (``glean_graph.v1`` or a user's override).
    """
    items = render_items(record.entities, record.relationships)
    values = {"text": text, "entity_types": ", ".join(entity_types), "current_items": items}
    return _fill(template, values)


def _escape(value: str) -> str:
    return _UNSAFE_LT.sub("&lt;", _UNSAFE_AMP.sub("&amp;", value))


def _number(value: float) -> str:
    short = f"{value:g}"
    return short if float(short) == value else repr(value)


def _section(tag: str, item_tag: str, items: Iterable[BaseModel]) -> list[str]:
    lines = []
    for item in items:  # the models' field order is the format's field order
        lines.append(f"<{item_tag}>")
        for field, value in item:
            if value is not None:
                text = _number(value) if isinstance(value, float) else _escape(value)
                lines.append(f"<{field}>{text}</{field}>")
        lines.append(f"</{item_tag}>")
    return [f"<{tag}>", *(lines or ["None"]), f"</{tag}>"]


def render_items(
    entities: Iterable[ExtractedEntity], relationships: Iterable[ExtractedRelationship]
) -> str:
    """Render items in the XML record format, as the parser reads them back.

    Only what would otherwise be read as markup is escaped: an ``&`` that starts an XML
    escape and a ``<`` that starts one of the format's tags. A section without items holds
    ``None``; a missing confidence is left out.
    """
    entity_lines = _section("entities", "entity", entities)
    return "\n".join(entity_lines + _section("relationships", "relationship", relationships))


# ----------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class _Block:
    start: int  # content start
    end: int  # content end
    state: str  # "closed" (its end tag), "ended" (another tag opened), "cut" (text ended)


@cache
def _tag(names: tuple[str, ...]) -> regex.Pattern[str]:
    return regex.compile(rf"<\s*(/?)\s*({'|'.join(names)})(?![\w-])[^<>]*?(/?)>", regex.I)


@cache
def _close(name: str) -> regex.Pattern[str]:
    return regex.compile(rf"<\s*/\s*{name}\s*>", regex.I)


def _blocks(text: str, names: tuple[str, ...], *, cut_at_end: bool) -> dict[str, list[_Block]]:
    """Find the blocks of the tags ``names`` in order; an open one ends at the next opening."""
    found: dict[str, list[_Block]] = {n: [] for n in names}
    kind, start = "", 0
    for m in _tag(names).finditer(text):
        closing, name, self_closed = m.group(1) == "/", m.group(2).lower(), m.group(3) == "/"
        if kind:
            if closing and name == kind:
                found[kind].append(_Block(start, m.start(), "closed"))
                kind = ""
                continue
            found[kind].append(_Block(start, m.start(), "ended"))
            kind = ""
        if self_closed:
            found[name].append(_Block(m.end(), m.end(), "closed"))
        elif not closing:
            kind, start = name, m.end()
    if kind:
        found[kind].append(_Block(start, len(text), "cut" if cut_at_end else "ended"))
    return found


def _pick(blocks: list[_Block]) -> _Block | None:
    for state in ("closed", "ended", "cut"):
        for block in reversed(blocks):
            if block.state == state:
                return block
    return None


def _decode(m: regex.Match[str]) -> str:
    code = m.group(1)
    if code in _NAMED:
        return _NAMED[code]
    number = int(code[2:], 16) if code[1] in "xX" else int(code[1:])
    valid = 0 < number <= 0x10FFFF and not 0xD800 <= number <= 0xDFFF
    return chr(number) if valid else m.group(0)


def _fields(body: str, aliases: dict[str, str]) -> dict[str, str]:
    """Read an item's fields; a value runs to its own end tag (else to the next field tag)."""
    opening = _tag(tuple(aliases))
    values: dict[str, str] = {}
    pos = 0
    while m := opening.search(body, pos):
        if m.group(1) == "/" or m.group(3) == "/":
            pos = m.end()
            continue
        name = m.group(2).lower()
        end = _close(name).search(body, m.end())
        if end is not None:
            raw, pos = body[m.end() : end.start()], end.end()
        else:
            nxt = opening.search(body, m.end())
            stop = nxt.start() if nxt is not None else len(body)
            raw, pos = body[m.end() : stop], stop
        values.setdefault(aliases[name], _ESCAPED.sub(_decode, raw).strip())
    return values


def _clean_name(value: str) -> str:
    name = " ".join(value.split())
    while len(name) >= 2 and _QUOTE_PAIRS.get(name[0]) == name[-1]:
        name = " ".join(name[1:-1].split())
    return name


def _clean_type(value: str) -> str:
    return "_".join(_clean_name(value).upper().split())


def _score(value: str | None) -> float | None:
    m = _NUMBER.search(value or "")
    if m is None:
        return None
    number = float(m.group(1))
    if m.group(2) and float(m.group(3)) > 0:
        number = number / float(m.group(3)) * 10
    elif m.group(4):
        number /= 10
    return min(10.0, max(1.0, number))


def _rel_key(r: ExtractedRelationship) -> RelKey:
    return entity_key(r.source), entity_key(r.target), entity_key(r.type)


def _strip_reasoning(reply: str) -> str:
    text = _THINK_BLOCK.sub("", reply)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:  # only a closing tag: the reasoning ran from the start of the reply
        text = text[closes[-1].end() :]
    opened = _THINK_OPEN.search(text)
    return text[: opened.start()] if opened else text  # reasoning that never finished


def _section_items(text: str, section: str, item: str) -> tuple[list[str], bool]:
    """Return the item bodies of the chosen ``section`` and whether the reply was cut there."""
    sections = _blocks(text, _SECTIONS, cut_at_end=True)[section]
    tails = (_FENCE.sub("", text[b.start :]).strip() for b in sections if b.state == "cut")
    cut = any("<" in tail or not tail for tail in tails)  # not prose that names a section
    chosen = _pick(sections)
    if chosen is None:  # no section tags: items anywhere in the reply
        content, container_cut = text, True
    else:
        content, container_cut = text[chosen.start : chosen.end], chosen.state == "cut"
    items = _blocks(content, (item,), cut_at_end=container_cut)[item]
    if chosen is not None and not items and _OTHER_FORMAT.search(content):
        raise ModelOutputError(f"<{section}> holds no <{item}> record: {content.strip()[:80]!r}")
    bodies = [content[b.start : b.end] for b in items if b.state != "cut"]
    return bodies, cut or len(bodies) < len(items)


def _entity(f: dict[str, str]) -> ExtractedEntity | None:
    name = _clean_name(f.get("name", ""))
    if not name:
        return None
    return ExtractedEntity(
        name=name,
        type=_clean_type(f.get("type", "")),
        description=f.get("description", ""),
        confidence=_score(f.get("confidence")),
        span=f.get("span", ""),
    )


def _relationship(f: dict[str, str]) -> ExtractedRelationship | None:
    source, target = _clean_name(f.get("source", "")), _clean_name(f.get("target", ""))
    if not (source and target):
        return None
    return ExtractedRelationship(
        source=source,
        target=target,
        type=_clean_type(f.get("type", "")),
        description=f.get("description", ""),
        span=f.get("span", ""),
        strength=_score(f.get("strength")) or 5.0,
    )


def parse_extraction_reply(reply: str, *, finish_reason: str = "stop") -> ParsedExtraction:
    """Read an extraction reply in the XML record format.

    Tolerates reasoning blocks (``<think>...</think>``, or only ``</think>``), code fences,
    prose around the XML, repeated sections (the last complete one counts), unescaped ``&``,
    ``<``, quotes and newlines in values, and a reply cut off by the length limit (the complete
    records before the cut are kept and ``truncated`` is set). A section holding only
    ``None`` (or nothing) is empty; so is a reply that is just ``None``.

    Args:
        reply: the model's reply text.
        finish_reason: the provider's finish reason; ``"length"`` marks the reply truncated.

    Returns:
        The items, one per identity key (the last occurrence wins, at the first's position).

    Raises:
        ModelOutputError: the reply is empty, holds no record section (another format
            entirely: tuples, JSON, prose), or holds records none of which has a name.
    """
    if not reply.strip():
        raise ModelOutputError("extraction reply is empty")
    text = _strip_reasoning(reply)
    if not _tag((*_SECTIONS, *_ITEMS)).search(text):
        if text.strip() and _NONE_REPLY.match(_FENCE.sub("", text).strip()):
            return ParsedExtraction(truncated=finish_reason == "length")
        what = "only a reasoning block" if not text.strip() else "no <entities> section"
        raise ModelOutputError(f"extraction reply holds {what}: {text.strip()[:80]!r}")
    ent_bodies, ent_cut = _section_items(text, "entities", "entity")
    rel_bodies, rel_cut = _section_items(text, "relationships", "relationship")
    truncated = finish_reason == "length" or ent_cut or rel_cut
    entities: dict[str, ExtractedEntity] = {}
    for fields in (_fields(body, _ENTITY_FIELDS) for body in ent_bodies):
        if entity := _entity(fields):
            entities[entity_key(entity.name)] = entity
    relationships: dict[RelKey, ExtractedRelationship] = {}
    unscored: set[RelKey] = set()
    for fields in (_fields(body, _REL_FIELDS) for body in rel_bodies):
        if rel := _relationship(fields):
            key = _rel_key(rel)
            relationships[key] = rel
            unscored.discard(key)
            if _score(fields.get("strength")) is None:
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
    if not _strip_reasoning(reply).strip():
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
