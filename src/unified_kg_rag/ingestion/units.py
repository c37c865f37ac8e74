"""The text units an index holds: their search records, and as the graph stages read them."""

from __future__ import annotations

from dataclasses import dataclass

from unified_kg_rag.domain.models import Collection, DocRecord, DocStatus, IndexRecord, TextUnit
from unified_kg_rag.domain.text.unit_times import TIME_FIELDS
from unified_kg_rag.ports import IndexStores, SearchIndex

__all__ = ["UnitText", "load_units", "processed_unit_paths", "refresh_unit_fields",
           "text_unit_record", "unit_title", "unit_union", "units_to_embed"]

_READ_BATCH = 2000


@dataclass(frozen=True)
class UnitText:
    """A stored text unit: its id, text, document path and document title."""

    id: str
    text: str
    path: str = ""
    title: str = ""


async def processed_unit_paths(stores: IndexStores) -> dict[str, str]:
    """Return text unit id → document path for the index's processed documents.

    In document order (source scope, then path), then text order within a document.
    """
    records = [r for r in await stores.registry.list_records()
               if r.status is DocStatus.PROCESSED]
    records.sort(key=lambda r: (r.source_scope, r.path))
    return {t: r.path for r in records for t in r.text_unit_ids}


async def load_units(stores: IndexStores, paths: dict[str, str]) -> list[UnitText]:
    """Return the stored text units named in ``paths`` (id → path), in its order."""
    ids = list(paths)
    out: list[UnitText] = []
    for i in range(0, len(ids), _READ_BATCH):
        for rec in await stores.search.get(Collection.TEXT_UNITS, ids[i : i + _READ_BATCH]):
            title = rec.fields.get("title")
            out.append(UnitText(rec.id, rec.text, paths.get(rec.id, ""),
                                title if isinstance(title, str) else ""))
    return out


def text_unit_record(unit: TextUnit) -> IndexRecord:
    """Return the search-index record of a text unit (its text and filterable fields).

    The unit's time fields (`domain.text.unit_times.TIME_FIELDS`) are written when it has them.
    """
    meta = unit.metadata
    return IndexRecord(
        id=unit.id,
        text=unit.text,
        fields={
            "document_id": unit.document_id,
            "path": meta.get("path"),
            "source_scope": meta.get("source_scope"),
            "title": meta.get("title"),
            "chunk_index": meta.get("chunk_index"),
            "start_char": unit.start_char,
            "end_char": unit.end_char,
            "n_tokens": unit.n_tokens,
            **{k: meta[k] for k in TIME_FIELDS if k in meta},
        },
    )


def unit_union(old: DocRecord | None, units: list[TextUnit]) -> tuple[str, ...]:
    """Return the ids of ``units`` then those of ``old``'s units not among them (write-ahead)."""
    ids = [u.id for u in units]
    if old is not None:
        seen = set(ids)
        ids += [t for t in old.text_unit_ids if t not in seen]
    return tuple(ids)


def unit_title(unit: TextUnit) -> str | None:
    """Return the title of a unit's document (part of its embedding input), if any."""
    title = unit.metadata.get("title")
    return title if isinstance(title, str) else None


async def units_to_embed(search: SearchIndex, units: list[TextUnit]) -> list[TextUnit]:
    """Return the units not already stored with a vector made from the same input.

    A unit id covers its document, offset and text; the title (part of the embedding input)
    is compared with the stored record's, so a retitled document is re-embedded.
    """
    ids = [u.id for u in units]
    with_vector = await search.existing_ids(Collection.TEXT_UNITS, ids)
    stored = {r.id: r for r in await search.get(Collection.TEXT_UNITS, sorted(with_vector))}
    return [
        u for u in units
        if u.id not in stored or stored[u.id].fields.get("title") != unit_title(u)
    ]


async def refresh_unit_fields(
    search: SearchIndex, units: list[TextUnit], fresh: list[TextUnit]
) -> int:
    """Rewrite the stored fields of reused units whose fields changed, keeping their vectors.

    A unit whose text is unchanged is not embedded again (`units_to_embed`), but its fields
    may be stale: a changed file's units have a new modification time, and an index built
    before text units carried times has none. Those records are written again with their
    stored vectors (no embedding).

    Args:
        search: the index's search index.
        units: every unit of the documents being written.
        fresh: the units just embedded and stored (left alone).

    Returns:
        The number of records rewritten.

    Raises:
        StoreError: the search index failed.
    """
    fresh_ids = {u.id for u in fresh}
    wanted = {u.id: text_unit_record(u) for u in units if u.id not in fresh_ids}
    if not wanted:
        return 0
    stored = await search.get(Collection.TEXT_UNITS, list(wanted))
    stale = [r.id for r in stored if r.fields != wanted[r.id].fields]
    if not stale:
        return 0
    found, matrix = await search.vectors(Collection.TEXT_UNITS, stale)
    if found:
        await search.upsert(Collection.TEXT_UNITS, [wanted[i] for i in found], matrix)
    return len(found)
