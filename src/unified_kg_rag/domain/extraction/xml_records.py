"""Lenient reading of the extraction format's XML records, and the escaping that matches it.

What belongs here: the low-level machinery shared by the extraction and gleaning replies: the
format's tag and field names, the regular expressions that find sections, records and fields,
character-reference decoding, the escaping `render_items` applies (exactly what this reader
would otherwise read as markup), the cleaning of names, types and scores, and the building of
one `ExtractedEntity` / `ExtractedRelationship` from a record's fields. Prompt rendering,
reply-level parsing and gleaning merges live in `unified_kg_rag.domain.extraction.format`.
No I/O.

Replies are read with regular expressions, not an XML parser: models do not escape ``&`` or
``<``, wrap the XML in code fences, reasoning blocks or prose, repeat sections and get cut off
by the length limit. Fields are leaf elements: a field's value runs to its own end tag when that
comes before the end tag of its record, and the format's tags inside it are text (technical
text names ``<entity>`` or ``<name>`` elements). Source: seed 000 §4.1 (XML records, gleaning
as a refinement prompt); character references: the HTML Living Standard's named character
references (`html.entities.html5`).
"""

from __future__ import annotations

import bisect
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from functools import cache
from html.entities import html5

import regex

from unified_kg_rag.domain.extraction.records import ExtractedEntity, ExtractedRelationship
from unified_kg_rag.util.errors import ModelOutputError

__all__ = [
    "ENTITY_FIELDS",
    "FENCE",
    "ITEMS",
    "NONE_REPLY",
    "REL_FIELDS",
    "SECTIONS",
    "escape_value",
    "read_fields",
    "score",
    "section_items",
    "strip_reasoning",
    "tag_pattern",
    "to_entity",
    "to_relationship",
]

_THINK = r"think|thinking|reasoning"


def _aliases(names: str, **aliases: str) -> dict[str, str]:
    return {name: name for name in names.split()} | aliases


# Field tag -> canonical field name (model-invented aliases included), per record kind.
ENTITY_FIELDS = _aliases(
    "name type description confidence span",
    entity_name="name",
    entity_type="type",
    source_text="span",
)
REL_FIELDS = _aliases(
    "source target type description strength span",
    source_entity="source",
    target_entity="target",
    relationship_type="type",
    weight="strength",
    source_text="span",
)
SECTIONS = ("entities", "relationships")  # section tags, in reply order
ITEMS = ("entity", "relationship")  # the record tag of each section
_FIELD_TAGS = tuple(dict.fromkeys([*ENTITY_FIELDS, *REL_FIELDS]))
_RECORD_FIELDS = {"entity": frozenset(ENTITY_FIELDS), "relationship": frozenset(REL_FIELDS)}
_TAG_NAMES = "|".join([*SECTIONS, *ITEMS, _THINK, *_FIELD_TAGS])
_UNSAFE_LT = regex.compile(rf"<(?=\s*/?\s*(?:{_TAG_NAMES})(?![\w-]))", regex.I)
# A character reference needs its ";": "AT&T", "R&D" and "&copy 2020" stay as written.
_ESCAPED = regex.compile(r"&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]{0,31});")
_STRICT_CLOSE = regex.compile(r"<\s*/\s*[\w-]+\s*>")
_DISARMED = "\x00"  # stands for the "<" of a tag inside a field value while finding records
_THINK_BLOCK = regex.compile(rf"<\s*({_THINK})\s*>.*?<\s*/\s*\1\s*>", regex.I | regex.S)
_THINK_CLOSE = regex.compile(rf"<\s*/\s*(?:{_THINK})\s*>", regex.I)
_THINK_OPEN = regex.compile(rf"<\s*(?:{_THINK})\s*>", regex.I)
# A code-fence line.
FENCE = regex.compile(r"^\s*```[\w-]*\s*$", regex.M)
# A reply saying there is nothing ("None", "No entities.").
NONE_REPLY = regex.compile(
    r"^[\W_]*(?:none|n/?a|null|nil|nothing(?:\s+\w+){0,3}|no(?:\s+\w+){1,4})?[\W_]*$", regex.I
)
_OTHER_FORMAT = regex.compile(r"\{\s*\"|\[\s*\{|<\|>|\(\s*[\"']")  # JSON or tuple records
_NUMBER = regex.compile(r"(\d+(?:\.\d+)?)\s*(?:(/)\s*(\d+(?:\.\d+)?)|(%))?")
_QUOTE_PAIRS = {'"': '"', "'": "'", "“": "”", "‘": "’", "「": "」", "『": "』", "«": "»", "`": "`"}


