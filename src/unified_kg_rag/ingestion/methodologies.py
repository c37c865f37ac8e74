"""What an index holds: the methodologies recorded after a run (seed 000 §4.6)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from unified_kg_rag.domain.index.meta import (
    INDEX_NAMESPACE,
    METHODOLOGIES_KEY,
    parse_methodologies,
)
from unified_kg_rag.ports import RecordStore

__all__ = ["record_methodologies"]


async def record_methodologies(
    records: RecordStore, configured: Sequence[str], built: Iterable[str]
) -> list[str]:
    """Record and return what the index holds after a run that built ``built``.

    The selected (``configured``) methodologies that this run built or an earlier run had
    recorded. A methodology no longer selected is dropped, so its strategies are refused;
    one whose build stopped (its stage returned none) keeps what an earlier run recorded.

    Raises:
        StoreError: the record store failed.
    """
    held_before = set(parse_methodologies(await records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY)))
    held = sorted((held_before | set(built)) & set(configured))
    if held != sorted(held_before):
        await records.put(INDEX_NAMESPACE, METHODOLOGIES_KEY, json.dumps(held))
    return held
