"""The ``imessage`` message source: a macOS ``chat.db`` or an iOS ``sms.db``, read-only.

What it reads, and how:

* **Opened read-only, never written** (`connect_readonly`: a ``mode=ro`` URI, ``immutable=1``
  only for a read-only folder). Real ``chat.db`` files carry triggers that call functions
  only Messages defines, so even a copy cannot be written by plain SQLite; a read-only open
  needs none of them. A WAL-mode file is read with its ``-wal``/``-shm`` sidecars (copy them
  along, or recent messages are missing); SQLite's WAL reader creates them (empty) beside a
  WAL file that has none; the database file itself is never touched.
* **Columns introspected** (``PRAGMA table_info``): schemas differ by OS version (iOS 6 and 9
  have no ``associated_message_*``; ``chat.display_name`` appeared in iOS 7); a missing column
  reads as NULL and a missing join table as "no rows".
* **Dates** count from 2001-01-01 UTC in seconds (before macOS 10.13/iOS 11) or nanoseconds
  (after); the era is decided per value by magnitude, so a decade-old database holding both
  decodes right. 0/NULL is "undated" (``timestamp=None``), never the epoch.
* **Bodies** from ``text``, else from ``attributedBody`` (`decode_attributed_body`). U+FFFC
  (the attachment placeholder) is removed; a row left without text is counted in ``skipped``.
* **Text that is not UTF-8**: SQLite never checks it, so a ``TEXT`` value (a message's text,
  a handle, a chat's name) or an ``attributedBody`` string may hold undecodable bytes. Text
  columns are read as bytes and decoded leniently (`domain.text.decoding.decode_utf8`: the
  CESU-8 halves of an emoji are joined, anything else undecodable becomes U+FFFD), with one
  problem line per repaired value; a bad value never fails its row, let alone the file.
* **Tapbacks** (``associated_message_type`` 2000-2007 add, 3000-3007 remove; the target guid
  after its ``p:N/`` or ``bp:`` prefix) are folded onto their targets (net add minus remove
  per target, reactor and kind), never emitted as messages; a reaction to a message not in
  the file is counted as orphaned.
* **Threads**: ``chat.guid`` is the thread id; a chat without a display name is named by its
  participants' sorted display names; a message joined to several chats is emitted once,
  under its first chat by chat ROWID; one joined to none is kept under `UNTHREADED_ID`.
* **People**: ``is_from_me`` rows are the owner (``MessageSourceOptions.owner_label``, empty
  handle); other senders are named through ``handle_names`` (`HandleNames`).

Source: seed 001 (``IMessageSource``: the three gates of ``matches``, the per-row epoch
detection, ``_tapback_kind``, ``_strip_target_prefix``, ``_fold_tapbacks``, participant-named
group chats, first-thread emission).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

from unified_kg_rag.adapters.messages.names import HandleNames, cap_problems
from unified_kg_rag.adapters.messages.readonly_sqlite import (
    SQLITE_MAGIC,
    column_names,
    connect_readonly,
    failure_reason,
    is_locked,
    table_names,
)
from unified_kg_rag.adapters.messages.typedstream_body import attributed_body_bytes
from unified_kg_rag.domain.messages.transcripts import (
    TAPBACK_KINDS,
    UNTHREADED_ID,
    UNTHREADED_NAME,
    MessageSourceOptions,
    ParsedArchive,
    SourceMessage,
    Tapback,
    message_order,
    tapback_order,
)
from unified_kg_rag.domain.text.decoding import decode_utf8
from unified_kg_rag.util.errors import InputError

__all__ = [
    "APPLE_EPOCH",
    "UNKNOWN_SENDER",
    "IMessageSource",
    "apple_timestamp",
    "tapback_kind",
    "tapback_target",
]

logger = logging.getLogger(__name__)

APPLE_EPOCH = datetime(2001, 1, 1, tzinfo=UTC)
"""Origin of ``message.date``: 2001-01-01T00:00:00Z (Core Data's reference date)."""

_NANOS_THRESHOLD = 100_000_000_000
"""|date| at or above this is nanoseconds: as seconds it would be past the year 5000."""

_TAPBACK_ADD = 2000
_TAPBACK_REMOVE = 3000
_PLACEHOLDER = "\ufffc"  # OBJECT REPLACEMENT CHARACTER: where an attachment sat
UNKNOWN_SENDER = "Unknown"
"""Sender name of a received message whose handle is missing from the ``handle`` table."""

_UNTHREADED = (UNTHREADED_ID, UNTHREADED_NAME)
_MESSAGE_COLUMNS = (
    "text",
    "attributedBody",
    "date",
    "is_from_me",
    "handle_id",
    "associated_message_type",
    "associated_message_guid",
)
_TEXT_COLUMNS = frozenset({"guid", "text", "associated_message_guid"})
"""Read as bytes (``CAST(... AS BLOB)``) and decoded by `_Texts`: SQLite never checks UTF-8."""


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


class IMessageSource:
    """Reads an iMessage ``chat.db``/``sms.db`` into normalized messages.

    Args:
        busy_timeout_s: how long `parse` waits on a database another process has locked
            before failing.
        probe_timeout_s: the same for `matches` (a cheap probe).
    """

    def __init__(self, *, busy_timeout_s: float = 2.0, probe_timeout_s: float = 0.25) -> None:
        self._busy_timeout_s = busy_timeout_s
        self._probe_timeout_s = probe_timeout_s

    @property
    def name(self) -> str:
        """``imessage``."""
        return "imessage"

    def matches(self, path: Path) -> bool:
        """Return True when ``path`` is an iMessage database; never raises.

        Gates, cheapest first: a regular file, the SQLite header, then ``message`` (with
        ``guid`` and ``date``), ``handle`` and ``chat`` tables. A database locked by another
        process cannot be probed; it matches when its name ends in ``.db`` (so `parse`
        reports the lock instead of the file going unclaimed).
        """
        try:
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode):
                return False
            with open(path, "rb") as handle:
                if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                    return False
            conn = connect_readonly(path, self._probe_timeout_s, probe=True)
            try:
                tables = table_names(conn)
                columns = column_names(conn, "message") if "message" in tables else set()
            finally:
                conn.close()
        except sqlite3.OperationalError as exc:
            return is_locked(exc) and path.suffix.lower() == ".db"
        except (OSError, ValueError, sqlite3.Error):
            return False
        return {"message", "handle", "chat"} <= tables and {"guid", "date"} <= columns

    def parse(self, path: Path, options: MessageSourceOptions) -> ParsedArchive:
        """Read every recoverable message of the database, oldest first.

        Args:
            path: the ``chat.db``/``sms.db`` (its ``-wal``/``-shm`` beside it, if any).
            options: handle → name map and the owner's label.

        Returns:
            The messages (undated first, then by timestamp, then guid), with the counts of
            skipped rows, folded and orphaned tapbacks, and problem lines.

        Raises:
            InputError: the file is missing, not SQLite, corrupt, locked past the busy
                timeout, or has no ``message`` table with a ``guid`` column.
        """
        started = time.perf_counter()
        tables, rows = self._read(path)
        names = HandleNames(options.handle_names)
        texts = _Texts()
        handles = {
            rowid: texts.decode(address, f"handle ROWID {rowid}", "id") or ""
            for rowid, address in tables.handles
        }
        thread_of_chat = _thread_names(tables, handles, names, texts)

        problems = texts.problems
        kept: list[tuple[str, str, str, str, str, bool, datetime | None, str]] = []
        net: dict[tuple[str, str, str], int] = defaultdict(int)
        seen: set[str] = set()
        skipped = 0
        for rowid, raw_guid, text, body, date, from_me, handle_id, assoc_type, raw_assoc in rows:
            where = f"message ROWID {rowid}"
            guid = texts.decode(raw_guid, where, "guid")
            if not guid or guid in seen:
                skipped += 1
                problems.append(f"message ROWID {rowid}: missing or duplicate guid")
                continue
            seen.add(guid)
            is_from_me = bool(from_me)
            address = handles.get(handle_id, "") if isinstance(handle_id, int) else ""
            if is_from_me:
                sender_handle, sender_name = "", options.owner_label
            elif address:
                sender_handle, sender_name = address, names.name(address)
            else:
                sender_handle, sender_name = "", UNKNOWN_SENDER
            reaction = tapback_kind(assoc_type)
            if reaction is not None:
                kind, is_add = reaction
                assoc_guid = texts.decode(raw_assoc, where, "associated_message_guid")
                target = tapback_target(assoc_guid)
                if target is None:
                    problems.append(f"tapback {guid}: unreadable target {assoc_guid!r}")
                    continue
                net[(target, sender_name, kind)] += 1 if is_add else -1
                continue
            message_text = _body(text, body, texts, where)
            if message_text is None:
                skipped += 1
                continue
            try:
                timestamp = apple_timestamp(date)
            except ValueError as exc:
                problems.append(f"message {guid}: {exc}; kept undated")
                timestamp = None
            chat_id = tables.first_chat.get(rowid)
            thread_id, thread_name = thread_of_chat.get(chat_id, _UNTHREADED)
            kept.append(
                (guid, thread_id, thread_name, sender_handle, sender_name, is_from_me,
                 timestamp, message_text)
            )

        present = {row[0] for row in kept}
        folded: dict[str, list[Tapback]] = defaultdict(list)
        orphaned = 0
        for (target, reactor, kind), count in net.items():
            if count <= 0:
                continue
            if target in present:
                folded[target].append(Tapback(kind=kind, sender_name=reactor))
            else:
                orphaned += 1
        messages = [
            SourceMessage(
                guid=guid, thread_id=thread_id, thread_name=thread_name,
                sender_handle=sender_handle, sender_name=sender_name, is_from_me=is_from_me,
                timestamp=timestamp, text=text,
                tapbacks=tuple(sorted(folded.get(guid, ()), key=tapback_order)),
            )
            for (guid, thread_id, thread_name, sender_handle, sender_name, is_from_me,
                 timestamp, text) in kept
        ]
        messages.sort(key=message_order)
        folded_count = sum(len(v) for v in folded.values())
        logger.info(
            "imessage %s: %d message(s), %d skipped, %d tapback(s) folded, %d orphaned "
            "in %.2fs",
            path, len(messages), skipped, folded_count, orphaned,
            time.perf_counter() - started,
        )
        return ParsedArchive(
            source=self.name,
            messages=tuple(messages),
            skipped=skipped,
            tapbacks_folded=folded_count,
            tapbacks_orphaned=orphaned,
            problems=cap_problems(problems),
        )

    def _read(self, path: Path) -> tuple[_Tables, list[tuple[object, ...]]]:
        """Read the rows the parse needs, in one short read transaction."""
        where = str(path)
        try:
            if not os.path.isfile(path):
                raise InputError(where, "not a file")
            with open(path, "rb") as handle:
                if handle.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                    raise InputError(where, "not a SQLite database (no SQLite header)")
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise InputError(where, f"cannot read: {reason}") from exc
        try:
            conn = connect_readonly(path, self._busy_timeout_s)
        except (sqlite3.Error, ValueError) as exc:
            raise InputError(where, failure_reason(exc)) from exc
        try:
            conn.execute("BEGIN")  # one snapshot for every query
            names = table_names(conn)
            if "message" not in names or "guid" not in column_names(conn, "message"):
                raise InputError(where, "not an iMessage database (no message table)")
            tables = _Tables.load(conn, names)
            present = column_names(conn, "message")
            select = ", ".join(_column(c, present) for c in ("guid", *_MESSAGE_COLUMNS))
            rows = conn.execute(f"SELECT ROWID, {select} FROM message ORDER BY ROWID")
            return tables, rows.fetchall()
        except sqlite3.Error as exc:
            raise InputError(where, failure_reason(exc)) from exc
        finally:
            conn.close()


