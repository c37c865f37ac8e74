"""Grounding and confidence: which extracted items a text unit's own text supports.

Every extracted entity and relationship carries a ``span``, the words of its unit that state
it (`domain.extraction.records`). Grounding checks that span against the unit's text; the
confidence rule checks the model's own 1-10 scores. Both read a record and its text only, so
they re-shape stored records without a model call, and a unit's result never depends on
another unit (full and incremental builds agree). Source: seed 000 §4.1 (the span is what
grounding checks an item against its chunk with, the confidence what the threshold filters
on) and §4.2 (an entity rejected for its chunk takes the chunk's relationships naming it).

The rules, in order (`shape_record`):

1. **Normalise** span and text alike (`normalize_text`): Unicode NFKC, case folded, quote
   marks and dashes made one straight mark each, whitespace collapsed and dropped next to
   punctuation; the span also loses the quotes and punctuation around it.
2. **Grounded** when the span occurs in the text, else when its best-matching window of the
   text is at least ``min_similarity`` similar (rapidfuzz ``partial_ratio``, 0-100). A span
   that elides words with ``...`` is grounded when each of its pieces is. A span longer than
   the whole text is compared with the whole text.
3. **Empty span**: an entity is grounded when its *name* is (same test); a relationship when
   *both endpoint names* are. A model that writes no spans therefore still gets its items
   checked, by the words a span would have held at least.
4. **Ungrounded** items are dropped (``drop``), or kept with their entity confidence and
   relationship strength multiplied by ``weight`` (``weight``); ``off`` checks nothing.
5. **Confidence**: an entity whose confidence is below ``min_confidence`` is dropped (one
   with no confidence is kept: nothing says it is low); a relationship whose strength is
   below ``min_strength`` is dropped. Scores are read after step 4, so a down-weighted item
   can fall under the threshold.
6. **Endpoints**: an entity dropped by 4 or 5 takes the unit's relationships naming it (by
   `entity_key`) along, so resolution does not bring it back as a stub entity.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel
from rapidfuzz import fuzz

from unified_kg_rag.domain.extraction.records import (
    ExtractedEntity,
    ExtractedRelationship,
    ExtractionRecord,
)
from unified_kg_rag.domain.identity import entity_key

__all__ = [
    "GroundingMode",
    "ShapingCounts",
    "ShapingRules",
    "entity_grounded",
    "normalize_text",
    "relationship_grounded",
    "shape_record",
    "span_similarity",
]

GroundingMode = Literal["drop", "weight", "off"]
"""What happens to an ungrounded item: dropped, kept down-weighted, or not checked."""

_QUOTES = str.maketrans({
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u00b4": "'",
    "`": "'", '"': "'", "\u201c": "'", "\u201d": "'", "\u201e": "'", "\u201f": "'",
    "\u2033": "'", "\u00ab": "'", "\u00bb": "'", "\u2010": "-", "\u2011": "-", "\u2012": "-",
    "\u2013": "-", "\u2014": "-", "\u2015": "-", "\u2212": "-", "\ufe58": "-", "\ufe63": "-",
})  # fmt: skip
_RUNS = re.compile(r"([-'])\1+")
_SPACE = re.compile(r"\s+")
_SPACE_BY_MARK = re.compile(r" ?([^\w ]) ?")
_ELLIPSIS = re.compile(r"\.{3,}")
_EDGE = " \"'.,;:!?()[]{}<>-"


def normalize_text(text: str) -> str:
    """Return ``text`` as grounding compares it.

    NFKC (full-width forms, ligatures, ``…`` → ``...``), case folded; every quote mark, prime
    and backtick → ``'``, every dash and the minus sign → ``-`` (runs of either → one);
    whitespace runs → one space, none next to a punctuation mark or symbol, trimmed. So
    tokenised text (``African - American``, ````Milkman ''``) matches the span a model writes
    from it (``African-American``, ``'Milkman'``).
    """
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).casefold()
    text = _RUNS.sub(r"\1", _SPACE.sub(" ", text))
    return _SPACE_BY_MARK.sub(r"\1", text).strip()


def _pieces(needle: str) -> list[str]:
    """The normalised pieces of a span or name: split at ``...``, trimmed of edge marks."""
    parts = (p.strip(_EDGE) for p in _ELLIPSIS.split(normalize_text(needle)))
    return [p for p in parts if p]


def _piece_score(piece: str, text: str) -> float:
    if piece in text:
        return 100.0
    if len(piece) > len(text):  # partial_ratio would align the text inside the span
        return float(fuzz.ratio(piece, text))
    return float(fuzz.partial_ratio(piece, text))


def span_similarity(span: str, normalized_text: str) -> float:
    """Return how well ``span`` occurs in a text, 0-100 (100: verbatim after normalising).

    Args:
        span: a span or name as the model wrote it.
        normalized_text: the unit's text after `normalize_text`.

    Returns:
        The lowest score of the span's ``...`` pieces, each the rapidfuzz ``partial_ratio``
        of the piece against its best window of the text (100 when it is a substring); 0.0
        for a span with nothing left after normalising.
    """
    pieces = _pieces(span)
    if not pieces:
        return 0.0
    return min(_piece_score(p, normalized_text) for p in pieces)


def _found(needle: str, normalized_text: str, min_similarity: float) -> bool:
    return span_similarity(needle, normalized_text) >= min_similarity


def entity_grounded(entity: ExtractedEntity, normalized_text: str, min_similarity: float) -> bool:
    """True when the entity's span (its name when the span is empty) is in the text.

    Args:
        entity: the extracted entity.
        normalized_text: the unit's text after `normalize_text`.
        min_similarity: the lowest `span_similarity` that counts as found (0-100).
    """
    needle = entity.span if _pieces(entity.span) else entity.name
    return _found(needle, normalized_text, min_similarity)


def relationship_grounded(
    relationship: ExtractedRelationship, normalized_text: str, min_similarity: float
) -> bool:
    """True when the relationship's span (both endpoint names when empty) is in the text.

    Args:
        relationship: the extracted relationship.
        normalized_text: the unit's text after `normalize_text`.
        min_similarity: the lowest `span_similarity` that counts as found (0-100).
    """
    if _pieces(relationship.span):
        return _found(relationship.span, normalized_text, min_similarity)
    return all(
        _found(name, normalized_text, min_similarity)
        for name in (relationship.source, relationship.target)
    )


@dataclass(frozen=True)
class ShapingRules:
    """The grounding and confidence settings (``graph.extraction``), as the rules read them.

    Attributes:
        grounding: ``drop``, ``weight`` or ``off``.
        min_similarity: the lowest `span_similarity` that grounds a span (0-100).
        weight: the factor of an ungrounded item's confidence or strength under ``weight``.
        min_confidence: entities rated below it are dropped (None: no threshold).
        min_strength: relationships rated below it are dropped (None: no threshold).
    """

    grounding: GroundingMode = "off"
    min_similarity: float = 90.0
    weight: float = 0.5
    min_confidence: float | None = None
    min_strength: float | None = None

    @property
    def active(self) -> bool:
        """False when no rule can change a record (records pass through untouched)."""
        return not (
            self.grounding == "off" and self.min_confidence is None and self.min_strength is None
        )


class ShapingCounts(BaseModel):
    """What the grounding and confidence rules did to the items of some records.

    Attributes:
        ungrounded_entities_dropped: entities dropped as ungrounded (``drop``).
        ungrounded_relationships_dropped: relationships dropped as ungrounded (``drop``).
        ungrounded_entities_weighted: ungrounded entities kept, confidence × weight.
        ungrounded_relationships_weighted: ungrounded relationships kept, strength × weight.
        low_confidence_entities_dropped: entities under ``min_confidence``.
        low_strength_relationships_dropped: relationships under ``min_strength``.
        endpoint_relationships_dropped: relationships dropped because the unit dropped an
            entity they name (after grounding or the confidence rule).
        checked_by_name: items with an empty span, checked by their name(s) instead.
    """

    ungrounded_entities_dropped: int = 0
    ungrounded_relationships_dropped: int = 0
    ungrounded_entities_weighted: int = 0
    ungrounded_relationships_weighted: int = 0
    low_confidence_entities_dropped: int = 0
    low_strength_relationships_dropped: int = 0
    endpoint_relationships_dropped: int = 0
    checked_by_name: int = 0

    def add(self, other: ShapingCounts) -> None:
        """Add ``other``'s counts to these (in place)."""
        for name in type(self).model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    @property
    def removed(self) -> int:
        """Items removed by any rule."""
        return (self.ungrounded_entities_dropped + self.ungrounded_relationships_dropped
                + self.low_confidence_entities_dropped + self.low_strength_relationships_dropped
                + self.endpoint_relationships_dropped)  # fmt: skip

    @property
    def weighted(self) -> int:
        """Items kept down-weighted."""
        return self.ungrounded_entities_weighted + self.ungrounded_relationships_weighted


