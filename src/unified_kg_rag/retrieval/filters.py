"""A query's filters checked against the index before and after retrieval.

Before: ``path`` values typed in any form (as shown, ``./``, absolute, relative to the current
directory) become the stored form, relative to the indexed folder (`domain.index.paths`); an
absolute or cwd-relative path names its one document (a ``document_id`` filter), where the
shown form matches that path in every folder indexed; a
document field (``path``, ``document_id``, ``source_scope``) that names no indexed document
is refused at once, with the closest stored path. After: when a filtered query found no
passage, one vector probe tells "no passage passes the filter" from "nothing relevant".
Both failures raise `FilterMatchesNothingError` instead of answering "cannot answer".
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence

from unified_kg_rag.domain.index.paths import (
    full_location,
    full_location_of,
    location_index,
    stored_path,
)
from unified_kg_rag.domain.models import Collection, MetadataValue, SearchMode
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.retrieval.models import FilterMap
from unified_kg_rag.retrieval.strategies import QueryContext
from unified_kg_rag.util.errors import FilterMatchesNothingError

__all__ = ["check_filters_pass", "resolve_filters"]

FilterValues = dict[str, MetadataValue | list[MetadataValue]]

_DOCUMENT_FIELDS = ("path", "document_id", "source_scope")
"""Filter fields the doc registry records, checked before retrieval."""


async def resolve_filters(stores: IndexStores, filters: FilterMap) -> FilterValues:
    """Return ``filters`` with ``path`` values in the stored form, checked against the index.

    Reads the doc registry only when a document field is filtered on; an index whose
    registry records no document (text units written directly) is left to
    `check_filters_pass`.

    Raises:
        FilterMatchesNothingError: no indexed document (with passages) has any of the values
            given for ``path``, ``document_id`` or ``source_scope``.
        StoreError: the registry failed.
    """
    out: FilterValues = {k: v if isinstance(v, str) or not isinstance(v, Sequence)
                         else list(v) for k, v in filters.items()}  # fmt: skip
    if not any(field in out for field in _DOCUMENT_FIELDS):
        return out
    every = await stores.registry.list_records()
    records = [r for r in every if r.text_unit_ids]
    if not records:  # text units written without a registry (a graph brought whole)
        return out
    unindexed = {str(getattr(r, f)): r.status.value for r in every if not r.text_unit_ids
                 for f in _DOCUMENT_FIELDS}  # fmt: skip
    if "path" in out:
        known = location_index((r.source_scope, r.path) for r in records)
        ids = {full_location_of(r.source_scope, r.path): r.document_id for r in records}
        cwd = os.getcwd()
        typed = _as_list(out["path"])
        exact = [full_location(v, known, cwd=cwd) if isinstance(v, str) else None
                 for v in typed]  # fmt: skip
        if "document_id" not in out and all(loc is not None for loc in exact):
            # an absolute or cwd-relative path names one document, even where another
            # folder indexed holds the same relative path
            del out["path"]
            found = [ids[loc] for loc in exact if loc is not None]
            out["document_id"] = found[0] if len(found) == 1 else list(found)
        else:
            fixed = [stored_path(v, known, cwd=cwd) if isinstance(v, str) else v
                     for v in typed]  # fmt: skip
            out["path"] = fixed if isinstance(out["path"], list) else fixed[0]
    for field in _DOCUMENT_FIELDS:
        if field not in out:
            continue
        have = {str(getattr(r, field)) for r in records}
        values = _as_list(out[field])
        if not any(str(v) in have for v in values):
            failed = next((unindexed[str(v)] for v in values if str(v) in unindexed), None)
            why = (f" (the document is {failed}, with no passage: `ukr status` says why)"
                   if failed else _hint(field, values, have))  # fmt: skip
            raise FilterMatchesNothingError(
                f"{_nothing_passes(field, _as_list(filters.get(field, values)))}: no indexed "
                f"document has this {field.replace('_', ' ')}{why}",
                filters=dict(filters),
            )
    return out


async def check_filters_pass(ctx: QueryContext) -> None:
    """Refuse a filtered query that found nothing because no passage passes its filters.

    Called when retrieval returned no passage: a vector search for one passage under the
    filters tells a filter that excludes everything from a question nothing matches.

    Raises:
        FilterMatchesNothingError: no passage passes ``ctx.filters``.
        StoreError: the search failed.
        EmbeddingModelError: the question could not be embedded.
    """
    if not ctx.filters:
        return
    hits = await ctx.stores.search.search(
        Collection.TEXT_UNITS, query_vector=await ctx.query_vector(), mode=SearchMode.VECTOR,
        filters=ctx.filters, k=1,
    )  # fmt: skip
    if not hits:
        shown = ", ".join(_shown(k, _as_list(v)) for k, v in ctx.filters.items())
        together = " (no passage passes all of them together)" if len(ctx.filters) > 1 else ""
        raise FilterMatchesNothingError(
            f"no passage passes the filter {shown}{together}", filters=dict(ctx.filters)
        )


def _nothing_passes(field: str, values: Sequence[MetadataValue]) -> str:
    return f"no passage passes the filter {_shown(field, values)}"


def _shown(field: str, values: Sequence[MetadataValue]) -> str:
    return " or ".join(f"{field}={v!r}" for v in values)


def _hint(field: str, values: Sequence[MetadataValue], have: set[str]) -> str:
    """Where paths are relative to, and the closest stored value."""
    close = difflib.get_close_matches(str(values[0]), sorted(have), n=1, cutoff=0.5)
    near = f"; the closest is {close[0]!r}" if close else ""
    if field == "path":
        return f" (paths are relative to the indexed folder, as sources show them{near})"
    return f" ({near.removeprefix('; ')})" if near else ""


def _as_list(value: MetadataValue | Sequence[MetadataValue]) -> list[MetadataValue]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        return [value]
    return list(value)
