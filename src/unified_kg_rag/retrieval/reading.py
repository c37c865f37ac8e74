"""Reading what an answer rests on in place: a passage in its document, a message in its day.

`read_document` returns a document's text as its text units in order (a document's text is
kept only as its units), a bounded window of them around a passage located by its offsets
(``start_char``/``end_char`` of a `Source`) or by its text units. `thread_day` returns the
messages of a thread on the day of a message (or on a day), read from the thread transcript
(`domain.messages.transcripts.TranscriptDoc`) that holds it: its stored spans
(`domain.messages.manifest.StoredTranscript`) and its text units.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic import BaseModel

from unified_kg_rag.domain.messages.manifest import (
    SPANS_NAMESPACE,
    StoredTranscript,
    message_ref,
    parse_spans_records,
)
from unified_kg_rag.domain.messages.transcripts import MESSAGE_SCOPE
from unified_kg_rag.domain.models import Collection, DocRecord, IndexRecord, MessageRef
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.util.errors import NotFoundError, UsageError

__all__ = [
    "DocumentSegment",
    "DocumentText",
    "ThreadDay",
    "ThreadDayRef",
    "read_document",
    "thread_day",
]

_READ_BATCH = 500


class DocumentSegment(BaseModel):
    """A stretch of a document's text: one text unit less what the unit before it repeats.

    Attributes:
        text_unit_id: the text unit.
        start_char: offset of ``text`` in the document (code points).
        end_char: offset one past its end.
        text: the text (a unit's overlap with the unit before it is left out).
    """

    text_unit_id: str
    start_char: int
    end_char: int
    text: str


class DocumentText(BaseModel):
    """A window of a document's text around a passage (``GET /v1/documents/{id}/text``).

    Attributes:
        document_id: the document.
        path: its path relative to the folder it was indexed from.
        source_scope: that folder.
        title: its title, when its units carry one.
        text_units: how many text units the document holds.
        first_unit: 0-based position of the first segment's unit among them.
        segments: the window's text, unit by unit in document order; a gap between two
            segments' offsets is text no unit kept (whitespace between chunks).
        passage_start: offset of the passage located, None when none was asked or found.
        passage_end: offset one past its end.
        more_before: the document has text before the window.
        more_after: the document has text after the window.
    """

    document_id: str
    path: str
    source_scope: str
    title: str | None = None
    text_units: int
    first_unit: int
    segments: list[DocumentSegment]
    passage_start: int | None = None
    passage_end: int | None = None
    more_before: bool = False
    more_after: bool = False


async def _document(stores: IndexStores, document_id: str) -> DocRecord:
    record = (await stores.registry.get([document_id])).get(document_id)
    if record is None:
        raise NotFoundError(
            f"no document {document_id!r} in index {stores.name!r}", field="document_id"
        )
    return record


async def _units(stores: IndexStores, record: DocRecord) -> list[IndexRecord]:
    ids = list(record.text_unit_ids)
    units: list[IndexRecord] = []
    for i in range(0, len(ids), _READ_BATCH):
        units.extend(await stores.search.get(Collection.TEXT_UNITS, ids[i : i + _READ_BATCH]))
    return units


def _segments(units: Sequence[IndexRecord]) -> list[DocumentSegment]:
    """Order units by offset and drop each one's overlap with the text before it.

    Units without offsets (an older index) are laid end to end in registry order.
    """
    placed: list[tuple[int, int, IndexRecord]] = []
    cursor = 0
    for n, unit in enumerate(units):
        start = unit.fields.get("start_char")
        start = start if isinstance(start, int) else cursor
        placed.append((start, n, unit))
        cursor = start + len(unit.text)
    placed.sort(key=lambda t: (t[0], t[1]))
    out: list[DocumentSegment] = []
    covered = 0
    for start, _, unit in placed:
        end = start + len(unit.text)
        if end <= covered:
            continue  # wholly inside the text before it
        cut = max(covered - start, 0)
        out.append(DocumentSegment(text_unit_id=unit.id, start_char=start + cut, end_char=end,
                                   text=unit.text[cut:]))  # fmt: skip
        covered = end
    return out


async def read_document(
    stores: IndexStores,
    document_id: str,
    *,
    start_char: int | None = None,
    end_char: int | None = None,
    text_unit_ids: Sequence[str] = (),
    max_chars: int = 20_000,
) -> DocumentText:
    """Return a window of a document's text, the passage asked for located in it.

    The passage is the text units named in ``text_unit_ids``, or else the stretch
    ``[start_char, end_char)``; the window holds the segments it overlaps, then the segments
    around them, nearest first, while the window stays within ``max_chars`` (the passage's
    own segments are always given, one segment at least). Without a passage the window
    starts at the document's beginning.

    Args:
        stores: the index.
        document_id: the document.
        start_char: offset of the passage in the document.
        end_char: offset one past its end (default: ``start_char`` + 1).
        text_unit_ids: the passage's text units (a `Source`'s ``text_unit_ids``).
        max_chars: the most characters of text the window holds besides the passage.

    Raises:
        NotFoundError: the index holds no document ``document_id``.
        UsageError: ``end_char`` is before ``start_char``, or ``max_chars`` is below 1.
        StoreError: a store failed.
    """
    if max_chars < 1:
        raise UsageError(f"max_chars must be at least 1; got {max_chars}", field="max_chars")
    if start_char is not None and end_char is not None and end_char < start_char:
        raise UsageError(f"end_char {end_char} is before start_char {start_char}",
                         field="end_char")  # fmt: skip
    record = await _document(stores, document_id)
    units = await _units(stores, record)
    segments = _segments(units)
    wanted = set(text_unit_ids)
    p_start: int | None = None
    p_end: int | None = None
    named = [n for n, s in enumerate(segments) if s.text_unit_id in wanted]
    if named:  # a unit's own offsets: the part it shares with the unit before it included
        starts = {u.id: u.fields.get("start_char") for u in units}
        p_start = min(_int(starts.get(segments[n].text_unit_id), segments[n].start_char)
                      for n in named)  # fmt: skip
        p_end = max(segments[n].end_char for n in named)
    elif start_char is not None:
        p_start = start_char
        p_end = end_char if end_char is not None else start_char + 1
    hit = ([n for n, s in enumerate(segments) if s.start_char < p_end and s.end_char > p_start]
           if p_start is not None and p_end is not None else [])  # fmt: skip
    lo, hi = (hit[0], hit[-1] + 1) if hit else (0, min(1, len(segments)))
    budget = max_chars
    grew = True
    while grew:
        grew = False
        if hi < len(segments) and len(segments[hi].text) <= budget:
            budget -= len(segments[hi].text)
            hi, grew = hi + 1, True
        if lo > 0 and len(segments[lo - 1].text) <= budget:
            budget -= len(segments[lo - 1].text)
            lo, grew = lo - 1, True
    title = next((u.fields["title"] for u in units if isinstance(u.fields.get("title"), str)),
                 None)  # fmt: skip
    return DocumentText(
        document_id=record.document_id, path=record.path, source_scope=record.source_scope,
        title=title if isinstance(title, str) else None, text_units=len(segments),
        first_unit=lo, segments=segments[lo:hi],
        passage_start=p_start if hit else None, passage_end=p_end if hit else None,
        more_before=lo > 0, more_after=hi < len(segments),
    )  # fmt: skip


class ThreadDayRef(BaseModel):
    """A day of the same thread to move to: a day of this transcript, or another transcript.

    Attributes:
        span: the day (``YYYY-MM-DD``), or another transcript's days (``first..last``).
        document_id: the transcript that holds it.
    """

    span: str
    document_id: str


class ThreadDay(BaseModel):
    """The messages of a thread on one day (``GET /v1/messages/thread-day``).

    Attributes:
        document_id: the transcript holding them (a message archive's document).
        doc_key: its key, ``{thread_id}::{days}``.
        thread_id: the thread.
        thread_name: its display name.
        span: the day shown, ``YYYY-MM-DD`` in the archive's render time zone (``undated``
            for messages without a time).
        messages: that day's messages in transcript order (``text``: the rendered block).
        focus: the guid of the message asked for, when one was.
        days: the thread's days to move to, in order: each day of this transcript, and
            the thread's other transcripts by their day spans.
    """

    document_id: str
    doc_key: str
    thread_id: str
    thread_name: str
    span: str
    messages: list[MessageRef]
    focus: str | None = None
    days: list[ThreadDayRef]


_STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2}) ")


def _local_day(block: str) -> str:
    """The day of a rendered message block (its ``[YYYY-MM-DD HH:MM]`` head), or ``undated``."""
    match = _STAMP.match(block)
    return match.group(1) if match else "undated"


def _covers(span: str, day: str) -> bool:
    first, _, last = span.partition("..")
    return first <= day <= (last or first)


async def thread_day(
    stores: IndexStores,
    thread_id: str,
    *,
    message: str | None = None,
    day: str | None = None,
    max_messages: int = 500,
) -> ThreadDay:
    """Return the messages of ``thread_id`` on the day of ``message``, or on ``day``.

    A message archive is indexed as thread transcripts of one day or of several packed days
    (seed 001's thread-day transcripts); the transcript holding the message (or covering the
    day) is read from its stored spans and text units, and its messages of that day (in the
    time zone it was rendered in) are returned. With more than ``max_messages`` of them,
    those nearest the focus are given.

    Args:
        stores: the index.
        thread_id: the thread (a `MessageRef`'s ``thread_id``).
        message: a message guid; its day is the one returned.
        day: ``YYYY-MM-DD`` in the render time zone (used when ``message`` is None).
        max_messages: the most messages returned.

    Raises:
        UsageError: neither ``message`` nor ``day`` is given.
        NotFoundError: the index holds no message of the thread with that guid or on that day.
        StoreError: a store failed.
    """
    if not message and not day:
        raise UsageError("name a message or a day", field="message")
    records = [r for r in await stores.registry.list_records(MESSAGE_SCOPE)
               if r.path.startswith(f"{thread_id}::")]  # fmt: skip
    stored: dict[str, StoredTranscript] = {}
    for i in range(0, len(records), _READ_BATCH):
        ids = [r.document_id for r in records[i : i + _READ_BATCH]]
        stored.update(parse_spans_records(await stores.records.get_many(SPANS_NAMESPACE, ids)))
    stored = {d: t for d, t in stored.items() if t.thread_id == thread_id}
    what = f"message {message!r}" if message else f"day {day}"
    not_found = NotFoundError(
        f"no transcript of thread {thread_id!r} holds {what} in index {stores.name!r}",
        field="message" if message else "day",
    )
    chosen = next((d for d, t in sorted(stored.items(), key=lambda kv: kv[1].doc_key)
                   if (message and any(m.guid == message for m in t.messages))
                   or (not message and day and _covers(t.doc_key.partition("::")[2], day))),
                  None)  # fmt: skip
    if chosen is None:
        raise not_found
    record = next(r for r in records if r.document_id == chosen)
    transcript = stored[chosen]
    text = _text_of(_segments(await _units(stores, record)))
    blocks = [(m, text[m.start : m.end].strip()) for m in transcript.messages]
    wanted = next((_local_day(b) for m, b in blocks if m.guid == message), day or "")
    shown = [(m, b) for m, b in blocks if _local_day(b) == wanted]
    if not shown:
        raise not_found
    if len(shown) > max_messages:
        at = next((n for n, (m, _) in enumerate(shown) if m.guid == message), 0)
        lo = max(0, min(at - max_messages // 2, len(shown) - max_messages))
        shown = shown[lo : lo + max_messages]
    days = {_local_day(b): chosen for _, b in blocks}
    days.update({t.doc_key.partition("::")[2]: d for d, t in stored.items() if d != chosen})
    return ThreadDay(
        document_id=chosen, doc_key=transcript.doc_key, thread_id=thread_id,
        thread_name=transcript.thread_name, span=wanted,
        messages=[message_ref(transcript, m, b) for m, b in shown], focus=message,
        days=[ThreadDayRef(span=s, document_id=d) for s, d in sorted(days.items())],
    )  # fmt: skip


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) else default


def _text_of(segments: Sequence[DocumentSegment]) -> str:
    """The document's text from its segments, a gap no unit kept filled with spaces."""
    parts: list[str] = []
    at = 0
    for s in segments:
        parts.append(" " * max(s.start_char - at, 0))
        parts.append(s.text)
        at = s.end_char
    return "".join(parts)
