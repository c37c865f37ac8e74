"""Apple's encodings in an iMessage database: dates, tapback codes, tapback targets.

Source: seed 001 (``IMessageSource``: the per-row epoch detection, ``_tapback_kind``,
``_strip_target_prefix``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from unified_kg_rag.domain.messages.transcripts import TAPBACK_KINDS

__all__ = ["APPLE_EPOCH", "apple_timestamp", "tapback_kind", "tapback_target"]

APPLE_EPOCH = datetime(2001, 1, 1, tzinfo=UTC)
"""Origin of ``message.date``: 2001-01-01T00:00:00Z (Core Data's reference date)."""

_NANOS_THRESHOLD = 100_000_000_000
"""|date| at or above this is nanoseconds: as seconds it would be past the year 5000."""

_TAPBACK_ADD = 2000
_TAPBACK_REMOVE = 3000


def apple_timestamp(raw: object) -> datetime | None:
    """Decode a raw ``message.date`` into an aware UTC datetime.

    Args:
        raw: seconds or nanoseconds since 2001-01-01 UTC (era decided by magnitude);
            0, NULL, text, NaN or infinity means "undated".

    Returns:
        The instant, truncated to the microsecond, or None when undated.

    Raises:
        ValueError: the value is out of the range a datetime can hold.
    """
    if raw is None or isinstance(raw, bytes | bool):
        return None
    try:
        value = int(raw)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):  # text, NaN, infinity
        return None
    if value == 0:
        return None
    if abs(value) >= _NANOS_THRESHOLD:
        seconds, nanos = divmod(value, 1_000_000_000)
        micros = nanos // 1000
    else:
        seconds, micros = value, 0
    try:
        return APPLE_EPOCH + timedelta(seconds=seconds, microseconds=micros)
    except OverflowError as exc:
        raise ValueError(f"date {value} is out of range") from exc


def tapback_kind(assoc_type: object) -> tuple[str, bool] | None:
    """Classify an ``associated_message_type``: ``(kind, is_add)`` for a tapback, else None."""
    if not isinstance(assoc_type, int) or isinstance(assoc_type, bool):
        return None
    span = len(TAPBACK_KINDS)
    if _TAPBACK_ADD <= assoc_type < _TAPBACK_ADD + span:
        return TAPBACK_KINDS[assoc_type - _TAPBACK_ADD], True
    if _TAPBACK_REMOVE <= assoc_type < _TAPBACK_REMOVE + span:
        return TAPBACK_KINDS[assoc_type - _TAPBACK_REMOVE], False
    return None


def tapback_target(assoc_guid: object) -> str | None:
    """Return the bare target guid of an ``associated_message_guid``.

    ``p:N/GUID`` (part N of the message) and ``bp:GUID`` (the whole message) lose their
    prefix; a bare guid passes through. Returns None for an empty value or a ``p:`` prefix
    without ``/``.
    """
    if not isinstance(assoc_guid, str) or not assoc_guid.strip():
        return None
    value = assoc_guid.strip()
    if value.startswith("bp:"):
        return value[3:] or None
    if value.startswith("p:"):
        _, slash, rest = value.partition("/")
        return rest if slash and rest else None
    return value