def _column(name: str, present: set[str]) -> str:
    """The select expression of a column: NULL when absent, text columns as bytes."""
    if name not in present:
        return f"NULL AS {name}"
    return f"CAST({name} AS BLOB) AS {name}" if name in _TEXT_COLUMNS else name


class _Texts:
    """Decodes text values read as bytes; one problem line per repaired value."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def decode(self, value: object, where: str, column: str) -> str | None:
        """The value as text (None for NULL); bytes that are not UTF-8 repaired and noted."""
        if value is None:
            return None
        if not isinstance(value, bytes):
            return str(value)
        text, repaired = decode_utf8(value)
        if repaired:
            self.problems.append(f"{where}: invalid UTF-8 in {column!r} repaired (U+FFFD "
                                 "where no character could be read)")
        return text


class _Tables:
    """The small tables of a chat.db: handles, chats, participants, first chat per message.

    Text values (handle ids, chat guids and names) are bytes here, decoded by the parse.
    """

    def __init__(self) -> None:
        self.handles: list[tuple[int, object]] = []
        self.chats: list[tuple[int, object, object, object]] = []  # rowid, guid, name, ident
        self.participants: dict[int, list[int]] = defaultdict(list)
        self.first_chat: dict[object, int] = {}

    @classmethod
    def load(cls, conn: sqlite3.Connection, names: set[str]) -> _Tables:
        tables = cls()
        if "handle" in names and "id" in column_names(conn, "handle"):
            tables.handles = conn.execute(
                "SELECT ROWID, CAST(id AS BLOB) FROM handle").fetchall()
        if "chat" in names and "guid" in column_names(conn, "chat"):
            present = column_names(conn, "chat")
            display = "CAST(display_name AS BLOB)" if "display_name" in present else "NULL"
            ident = "CAST(chat_identifier AS BLOB)" if "chat_identifier" in present else "NULL"
            tables.chats = conn.execute(
                f"SELECT ROWID, CAST(guid AS BLOB), {display}, {ident} FROM chat ORDER BY ROWID"
            ).fetchall()
        if "chat_handle_join" in names:
            for chat_id, handle_id in conn.execute(
                "SELECT chat_id, handle_id FROM chat_handle_join"
            ):
                tables.participants[chat_id].append(handle_id)
        if "chat_message_join" in names and tables.chats:
            tables.first_chat = dict(
                conn.execute(
                    "SELECT j.message_id, MIN(j.chat_id) FROM chat_message_join AS j "
                    "JOIN chat AS c ON c.ROWID = j.chat_id GROUP BY j.message_id"
                ).fetchall()
            )
        return tables


def _thread_names(
    tables: _Tables, handles: dict[int, str], names: HandleNames, texts: _Texts
) -> dict[int | None, tuple[str, str]]:
    """Chat ROWID → (thread id, thread name); unnamed chats named by their participants."""
    out: dict[int | None, tuple[str, str]] = {}
    for rowid, raw_guid, raw_display, raw_identifier in tables.chats:
        where = f"chat ROWID {rowid}"
        guid = texts.decode(raw_guid, where, "guid") or ""
        display = texts.decode(raw_display, where, "display_name") or ""
        identifier = texts.decode(raw_identifier, where, "chat_identifier") or ""
        people = {
            names.name(handles[h]) for h in tables.participants.get(rowid, ()) if handles.get(h)
        }
        name = (
            display.strip()
            or ", ".join(sorted(people, key=lambda n: (n.casefold(), n)))
            or identifier.strip()
            or guid
        )
        out[rowid] = (guid, name)
    return out


def _body(text: object, blob: object, texts: _Texts, where: str) -> str | None:
    """The message text: ``text`` when it holds any, else the decoded ``attributedBody``."""
    decoded = texts.decode(text, where, "text")
    if decoded is not None:
        cleaned = decoded.replace(_PLACEHOLDER, "")
        if cleaned.strip():
            return cleaned
    if isinstance(blob, bytes) and blob:
        decoded = texts.decode(attributed_body_bytes(blob), where, "attributedBody")
        if decoded is not None:
            cleaned = decoded.replace(_PLACEHOLDER, "")
            if cleaned.strip():
                return cleaned
    return None