def escape_value(value: str) -> str:
    """Escape a field value so that this reader reads it back unchanged.

    Only what would otherwise be read as markup is escaped: an ``&`` that starts a character
    reference the reader decodes, and a ``<`` that starts one of the format's tags.
    """

    def amp(m: regex.Match[str]) -> str:  # only a reference the parser would decode
        return m.group(0) if _decode(m) == m.group(0) else "&amp;" + m.group(0)[1:]

    return _UNSAFE_LT.sub("&lt;", _ESCAPED.sub(amp, value))


@dataclass(frozen=True)
class _Block:
    start: int  # content start
    end: int  # content end
    state: str  # "closed" (its end tag), "ended" (another tag opened), "cut" (text ended)


@cache
def tag_pattern(names: tuple[str, ...]) -> regex.Pattern[str]:
    """Return the (cached) pattern of an opening, closing or self-closing tag among ``names``.

    Groups: 1 is ``/`` for an end tag, 2 the tag name, 3 ``/`` for a self-closing tag.
    Matching ignores case, spaces inside the tag and attributes.
    """
    return regex.compile(rf"<\s*(/?)\s*({'|'.join(names)})(?![\w-])[^<>]*?(/?)>", regex.I)


@cache
def _close(name: str) -> regex.Pattern[str]:
    return regex.compile(rf"<\s*/\s*{name}\s*>", regex.I)


def _blocks(text: str, names: tuple[str, ...], *, cut_at_end: bool) -> dict[str, list[_Block]]:
    """Find the blocks of the tags ``names`` in order; an open one ends at the next opening."""
    found: dict[str, list[_Block]] = {n: [] for n in names}
    kind, start = "", 0
    for m in tag_pattern(names).finditer(text):
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
    """Decode one ``&...;`` reference; an unknown name or invalid code point stays as written.

    Named references are looked up whole in `html.entities.html5` (what `html.unescape` does
    for a reference with its ``;``); `html.unescape` itself is not applied to the value, as it
    also decodes legacy names without ``;`` and name prefixes ("salt&nothing" would become
    "salt¬hing").
    """
    code = m.group(1)
    if code[0] != "#":
        return html5.get(code + ";", m.group(0))
    number = int(code[2:], 16) if code[1] in "xX" else int(code[1:])
    valid = 0 < number <= 0x10FFFF and not 0xD800 <= number <= 0xDFFF
    return chr(number) if valid else m.group(0)


def _disarm_values(text: str) -> str:
    """Return ``text`` with the ``<`` of every tag inside a field value replaced (same length).

    Fields are leaf elements: a field opened inside a record runs to its own (strict) end tag
    when that comes before the record's first end tag after it; the section and record tags
    inside are then text. A record with no end tag after the field (cut, or never closed)
    lets the field's own end tag count unless another opening of the same field comes first
    (that end tag then closes the later one). A field without such an end tag is left
    as it is: it runs to the next tag, as before.
    """
    tags = list(tag_pattern((*SECTIONS, *ITEMS, *_FIELD_TAGS)).finditer(text))
    opens: defaultdict[str, list[int]] = defaultdict(list)
    record_closes: defaultdict[str, list[int]] = defaultdict(list)
    field_closes: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
    for m in tags:
        name = m.group(2).lower()
        if m.group(1) != "/":
            if m.group(3) != "/":
                opens[name].append(m.start())
        elif name in ITEMS:
            record_closes[name].append(m.start())
        elif _STRICT_CLOSE.fullmatch(m.group(0)):
            field_closes[name].append((m.start(), m.end()))
    spans: list[tuple[int, int]] = []
    record, resume = "", 0
    for m in tags:
        if m.start() < resume:
            continue
        opening, name = m.group(1) != "/" and m.group(3) != "/", m.group(2).lower()
        if name in SECTIONS or name in ITEMS:
            record = name if opening and name in ITEMS else ""
        elif opening and record and name in _RECORD_FIELDS[record]:
            closes = field_closes[name]
            i = bisect.bisect_left(closes, (m.end(), -1))
            if i == len(closes):
                continue
            own_start, own_end = closes[i]
            rec = record_closes[record]
            j = bisect.bisect_left(rec, m.end())
            if j < len(rec):
                protected = own_start < rec[j]
            else:
                same = opens[name]
                protected = bisect.bisect_left(same, own_start) == bisect.bisect_left(same, m.end())
            if protected:
                spans.append((m.end(), own_start))
                resume = own_end
    if not spans:
        return text
    pieces, last = [], 0
    for start, end in spans:
        pieces += [text[last:start], text[start:end].replace("<", _DISARMED)]
        last = end
    return "".join([*pieces, text[last:]])


