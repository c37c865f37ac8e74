"""Sweeping extraction records that no text unit of the index can read (issue #15, item 14).

An extraction record is read only through the fingerprint of a text unit's text under the
current model, prompts and settings (`GraphExtractor.fingerprint`). A record whose key is the
fingerprint of no text unit the registry lists is an orphan: the text was removed (and a run
was killed before the record went), or it was extracted under other settings. Both kinds are
swept: a record of other settings is never read while those settings are not in effect, such
records would otherwise pile up with every prompt or model change, and returning to earlier
settings costs no model call while the LLM response cache holds their replies.

The graph build sweeps after its extraction stage, before it records itself complete, so a
build recorded complete leaves no orphan; an unchanged re-run then only compares the number of
stored records with the number the last build left (one count query) and sweeps when they
differ (a record written or left by something else, an index from an older version).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from unified_kg_rag.domain.models import DocStatus
from unified_kg_rag.ingestion.units import UnitText, load_units
from unified_kg_rag.ports import IndexStores

from .extract import RECORDS_NAMESPACE, GraphExtractor
from .unit_attempts import FAILURES_NAMESPACE

__all__ = ["current_keys", "orphan_records", "sweep_records"]

logger = logging.getLogger(__name__)

_BATCH = 2000
"""Keys deleted per store call."""


async def current_keys(
    stores: IndexStores, extractor: GraphExtractor, loaded: Sequence[UnitText] = ()
) -> set[str]:
    """Return the fingerprints of every text unit the registry lists (``deleting`` excluded).

    Units of documents that are failed, quarantined or pending count too (their records are
    read again when the document is). ``loaded`` are units already read (the build's), so only
    the others are read from the search index.

    Raises:
        StoreError: a store failed.
    """
    listed = {
        t: r.path
        for r in await stores.registry.list_records()
        if r.status is not DocStatus.DELETING
        for t in r.text_unit_ids
    }
    have = {u.id for u in loaded}
    others = await load_units(stores, {t: p for t, p in listed.items() if t not in have})
    return {extractor.fingerprint(u.text) for u in (*loaded, *others) if u.id in listed}


async def orphan_records(stores: IndexStores, keep: set[str]) -> list[str]:
    """Return the keys of the stored extraction records not in ``keep`` (sorted).

    Raises:
        StoreError: the record store failed.
    """
    return [k for k in await stores.records.keys(RECORDS_NAMESPACE) if k not in keep]


async def sweep_records(stores: IndexStores, keep: set[str]) -> int:
    """Delete the extraction records and failure entries whose key is not in ``keep``.

    Args:
        stores: the index's (fenced) stores.
        keep: `current_keys` of the index.

    Returns:
        The number of extraction records deleted.

    Raises:
        StoreError: the record store failed (the next build sweeps what is left).
    """
    swept = 0
    for namespace in (RECORDS_NAMESPACE, FAILURES_NAMESPACE):
        doomed = [k for k in await stores.records.keys(namespace) if k not in keep]
        deleted = 0
        for i in range(0, len(doomed), _BATCH):
            deleted += await stores.records.delete(namespace, doomed[i : i + _BATCH])
        if deleted:
            logger.info("deleted %d %s entries no text unit of index %s reads", deleted,
                        namespace, stores.name)
        if namespace == RECORDS_NAMESPACE:
            swept = deleted
    return swept
