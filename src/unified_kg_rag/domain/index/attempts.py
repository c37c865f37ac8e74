"""Attempts and quarantine: counting an item's consecutive failures (seed 000 §5.3).

An item (a document, or a text unit's graph extraction) that fails on ``quarantine_after``
consecutive runs for a reason of its own is *quarantined*: later runs no longer retry it
until its content changes or the user releases it (``ukr index PATH --retry-quarantined``).
A success resets the count; a failure that is not the item's own (a server that is down, a
store error, authentication) never counts. Pure rules; the doc registry (`DocRecord`) and the
extraction stage's failure ledger (`UnitAttempts`) store the counts.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from unified_kg_rag.domain.models import DocRecord, DocStatus

__all__ = ["UnitAttempts", "carried_failures", "is_quarantined"]


def is_quarantined(failures: int, quarantine_after: int) -> bool:
    """True when ``failures`` consecutive failures reach the limit (0: never quarantine)."""
    return quarantine_after > 0 and failures >= quarantine_after


def carried_failures(previous: DocRecord | None, content_hash: str) -> int:
    """Return the consecutive failures a document brings to a new attempt at ``content_hash``.

    The count of its record when that record is not ``processed`` and was written for the same
    content (a failed, quarantined or write-ahead ``pending`` record); 0 for new content, a
    processed document, or an unknown content (``""``: the file could not be read).
    """
    if previous is None or not content_hash or previous.status is DocStatus.PROCESSED:
        return 0
    return previous.failure_count if previous.content_hash == content_hash else 0


class UnitAttempts(BaseModel):
    """The failures of one extraction (a text's fingerprint) on consecutive runs.

    Stored as JSON in the index's record store (namespace ``extraction_failures``, keyed by
    the extraction fingerprint), deleted when the unit's extraction succeeds.

    Attributes:
        failures: consecutive runs whose extraction of this text failed for a reason of its
            own (an unreadable or cut reply, a rejected request, a call that kept timing out
            while the server answered others).
        error: the one-line reason of the last failure.
        text_unit_id: a text unit with this text (for messages and `ukr status`).
        path: its document's path.
        updated_at: UNIX time (seconds) of the last failure.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    failures: int
    error: str
    text_unit_id: str = ""
    path: str = ""
    updated_at: float = 0.0
