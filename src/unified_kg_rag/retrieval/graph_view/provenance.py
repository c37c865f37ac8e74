"""Where a graph node was read from: its text units, their documents, and the messages in them.

For a transcript of a message archive a unit's messages (sender, time, thread) come from the
transcript's stored spans (`domain.messages.manifest`), as the answer sources name them
(`retrieval.message_sources`). Documents keep the order of the node's lineage.
"""

from __future__ import annotations

from collections.abc import Sequence

from unified_kg_rag.domain.messages.manifest import (
    SPANS_NAMESPACE,
    message_ref,
    parse_spans_records,
)
from unified_kg_rag.domain.messages.transcripts import messages_in_span
from unified_kg_rag.domain.models import Collection, MessageRef
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.graph_view.models import DocumentRef, UnitRef

__all__ = ["EXCERPT_CHARS", "documents_of"]

EXCERPT_CHARS = 300
"""Characters of a unit's text a `UnitRef` shows."""


async def documents_of(
    stores: IndexStores, unit_ids: Sequence[str], *, messages_per_unit: int
) -> list[DocumentRef]:
    """Return the documents of ``unit_ids`` with those units and their messages.

    Args:
        stores: the index's stores.
        unit_ids: text unit ids (already capped by the caller); ids the index no longer
            holds are skipped.
        messages_per_unit: the most messages shown per unit (transcripts only).

    Raises:
        StoreError: a store failed.
    """
    records = await stores.search.get(Collection.TEXT_UNITS, list(unit_ids))
    doc_ids = list(dict.fromkeys(str(r.fields.get("document_id") or "") for r in records))
    stored = parse_spans_records(
        await stores.records.get_many(SPANS_NAMESPACE, [d for d in doc_ids if d])
    ) if any(doc_ids) else {}  # fmt: skip
    registry = await stores.registry.get([d for d in doc_ids if d])
    units: dict[str, list[UnitRef]] = {d: [] for d in doc_ids}
    paths: dict[str, str | None] = {}
    for record in records:
        doc = str(record.fields.get("document_id") or "")
        path = record.fields.get("path")
        paths.setdefault(doc, str(path) if path else None)
        start, end = record.fields.get("start_char"), record.fields.get("end_char")
        begin = start if isinstance(start, int) else None
        finish = end if isinstance(end, int) else None
        refs: list[MessageRef] = []
        transcript = stored.get(doc)
        if transcript is not None and begin is not None and finish is not None:
            for span in messages_in_span(transcript.messages, begin, finish)[:messages_per_unit]:
                block = record.text[max(span.start - begin, 0) : max(span.end - begin, 0)]
                refs.append(message_ref(transcript, span, block.strip()))
        units[doc].append(UnitRef(id=record.id, excerpt=record.text[:EXCERPT_CHARS],
                                  start_char=begin, end_char=finish, messages=refs))  # fmt: skip
    return [
        DocumentRef(
            document_id=d, units=units[d], path=registry[d].path if d in registry else paths.get(d)
        )
        for d in doc_ids
    ]
