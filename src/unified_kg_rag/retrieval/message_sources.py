"""Naming the messages each source of an answer holds, for indexes of message archives.

A passage (text unit) of a transcript holds whole messages: its `Source.messages` are the
messages whose text lies in it, read from the transcript's stored spans
(`domain.messages.transcripts.StoredTranscript`) by the passage's offsets. An entity,
relationship or claim rests on text units; its messages are those of its first few units
that share the most content words with the item's name and description (up to three), so a
graph item points at the lines that state it rather than at whole thread-days. Reports name
no messages (they summarize whole communities); their `Source.document_ids` stay the
provenance.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from unified_kg_rag.domain.messages.evidence import message_body, message_labels
from unified_kg_rag.domain.messages.manifest import (
    SPANS_NAMESPACE,
    StoredTranscript,
    message_ref,
    parse_spans_records,
)
from unified_kg_rag.domain.messages.transcripts import messages_in_span
from unified_kg_rag.domain.models import Collection, IndexRecord, MessageRef, Source
from unified_kg_rag.domain.text.analysis import lexical_query_terms, lexical_terms
from unified_kg_rag.ports import IndexStores

__all__ = ["attach_messages"]

logger = logging.getLogger(__name__)

_UNITS_PER_ITEM = 8
"""Text units of a graph item searched for the messages that state it."""
_MESSAGES_PER_ITEM = 3
_ITEM_KINDS = ("entity", "relationship", "claim")
"""Sources that rest on text units: their messages are found through those units."""


async def attach_messages(stores: IndexStores, sources: Sequence[Source]) -> list[Source]:
    """Return ``sources`` with `Source.messages` set where they come from message archives.

    Sources of ordinary documents are returned unchanged; an index without message archives
    costs one record-store read (the text units of graph items are read only when their
    documents are transcripts).

    Raises:
        StoreError: a store failed.
    """
    doc_ids = {s.document_id for s in sources if s.kind == "text_unit" and s.document_id}
    items = [s for s in sources if s.kind in _ITEM_KINDS]
    doc_ids.update(d for s in items for d in s.document_ids)
    stored = (parse_spans_records(await stores.records.get_many(SPANS_NAMESPACE, sorted(doc_ids)))
              if doc_ids else {})
    if not stored:
        return list(sources)
    unit_ids = list(dict.fromkeys(
        t for s in items if stored.keys() & set(s.document_ids)
        for t in s.text_unit_ids[:_UNITS_PER_ITEM]
    ))
    units = {r.id: r for r in await stores.search.get(Collection.TEXT_UNITS, unit_ids)}
    out: list[Source] = []
    for source in sources:
        refs: list[MessageRef] = []
        if source.kind == "text_unit" and source.document_id in stored:
            refs = _passage_messages(source, stored[source.document_id])
        elif source.kind in _ITEM_KINDS:
            refs = _item_messages(source, units, stored)
        if refs:
            source = source.model_copy(update={"messages": tuple(refs)})
            source = source.model_copy(update={"messages": tuple(
                r.model_copy(update={"label": label})
                for r, label in zip(refs, message_labels(source), strict=True)
            )})
        out.append(source)
    return out


def _passage_messages(source: Source, stored: StoredTranscript) -> list[MessageRef]:
    start = source.start_char or 0
    end = source.end_char if source.end_char is not None else start + len(source.text)
    refs = []
    for span in messages_in_span(stored.messages, start, end):
        block = source.text[max(span.start - start, 0) : max(span.end - start, 0)]
        refs.append(message_ref(stored, span, block.strip()))
    return refs


def _item_messages(
    source: Source, units: dict[str, IndexRecord], stored: dict[str, StoredTranscript]
) -> list[MessageRef]:
    words = set(lexical_query_terms(f"{source.title or ''} {source.text[:400]}"))
    scored: list[tuple[int, int, MessageRef]] = []
    order = 0
    for unit_id in source.text_unit_ids[:_UNITS_PER_ITEM]:
        record = units.get(unit_id)
        if record is None:
            continue
        transcript = stored.get(str(record.fields.get("document_id")))
        start, end = record.fields.get("start_char"), record.fields.get("end_char")
        if transcript is None or not isinstance(start, int) or not isinstance(end, int):
            continue
        text = record.text
        for span in messages_in_span(transcript.messages, start, end):
            block = text[max(span.start - start, 0) : max(span.end - start, 0)].strip()
            overlap = len(words & set(lexical_terms(message_body(block))))
            if overlap:
                scored.append((-overlap, order, message_ref(transcript, span, block)))
            order += 1
    scored.sort(key=lambda t: (t[0], t[1]))
    seen: set[str] = set()
    refs: list[MessageRef] = []
    for _, _, ref in scored:
        if ref.guid not in seen and len(refs) < _MESSAGES_PER_ITEM:
            seen.add(ref.guid)
            refs.append(ref)
    return refs