def _scaled(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _ground(
    record: ExtractionRecord, text: str, rules: ShapingRules, counts: ShapingCounts
) -> tuple[list[ExtractedEntity], list[ExtractedRelationship]]:
    """Step 1-4 of the module docstring: the record's items after grounding."""
    entities, relationships = list(record.entities), list(record.relationships)
    if rules.grounding == "off":
        return entities, relationships
    norm = normalize_text(text)
    drop = rules.grounding == "drop"
    kept_entities: list[ExtractedEntity] = []
    for ent in entities:
        counts.checked_by_name += not _pieces(ent.span)
        if entity_grounded(ent, norm, rules.min_similarity):
            kept_entities.append(ent)
        elif drop:
            counts.ungrounded_entities_dropped += 1
        else:
            counts.ungrounded_entities_weighted += 1
            kept_entities.append(
                ent.model_copy(update={"confidence": _scaled(ent.confidence, rules.weight)})
            )
    kept_relationships: list[ExtractedRelationship] = []
    for rel in relationships:
        counts.checked_by_name += not _pieces(rel.span)
        if relationship_grounded(rel, norm, rules.min_similarity):
            kept_relationships.append(rel)
        elif drop:
            counts.ungrounded_relationships_dropped += 1
        else:
            counts.ungrounded_relationships_weighted += 1
            kept_relationships.append(
                rel.model_copy(update={"strength": rel.strength * rules.weight})
            )
    return kept_entities, kept_relationships


def shape_record(
    record: ExtractionRecord, text: str, rules: ShapingRules
) -> tuple[ExtractionRecord, ShapingCounts]:
    """Apply grounding, then the confidence rule, to one unit's record (module docstring).

    Args:
        record: the unit's extraction record, as stored (the raw model output).
        text: the unit's text (the text the record was extracted from).
        rules: the settings.

    Returns:
        The shaped record (the same object when no rule changed anything) and the counts of
        what each rule removed or down-weighted. The stored record is never changed.
    """
    counts = ShapingCounts()
    if not rules.active:
        return record, counts
    entities, relationships = _ground(record, text, rules, counts)
    dropped = {entity_key(e.name) for e in record.entities}
    if (floor := rules.min_confidence) is not None:
        kept_entities = [e for e in entities if e.confidence is None or e.confidence >= floor]
        counts.low_confidence_entities_dropped = len(entities) - len(kept_entities)
        entities = kept_entities
    if rules.min_strength is not None:
        weak = sum(r.strength < rules.min_strength for r in relationships)
        counts.low_strength_relationships_dropped = weak
        relationships = [r for r in relationships if r.strength >= rules.min_strength]
    dropped -= {entity_key(e.name) for e in entities}
    if dropped:
        kept = [r for r in relationships
                if entity_key(r.source) not in dropped and entity_key(r.target) not in dropped]
        counts.endpoint_relationships_dropped = len(relationships) - len(kept)
        relationships = kept
    if entities == list(record.entities) and relationships == list(record.relationships):
        return record, counts
    return record.model_copy(
        update={"entities": tuple(entities), "relationships": tuple(relationships)}
    ), counts