def read_fields(body: str, aliases: dict[str, str]) -> dict[str, str]:
    """Read an item's fields; a value runs to its own end tag (else to the next field tag).

    Args:
        body: the record's content (between its tags).
        aliases: field tag -> canonical name (`ENTITY_FIELDS` or `REL_FIELDS`).

    Returns:
        Canonical name -> value, character references decoded and whitespace stripped; the
        first occurrence of a field wins.
    """
    opening = tag_pattern(tuple(aliases))
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
    """Return a display name: format characters dropped, spaces collapsed, quotes stripped.

    Format characters are category Cf (zero-width spaces and joiners, BOM, bidi marks, soft
    hyphen); NBSP and every other unicode space collapse to one space.
    """
    visible = "".join(ch for ch in value if unicodedata.category(ch) != "Cf")
    name = " ".join(visible.split())
    while len(name) >= 2 and _QUOTE_PAIRS.get(name[0]) == name[-1]:
        name = " ".join(name[1:-1].split())
    return name


def _clean_type(value: str) -> str:
    return "_".join(_clean_name(value).upper().split())


def score(value: str | None) -> float | None:
    """Read a 1-10 score ("8", "0.8/1", "80%"), clamped to [1, 10]; None when unreadable."""
    m = _NUMBER.search(value or "")
    if m is None:
        return None
    number = float(m.group(1))
    if m.group(2) and float(m.group(3)) > 0:
        number = number / float(m.group(3)) * 10
    elif m.group(4):
        number /= 10
    return min(10.0, max(1.0, number))


def strip_reasoning(reply: str) -> str:
    """Return ``reply`` without reasoning blocks (closed, close-only or never finished)."""
    text = _THINK_BLOCK.sub("", reply)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:  # only a closing tag: the reasoning ran from the start of the reply
        text = text[closes[-1].end() :]
    opened = _THINK_OPEN.search(text)
    return text[: opened.start()] if opened else text  # reasoning that never finished


def _is_name(name: str) -> bool:
    """Whether a cleaned name has a letter or digit of some script ("C#" yes, "..." no)."""
    return any(ch.isalnum() for ch in name)


def section_items(text: str, section: str, item: str) -> tuple[list[str], bool]:
    """Return the item bodies of the chosen ``section`` and whether the reply was cut there.

    The last closed section counts (else the last ended one, else a cut one); without any
    section tags the records are read from the whole reply.

    Sections and records are found in ``text`` with the tags inside field values disarmed,
    so a value that names ``<entity>`` or ``</entities>`` neither splits nor ends anything.

    Raises:
        ModelOutputError: the section holds no record but looks like another format (JSON,
            tuples).
    """
    masked = _disarm_values(text)
    sections = _blocks(masked, SECTIONS, cut_at_end=True)[section]
    tails = (FENCE.sub("", text[b.start :]).strip() for b in sections if b.state == "cut")
    cut = any("<" in tail or not tail for tail in tails)  # not prose that names a section
    chosen = _pick(sections)
    if chosen is None:  # no section tags: items anywhere in the reply
        start, end, container_cut = 0, len(text), True
    else:
        start, end, container_cut = chosen.start, chosen.end, chosen.state == "cut"
    content = text[start:end]
    items = _blocks(masked[start:end], (item,), cut_at_end=container_cut)[item]
    if chosen is not None and not items and _OTHER_FORMAT.search(content):
        raise ModelOutputError(f"<{section}> holds no <{item}> record: {content.strip()[:80]!r}")
    bodies = [content[b.start : b.end] for b in items if b.state != "cut"]
    return bodies, cut or len(bodies) < len(items)


def to_entity(f: dict[str, str]) -> ExtractedEntity | None:
    """Build an entity from its record's fields; None when the name has no letter or digit."""
    name = _clean_name(f.get("name", ""))
    if not _is_name(name):
        return None
    return ExtractedEntity(
        name=name,
        type=_clean_type(f.get("type", "")),
        description=f.get("description", ""),
        confidence=score(f.get("confidence")),
        span=f.get("span", ""),
    )


def to_relationship(f: dict[str, str]) -> ExtractedRelationship | None:
    """Build a relationship from its record's fields; None when an endpoint is no name.

    A missing or unreadable strength is the default 5.0.
    """
    source, target = _clean_name(f.get("source", "")), _clean_name(f.get("target", ""))
    if not (_is_name(source) and _is_name(target)):
        return None
    return ExtractedRelationship(
        source=source,
        target=target,
        type=_clean_type(f.get("type", "")),
        description=f.get("description", ""),
        span=f.get("span", ""),
        strength=score(f.get("strength")) or 5.0,
    )
