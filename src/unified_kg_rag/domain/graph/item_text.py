"""How entities and relationships read as text: in the search index and in a query's context.

One format everywhere, so what the entities and relationships indexes match is what the
answer model reads: ``name (TYPE): description`` and ``source TYPE target: description``.
"""

from __future__ import annotations

from unified_kg_rag.domain.models import Entity, Relationship

__all__ = ["entity_text", "relationship_text"]


def entity_text(entity: Entity) -> str:
    """Return ``name (TYPE): description`` (parts left out when empty)."""
    head = f"{entity.name} ({entity.type})" if entity.type else entity.name
    return f"{head}: {entity.description}" if entity.description else head


def relationship_text(rel: Relationship, source: str, target: str) -> str:
    """Return ``source TYPE target: description`` (``source -> target`` without a type).

    Args:
        rel: the relationship.
        source: the source entity's name (or id, when unknown).
        target: the target entity's name (or id).
    """
    head = f"{source} {rel.type} {target}" if rel.type else f"{source} -> {target}"
    return f"{head}: {rel.description}" if rel.description else head
