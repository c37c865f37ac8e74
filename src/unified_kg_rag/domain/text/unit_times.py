"""The time of a text unit: the fields recency is scored from.

A text unit's search record carries ``timestamp`` (ISO-8601 UTC) and, for message
transcripts, ``timestamp_first``:

- a unit of a message transcript: ``timestamp`` = the send time of its newest message,
  ``timestamp_first`` = that of its oldest (undated messages ignored; no field when none of
  its messages is dated);
- a unit of a file: ``timestamp`` = the date the document states in its parser's metadata
  (`STATED_TIME_KEYS`, first found) or else the file's modification time.

``timestamp_source`` says which (`TimeSource`). These fields never enter a content digest, a
text unit id or an extraction key: they are written with the unit's search record only.
What belongs here: the field names and the pure rules that pick and normalise the times.
Not here: reading a file's mtime (ingestion) or a stored record (retrieval).

Source: issue #22 (``temporal_decay`` over document or message timestamps), seed 002
("Temporal Decay").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from enum import StrEnum

from unified_kg_rag.domain.models import MetadataValue

__all__ = [
    "FIRST_TIME_FIELD",
    "STATED_TIME_KEYS",
    "TIME_FIELD",
    "TIME_FIELDS",
    "TIME_SOURCE_FIELD",
    "TimeSource",
    "document_times",
    "epoch_s",
    "iso_utc",
    "message_times",
]

TIME_FIELD = "timestamp"
"""Search-record field: the unit's time (newest message, stated date, or modified time)."""

FIRST_TIME_FIELD = "timestamp_first"
"""Search-record field: the send time of the oldest message of a transcript unit."""

TIME_SOURCE_FIELD = "timestamp_source"
"""Search-record field: where `TIME_FIELD` came from (a `TimeSource` value)."""

TIME_FIELDS = (TIME_FIELD, FIRST_TIME_FIELD, TIME_SOURCE_FIELD)
"""Every time field a text unit's search record may carry."""

STATED_TIME_KEYS = ("modified", "date", "created")
"""Parser metadata keys read as the date a document states, in order of preference: when it
says it was last changed, its date (a post's), when it says it was created."""


class TimeSource(StrEnum):
    """Where a unit's `TIME_FIELD` came from."""

    MESSAGES = "messages"
    """The send time of the newest message of the unit."""
    STATED = "stated"
    """A date the document states (parser metadata, `STATED_TIME_KEYS`)."""
    MODIFIED = "modified"
    """The file's modification time when it was indexed."""
    REGISTRY = "registry"
    """Query-time fallback for a unit stored without times: its document's last indexing."""


def epoch_s(value: object) -> float | None:
    """Return the seconds since the epoch of a time value, or None when it is not one.

    Args:
        value: epoch seconds (int or float), an aware or naive `datetime`, or ISO-8601 text
            (``Z`` accepted; a naive time is read as UTC). Booleans and blanks are not times.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    if isinstance(value, str) and value.strip():
        try:
            moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    return None


def iso_utc(seconds: float) -> str:
    """Return epoch ``seconds`` as ISO-8601 UTC text (``2024-03-01T09:30:00+00:00``).

    Raises:
        ValueError: ``seconds`` is outside the years datetime can hold (1..9999).
    """
    try:
        return datetime.fromtimestamp(seconds, UTC).isoformat()
    except (OverflowError, OSError) as exc:
        raise ValueError(f"time {seconds!r} is out of range") from exc


def message_times(stamps: Iterable[str]) -> dict[str, MetadataValue]:
    """Return the time fields of a transcript unit from its messages' send times.

    Args:
        stamps: the ISO-8601 send times of the unit's messages (``""``: undated, ignored).

    Returns:
        ``{timestamp: newest, timestamp_first: oldest, timestamp_source: "messages"}``, times
        as ISO-8601 UTC; ``{}`` when no message is dated.
    """
    seconds = sorted(s for s in (epoch_s(v) for v in stamps) if s is not None)
    if not seconds:
        return {}
    return {TIME_FIELD: iso_utc(seconds[-1]), FIRST_TIME_FIELD: iso_utc(seconds[0]),
            TIME_SOURCE_FIELD: TimeSource.MESSAGES.value}  # fmt: skip


def document_times(
    metadata: Mapping[str, MetadataValue], modified_s: float | None
) -> dict[str, MetadataValue]:
    """Return the time fields of a document's units: its stated date, else its mtime.

    Args:
        metadata: the parser's metadata of the document; the first of `STATED_TIME_KEYS`
            holding a readable time (epoch seconds or ISO-8601) is the stated date.
        modified_s: the file's modification time, epoch seconds (None: unknown).

    Returns:
        ``{timestamp, timestamp_source}`` (ISO-8601 UTC; source ``stated`` or ``modified``),
        or ``{}`` when neither is known.
    """
    for key in STATED_TIME_KEYS:
        stated = epoch_s(metadata.get(key))
        if stated is not None:
            try:
                return {TIME_FIELD: iso_utc(stated),
                        TIME_SOURCE_FIELD: TimeSource.STATED.value}  # fmt: skip
            except ValueError:
                continue
    if modified_s is None:
        return {}
    try:
        return {TIME_FIELD: iso_utc(modified_s), TIME_SOURCE_FIELD: TimeSource.MODIFIED.value}
    except ValueError:
        return {}
