"""The text units an index holds, as the graph stages read them (processed documents only)."""

from __future__ import annotations

from dataclasses import dataclass

from unified_kg_rag.domain.models import Collection, DocStatus
from unified_kg_rag.ports import IndexStores

__all__ = ["UnitText", "load_units", "processed_unit_paths"]

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
