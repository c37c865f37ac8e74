"""The failure ledger of the extraction stage: consecutive failures per text (seed 000 §5.3).

One `UnitAttempts` per extraction fingerprint whose last extraction failed for a reason of its
own (record store namespace ``extraction_failures``). A text that failed on
``indexing.quarantine_after`` consecutive runs is quarantined: the extraction stage no longer
sends it (its partial record, if any, stays in the graph) until its text changes (a new text
is a new fingerprint), the extraction settings change (likewise), or a run is told to retry
quarantined items. A complete extraction deletes the entry. Entries of texts the index no
longer holds are swept with the orphan extraction records (`ingestion.graph.record_sweep`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from unified_kg_rag.domain.index.attempts import UnitAttempts, is_quarantined
from unified_kg_rag.ports import RecordStore

from .extract import ExtractionOutcome

__all__ = ["FAILURES_NAMESPACE", "UnitLedger"]

logger = logging.getLogger(__name__)

FAILURES_NAMESPACE = "extraction_failures"
"""RecordStore namespace of `UnitAttempts`, keyed by extraction fingerprint."""


class UnitLedger:
    """Reads and updates the consecutive failures of the index's extractions.

    Args:
        records: the index's record store.
        quarantine_after: ``indexing.quarantine_after`` (0: never quarantine).
    """

    def __init__(self, records: RecordStore, quarantine_after: int) -> None:
        self._records = records
        self.quarantine_after = quarantine_after

    async def entries(self) -> dict[str, UnitAttempts]:
        """Return every entry (fingerprint → attempts); unreadable ones are skipped.

        Raises:
            StoreError: the record store failed.
        """
        keys = await self._records.keys(FAILURES_NAMESPACE)
        if not keys:
            return {}
        out: dict[str, UnitAttempts] = {}
        for key, raw in (await self._records.get_many(FAILURES_NAMESPACE, keys)).items():
            try:
                out[key] = UnitAttempts.model_validate_json(raw)
            except ValueError:
                logger.warning("unreadable extraction failure entry %s ignored", key[:12])
        return out

    async def quarantined(self) -> dict[str, UnitAttempts]:
        """Return the entries at the quarantine limit (fingerprint → attempts).

        Raises:
            StoreError: the record store failed.
        """
        return {k: a for k, a in (await self.entries()).items()
                if is_quarantined(a.failures, self.quarantine_after)}

    async def update(
        self, outcome: ExtractionOutcome, paths: Mapping[str, str]
    ) -> dict[str, UnitAttempts]:
        """Count this run's failures and clear the entries of texts extracted completely.

        Call only when the stage finished: a stage that stopped judged no failure.

        Args:
            outcome: the extraction stage's outcome.
            paths: text unit id → document path (for the entries' messages).

        Returns:
            Text unit id → its attempts after this run, for every failed unit.

        Raises:
            StoreError: the record store failed.
        """
        entries = await self.entries()
        now = time.time()
        written: dict[str, UnitAttempts] = {}
        after: dict[str, UnitAttempts] = {}
        for unit_id, reason in sorted(outcome.failed.items()):
            key = outcome.fingerprints[unit_id]
            if key not in written:
                previous = entries.get(key)
                written[key] = UnitAttempts(
                    failures=(previous.failures if previous else 0) + 1, error=reason,
                    text_unit_id=unit_id, path=paths.get(unit_id, ""), updated_at=now,
                )
            after[unit_id] = written[key]
        skipped = set(outcome.quarantined)
        complete = {
            outcome.fingerprints[u] for u, record in outcome.records.items()
            if record.complete and u not in outcome.failed and u not in skipped
        }
        cleared = [k for k in entries if k in complete and k not in written]
        if written:
            await self._records.put_many(
                FAILURES_NAMESPACE, {k: a.model_dump_json() for k, a in written.items()}
            )
        if cleared:
            await self._records.delete(FAILURES_NAMESPACE, cleared)
        return after
