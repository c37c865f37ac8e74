"""Message archives as documents: normalized messages and thread-day transcripts.

A message source (iMessage ``chat.db``, the generic JSON Lines format) yields `SourceMessage`
records. They are merged by guid across files (`merge_messages`: overlapping exports never
duplicate a message), rendered into thread-day transcripts (`render_transcripts`), and the
transcripts are the documents an index holds. Rendering is pure: identical thread-days render
to an identical ``doc_key`` and text, which is what the manifest diff
(`domain.messages.manifest.diff_manifest`) rests on. Each transcript remembers where each of
its messages sits (`MessageSpan`), so every text unit cut from it can name the exact messages
it contains (per-message provenance).

The manifest diff, the stored spans and the chunker of transcripts are in
`domain.messages.manifest`.

Source: seed 001 (message-graph module reference: ``SourceMessage``, ``merge_batches``,
``thread_transcripts``, ``WorkdirManifest.diff``/``respanned``) and seed 004 (ADR-017: the
8,000-character transcript cap, the ``{thread_id}::{day-span}`` key, the 2026-08-10
amendment on bounded builds pruning their re-span casualties).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, tzinfo

from unified_kg_rag.domain.messages.ref import MessageEdit
from unified_kg_rag.domain.messages.source import (
    TAPBACK_KINDS,
    MessageSourceOptions,
    ParsedArchive,
    SourceMessage,
    Tapback,
    _Model,
    time_zone,
)
from unified_kg_rag.util.hashing import sha256_text

__all__ = [
    "EDITED_MARK",
    "MESSAGE_SCOPE",
    "REACTIONS_MARK",
    "TAPBACK_KINDS",
    "TRANSCRIPT_MAX_CHARS",
    "UNTHREADED_ID",
    "UNTHREADED_NAME",
    "MessageSourceOptions",
    "MessageSpan",
    "ParsedArchive",
    "SourceMessage",
    "Tapback",
    "TranscriptDoc",
    "bound_messages",
    "merge_messages",
    "message_line_spans",
    "message_order",
    "messages_in_span",
    "render_transcripts",
    "tapback_order",
    "transcript_hash",
]

MESSAGE_SCOPE = "messages:"
"""Source scope of transcript documents in an index (their path is the ``doc_key``)."""

TRANSCRIPT_MAX_CHARS = 8000
"""Default size target of one transcript document, in characters (seed 004's measured cap)."""

UNTHREADED_ID = "unthreaded"
"""Thread id of messages joined to no chat (kept, never dropped)."""

UNTHREADED_NAME = "Unthreaded messages"
"""Thread name of `UNTHREADED_ID`."""

EDITED_MARK = "(edited"
"""How the line marking an edited message starts (``    (edited 2024-03-01 18:06)``)."""

REACTIONS_MARK = "(reactions:"
"""How the line listing a message's reactions starts."""

_CONTINUATION = "    "


class MessageSpan(_Model):
    """Where one message sits in a transcript, with the provenance a source reports.

    Attributes:
        guid: the message's guid.
        start: offset of its first line in the transcript text (code points).
        end: offset one past its last line (tapback line included).
        sender_name: display name of the sender.
        sender_handle: raw handle (``""`` for the owner).
        is_from_me: the owner sent it.
        timestamp: ISO 8601 UTC send time, or ``""`` when unknown.
        edited: the sender edited it after sending.
        edited_at: ISO 8601 UTC time of the last edit, ``""`` when unknown or not edited.
        edits: its earlier versions, oldest first.
    """

    guid: str
    start: int
    end: int
    sender_name: str
    sender_handle: str = ""
    is_from_me: bool = False
    timestamp: str = ""
    edited: bool = False
    edited_at: str = ""
    edits: tuple[MessageEdit, ...] = ()


class TranscriptDoc(_Model):
    """One rendered thread transcript: the document an index holds for a thread's day span.

    Attributes:
        doc_key: ``{thread_id}::{day}`` or ``{thread_id}::{first}..{last}`` (days in the
            render time zone); stable: the same thread-days render to the same key.
        thread_id: the thread.
        thread_name: its display name.
        span: the day span part of the key.
        text: a ``Thread:`` header line, then one ``[YYYY-MM-DD HH:MM] Sender: text`` block
            per message (continuation lines, an ``(edited ...)`` mark and reactions
            indented).
        messages: the messages in transcript order, with their offsets in ``text``.
    """

    doc_key: str
    thread_id: str
    thread_name: str
    span: str
    text: str
    messages: tuple[MessageSpan, ...]

    @property
    def message_guids(self) -> tuple[str, ...]:
        """The guids of `messages`, in transcript order."""
        return tuple(m.guid for m in self.messages)

    @property
    def title(self) -> str:
        """``{thread_name} ({span})``: the transcript's display title."""
        return f"{self.thread_name} ({self.span})"


def merge_messages(archives: Iterable[Sequence[SourceMessage]]) -> list[SourceMessage]:
    """Merge messages of several files by guid; the first occurrence wins.

    Args:
        archives: each file's messages, in the caller's (stable) file order.

    Returns:
        Every distinct message, sorted by (timestamp, guid); undated messages first.
    """
    merged: dict[str, SourceMessage] = {}
    for messages in archives:
        for message in messages:
            merged.setdefault(message.guid, message)
    return sorted(merged.values(), key=message_order)


def bound_messages(
    messages: Sequence[SourceMessage], *, since: date | None = None, limit: int | None = None,
    tz: str = "UTC",
) -> list[SourceMessage]:
    """Return the window of a bounded build: messages from ``since`` on, the last ``limit``.

    The ``limit`` window is widened back to the start of its first day, so a bounded build
    never renders part of a day (a partial day would render as a changed transcript missing
    messages). Undated messages are outside any window.

    Args:
        messages: merged messages, sorted (`merge_messages`).
        since: first day kept, in time zone ``tz``.
        limit: keep the ``limit`` most recent messages (after ``since``), whole days.
        tz: IANA time zone name days are counted in.

    Raises:
        ValueError: ``limit`` is below 1, or ``tz`` is unknown.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1; got {limit}")
    zone = time_zone(tz)
    bounded = since is not None or limit is not None
    kept = [
        m for m in messages
        if not bounded or (m.timestamp is not None
                           and (since is None or _local(m.timestamp, zone).date() >= since))
    ]
    if limit is not None and len(kept) > limit:
        first_day = _day(kept[-limit], zone)
        start = len(kept) - limit
        while start > 0 and _day(kept[start - 1], zone) == first_day:
            start -= 1
        kept = kept[start:]
    return kept


def render_transcripts(
    messages: Sequence[SourceMessage], *, max_chars: int = TRANSCRIPT_MAX_CHARS, tz: str = "UTC"
) -> list[TranscriptDoc]:
    """Render messages into per-thread transcripts packed greedily by whole days.

    Consecutive days of one thread are packed into one transcript until the next day would
    take its message lines past ``max_chars``; a day is never split, so a single day longer
    than the cap becomes one oversized transcript (the chunker cuts it into text units).

    Args:
        messages: merged messages (any order; sorted here by (timestamp, guid)).
        max_chars: size target per transcript in characters of message lines (the header
            line comes on top).
        tz: IANA time zone name for the rendered times and the day boundaries.

    Returns:
        Transcripts, threads in order of first message, days in order within a thread.

    Raises:
        ValueError: ``max_chars`` is not positive, or ``tz`` is unknown.
    """
    if max_chars <= 0:
        raise ValueError(f"max_chars must be positive; got {max_chars}")
    zone = time_zone(tz)
    threads: dict[str, list[SourceMessage]] = {}
    for message in sorted(messages, key=message_order):
        threads.setdefault(message.thread_id, []).append(message)
    docs: list[TranscriptDoc] = []
    for thread_id, thread_messages in threads.items():
        days: dict[str, list[SourceMessage]] = {}
        for message in thread_messages:
            days.setdefault(_day(message, zone), []).append(message)
        packed: list[tuple[str, list[SourceMessage]]] = []
        size = 0
        for day, day_messages in days.items():
            block = sum(len(_render_message(m, zone)) + 1 for m in day_messages)
            if packed and size + block > max_chars:
                docs.append(_transcript(thread_id, packed, zone))
                packed, size = [], 0
            packed.append((day, day_messages))
            size += block
        if packed:
            docs.append(_transcript(thread_id, packed, zone))
    return docs


def transcript_hash(doc: TranscriptDoc) -> str:
    """Return the content hash of a transcript (SHA-256 of its text)."""
    return sha256_text(doc.text)


def message_line_spans(doc: TranscriptDoc) -> list[tuple[int, int]]:
    """Return the ``(start, end)`` offsets of each message block of ``doc``, in order.

    The header line is attached to the first block, so the spans tile the whole text.
    """
    spans = [(m.start, m.end) for m in doc.messages]
    if spans:
        spans[0] = (0, spans[0][1])
    return spans


def messages_in_span(
    messages: Sequence[MessageSpan], start: int, end: int
) -> list[MessageSpan]:
    """Return the messages whose text overlaps ``[start, end)`` of their transcript."""
    return [m for m in messages if m.start < end and m.end > start]


# ----------------------------------------------------------------------------- rendering


def message_order(message: SourceMessage) -> tuple[bool, datetime, str]:
    """Sort key of messages: undated first, then by timestamp, then guid."""
    stamp = message.timestamp or datetime.min.replace(tzinfo=UTC)
    return (message.timestamp is not None, stamp, message.guid)


def _local(stamp: datetime, zone: tzinfo) -> datetime:
    """``stamp`` in ``zone``; in UTC when the zone would push it past year 1 or 9999."""
    try:
        return stamp.astimezone(zone)
    except (OverflowError, ValueError):
        return stamp


def _day(message: SourceMessage, zone: tzinfo) -> str:
    if message.timestamp is None:
        return "undated"
    return _local(message.timestamp, zone).date().isoformat()


def _stamp(message: SourceMessage, zone: tzinfo) -> str:
    if message.timestamp is None:
        return "[undated]"
    return f"[{_clock(message.timestamp, zone)}]"


def _clock(stamp: datetime, zone: tzinfo) -> str:
    """``YYYY-MM-DD HH:MM`` of ``stamp`` in ``zone``."""
    t = _local(stamp, zone)
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d} {t.hour:02d}:{t.minute:02d}"


def _render_message(message: SourceMessage, zone: tzinfo) -> str:
    """One message block: the head line, continuation lines, an edited mark, reactions."""
    lines = [line.rstrip() for line in message.text.strip().splitlines() or [""]]
    head = f"{_stamp(message, zone)} {message.sender_name}: {lines[0]}"
    rest = [f"{_CONTINUATION}{line}" if line else _CONTINUATION.rstrip() for line in lines[1:]]
    if message.edited:
        when = _clock(message.edited_at, zone) if message.edited_at else ""
        rest.append(f"{_CONTINUATION}{EDITED_MARK}{' ' + when if when else ''})")
    if message.tapbacks:
        reactions = ", ".join(
            f"{t.kind} by {t.sender_name}" for t in sorted(message.tapbacks, key=tapback_order)
        )
        rest.append(f"{_CONTINUATION}{REACTIONS_MARK} {reactions})")
    return "\n".join([head, *rest])


def tapback_order(tapback: Tapback) -> tuple[str, str]:
    """Sort key of reactions: kind, then who reacted."""
    return (tapback.kind, tapback.sender_name)


def _transcript(
    thread_id: str, packed: list[tuple[str, list[SourceMessage]]], zone: tzinfo
) -> TranscriptDoc:
    first, last = packed[0][0], packed[-1][0]
    span = first if first == last else f"{first}..{last}"
    messages = [m for _, day in packed for m in day]
    name = messages[-1].thread_name or thread_id
    text = f"Thread: {name}\n"
    spans: list[MessageSpan] = []
    for message in messages:
        block = _render_message(message, zone)
        start = len(text)
        text += block + "\n"
        spans.append(
            MessageSpan(
                guid=message.guid,
                start=start,
                end=start + len(block),
                sender_name=message.sender_name,
                sender_handle=message.sender_handle,
                is_from_me=message.is_from_me,
                timestamp=message.timestamp.isoformat() if message.timestamp else "",
                edited=message.edited,
                edited_at=message.edited_at.isoformat() if message.edited_at else "",
                edits=message.edits,
            )
        )
    return TranscriptDoc(
        doc_key=f"{thread_id}::{span}",
        thread_id=thread_id,
        thread_name=name,
        span=span,
        text=text,
        messages=tuple(spans),
    )
