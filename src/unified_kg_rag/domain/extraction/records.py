"""Extraction records: what one text unit states, in its own words (DESIGN.md §7).

Extraction and gleaning write one `ExtractionRecord` per text unit; resolution
(`domain.graph.resolution`) merges the records of every stored text unit into the graph, so the
graph never depends on which units were extracted together, and removing a text unit removes
exactly what only it stated. Source: seed 000 §4.1.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.llm.finish import reply_complete
from unified_kg_rag.util.hashing import sha256_json

__all__ = [
    "EXTRACTION_FORMAT_VERSION",
    "ExtractedEntity",
    "ExtractedRelationship",
    "ExtractionRecord",
    "extraction_fingerprint",
]

EXTRACTION_FORMAT_VERSION = 1
"""Bump when the record shape or the parser's reading of replies changes (re-keys records)."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ExtractedEntity(_Model):
    """An entity as one text unit states it.

    Attributes:
        name: the name as written (trimmed, whitespace collapsed).
        type: the entity type, upper case (``PERSON`` ...); empty when the model gave none.
        description: what this unit says about it.
        confidence: 1-10 as the model rated it (clamped), None when missing or unreadable.
        span: a verbatim span of the unit's text that states it ("" when missing).
    """

    name: str
    type: str = ""
    description: str = ""
    confidence: float | None = None
    span: str = ""


class ExtractedRelationship(_Model):
    """A directed relationship as one text unit states it.

    Attributes:
        source: the source entity's name as written.
        target: the target entity's name as written.
        type: relationship type label (upper snake case as the model wrote it; may be "").
        description: what this unit says about the relationship.
        strength: 1-10 as the model rated it (clamped); 5 when missing or unreadable.
        span: a verbatim span of the unit's text that states it ("" when missing).
    """

    source: str
    target: str
    type: str = ""
    description: str = ""
    strength: float = 5.0
    span: str = ""


class ExtractionRecord(_Model):
    """The extraction output of one text unit (after gleaning).

    A record belongs to a text, not to a text unit: identical text units share it, and
    resolution pairs each text unit id with its record.

    Attributes:
        fingerprint: `extraction_fingerprint` of the text, model, prompts and settings: the
            record store key, so identical text anywhere reuses the record.
        entities: the entities the unit states, in reply order, one per entity key.
        relationships: the relationships it states, one per (source, target, type) key.
        truncated: a reply was cut off (a finish reason other than ``stop``, or records left
            unclosed); the complete items before the cut are kept.
        gleaning_rounds: gleaning calls made for this unit.
        model: the chat model id that answered.
        finish_reason: the finish reason of the extraction or gleaning reply that was not
            complete (``length``, ``content_filter`` ...), else ``stop``. None in a record
            written before finish reasons were kept: it reads as ``length`` when
            ``truncated``.
    """

    fingerprint: str
    entities: tuple[ExtractedEntity, ...] = ()
    relationships: tuple[ExtractedRelationship, ...] = ()
    truncated: bool = False
    gleaning_rounds: int = 0
    model: str = ""
    finish_reason: str | None = None

    @property
    def complete(self) -> bool:
        """True when every reply behind the record was complete (finish reason ``stop``).

        A record that is not complete holds the items before a cut: it is used by the run
        that got it (and for a quarantined unit), but the next run asks the model again.
        """
        if self.finish_reason is None:  # written before finish reasons were kept
            return not self.truncated
        return reply_complete(self.finish_reason)


def extraction_fingerprint(
    text: str, *, model_id: str, prompts: dict[str, str], settings: dict[str, object]
) -> str:
    """Return the record-store key of a text unit's extraction.

    Covers the unit's text (not its id: identical chunks share a record), the chat model, the
    prompt templates in effect and every setting that shapes the reply (entity types, gleaning
    rounds, reply length), so changing any of them re-extracts.

    Args:
        text: the text unit's text.
        model_id: the chat model's `ChatModel.model_id`.
        prompts: template name → template text, as used.
        settings: JSON-serialisable settings that shape the reply.
    """
    return sha256_json(
        {
            "v": EXTRACTION_FORMAT_VERSION,
            "text": text,
            "model": model_id,
            "prompts": prompts,
            "settings": settings,
        }
    )
