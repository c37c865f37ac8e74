"""The ``imessage`` message source: a macOS ``chat.db`` or an iOS ``sms.db``, read-only.

What it reads, and how:

* **Opened read-only, never written** (`connect_readonly`: a ``mode=ro`` URI, ``immutable=1``
  only for a read-only folder). Real ``chat.db`` files carry triggers that call functions
  only Messages defines, so even a copy cannot be written by plain SQLite; a read-only open
  needs none of them. A WAL-mode file is read with its ``-wal``/``-shm`` sidecars (copy them
  along, or recent messages are missing); SQLite's WAL reader creates them (empty) beside a
  WAL file that has none; the database file itself is never touched.
* **Columns introspected** (``PRAGMA table_info``): schemas differ by OS version (iOS 6 and 9
  have no ``associated_message_*``; ``chat.display_name`` appeared in iOS 7;
  ``date_edited``/``date_retracted`` in macOS 13/iOS 16); a missing column reads as NULL and
  a missing join table as "no rows".
* **Dates** count from 2001-01-01 UTC in seconds (before macOS 10.13/iOS 11) or nanoseconds
  (after); the era is decided per value by magnitude, so a decade-old database holding both
  decodes right. 0/NULL is "undated" (``timestamp=None``), never the epoch.
* **Bodies** from ``text``, else from ``attributedBody``; an attachment placeholder (U+FFFC)
  between two words reads as a space; edits are marked with their history, unsent messages
  skipped (`imessage_body`). Every row not emitted is counted in ``skipped`` under its
  reason (``skipped_reasons``): `NO_TEXT`, `ATTACHMENT_ONLY`, `UNSENT`, `BAD_GUID`,
  `ORPHANED_REACTION`, `UNREADABLE_REACTION`.
* **Text that is not UTF-8**: SQLite never checks it, so a ``TEXT`` value (a message's text,
  a handle, a chat's name) or an ``attributedBody`` string may hold undecodable bytes. Text
  columns are read as bytes and decoded leniently (`domain.text.decoding.decode_utf8`: the
  CESU-8 halves of an emoji are joined, anything else undecodable becomes U+FFFD), with one
  problem line per repaired value; a bad value never fails its row, let alone the file.
* **Tapbacks** (``associated_message_type`` 2000-2007 add, 3000-3007 remove; the target guid
  after its ``p:N/`` or ``bp:`` prefix) are folded onto their targets (net add minus remove
  per target, reactor and kind), never emitted as messages; a reaction to a message not in
  the file is counted as orphaned (and skipped, `ORPHANED_REACTION`).
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
from collections import Counter, defaultdict
from pathlib import Path
from typing import NamedTuple

from unified_kg_rag.adapters.messages.imessage_body import (
    ATTACHMENT_ONLY,
    NO_TEXT,
    UNSENT,
    BodyColumns,
    RowTexts,
    row_body,
)
from unified_kg_rag.adapters.messages.imessage_codes import (
    APPLE_EPOCH,
    apple_timestamp,
    tapback_kind,
    tapback_target,
)
from unified_kg_rag.adapters.messages.names import HandleNames, cap_problems
from unified_kg_rag.adapters.messages.readonly_sqlite import (
    SQLITE_MAGIC,
    column_names,
    connect_readonly,
    failure_reason,
    is_locked,
    table_names,
)
from unified_kg_rag.domain.messages.transcripts import (
    UNTHREADED_ID,
    UNTHREADED_NAME,
    MessageSourceOptions,
    ParsedArchive,
    SourceMessage,
    Tapback,
    message_order,
    tapback_order,
)
from unified_kg_rag.util.errors import InputError

__all__ = [
    "APPLE_EPOCH",
    "ATTACHMENT_ONLY",
    "BAD_GUID",
    "NO_TEXT",
    "ORPHANED_REACTION",
    "UNKNOWN_SENDER",
    "UNREADABLE_REACTION",
    "UNSENT",
    "IMessageSource",
    "apple_timestamp",
    "tapback_kind",
    "tapback_target",
]

logger = logging.getLogger(__name__)

UNKNOWN_SENDER = "Unknown"
"""Sender name of a received message whose handle is missing from the ``handle`` table."""

BAD_GUID = "missing or duplicate guid"
"""Skip reason: a row without a guid, or with the guid of an earlier row."""

ORPHANED_REACTION = "reaction to a message not in the archive"
"""Skip reason: a reaction (net of its removals) whose target is not in the file."""

UNREADABLE_REACTION = "reaction with an unreadable target"
"""Skip reason: a reaction whose ``associated_message_guid`` names no message."""

_UNTHREADED = (UNTHREADED_ID, UNTHREADED_NAME)


class _Row(NamedTuple):
    """The columns of ``message`` the parse reads (a column the schema lacks reads as None)."""

    rowid: int
    guid: object
    text: object
    attributedBody: object  # noqa: N815 - the column's name
    date: object
    is_from_me: object
    handle_id: object
    associated_message_type: object
    associated_message_guid: object
    cache_has_attachments: object
    date_edited: object
    date_retracted: object
    message_summary_info: object

    def body(self) -> BodyColumns:
        return BodyColumns(
            text=self.text, attributed_body=self.attributedBody,
            has_attachments=self.cache_has_attachments, date_edited=self.date_edited,
            date_retracted=self.date_retracted, summary_info=self.message_summary_info,
        )


_TEXT_COLUMNS = frozenset({"guid", "text", "associated_message_guid"})
"""Read as bytes (``CAST(... AS BLOB)``) and decoded by `RowTexts`: SQLite never checks UTF-8."""


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
        collected = _Collector(tables, options)
        for row in rows:
            collected.add(row)
        archive = collected.archive(self.name)
        logger.info(
            "imessage %s: %d message(s), %d skipped %s, %d tapback(s) folded, %d orphaned "
            "in %.2fs",
            path, len(archive.messages), archive.skipped, archive.skipped_reasons,
            archive.tapbacks_folded, archive.tapbacks_orphaned, time.perf_counter() - started,
        )
        return archive

    def _read(self, path: Path) -> tuple[_Tables, list[_Row]]:
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
            select = ", ".join(_column(c, present) for c in _Row._fields[1:])
            rows = conn.execute(f"SELECT ROWID, {select} FROM message ORDER BY ROWID")
            return tables, [_Row._make(row) for row in rows]
        except sqlite3.Error as exc:
            raise InputError(where, failure_reason(exc)) from exc
        finally:
            conn.close()


class _Collector:
    """Turns message rows into messages: reactions netted, skipped rows counted by reason."""

    def __init__(self, tables: _Tables, options: MessageSourceOptions) -> None:
        self._tables = tables
        self._names = HandleNames(options.handle_names)
        self._owner = options.owner_label
        self._texts = RowTexts()
        self._handles = {
            rowid: self._texts.decode(address, f"handle ROWID {rowid}", "id") or ""
            for rowid, address in tables.handles
        }
        self._threads = _thread_names(tables, self._handles, self._names, self._texts)
        self._kept: list[SourceMessage] = []
        self._net: dict[tuple[str, str, str], int] = defaultdict(int)
        self._seen: set[str] = set()
        self._skipped: Counter[str] = Counter()

    def add(self, row: _Row) -> None:
        """Read one row: a message, a reaction (netted), or a skipped row."""
        texts, where = self._texts, f"message ROWID {row.rowid}"
        guid = texts.decode(row.guid, where, "guid")
        if not guid or guid in self._seen:
            self._skipped[BAD_GUID] += 1
            texts.problems.append(f"{where}: missing or duplicate guid")
            return
        self._seen.add(guid)
        sender_handle, sender_name = _sender(row, self._handles, self._names, self._owner)
        reaction = tapback_kind(row.associated_message_type)
        if reaction is not None:
            kind, is_add = reaction
            assoc = texts.decode(row.associated_message_guid, where, "associated_message_guid")
            target = tapback_target(assoc)
            if target is None:
                self._skipped[UNREADABLE_REACTION] += 1
                texts.problems.append(f"tapback {guid}: unreadable target {assoc!r}")
            else:
                self._net[(target, sender_name, kind)] += 1 if is_add else -1
            return
        body = row_body(row.body(), texts, where)
        if isinstance(body, str):
            self._skipped[body] += 1
            return
        try:
            timestamp = apple_timestamp(row.date)
        except ValueError as exc:
            texts.problems.append(f"message {guid}: {exc}; kept undated")
            timestamp = None
        thread_id, thread_name = self._threads.get(
            self._tables.first_chat.get(row.rowid), _UNTHREADED)
        self._kept.append(SourceMessage(
            guid=guid, thread_id=thread_id, thread_name=thread_name,
            sender_handle=sender_handle, sender_name=sender_name,
            is_from_me=bool(row.is_from_me), timestamp=timestamp, text=body.text,
            edited=body.edited, edited_at=body.edited_at, edits=body.edits,
        ))

    def archive(self, source: str) -> ParsedArchive:
        """The messages read, oldest first, with reactions folded onto them."""
        folded, orphaned = _fold(self._net, {m.guid for m in self._kept})
        self._skipped[ORPHANED_REACTION] += orphaned
        messages = sorted(
            (m.model_copy(update={"tapbacks": tuple(sorted(folded[m.guid], key=tapback_order))})
             if m.guid in folded else m for m in self._kept),
            key=message_order,
        )
        reasons = {reason: n for reason, n in sorted(self._skipped.items()) if n}
        return ParsedArchive(
            source=source,
            messages=tuple(messages),
            skipped=sum(reasons.values()),
            skipped_reasons=reasons,
            tapbacks_folded=sum(len(v) for v in folded.values()),
            tapbacks_orphaned=orphaned,
            problems=cap_problems(self._texts.problems),
        )


def _column(name: str, present: set[str]) -> str:
    """The select expression of a column: NULL when absent, text columns as bytes."""
    if name not in present:
        return f"NULL AS {name}"
    return f"CAST({name} AS BLOB) AS {name}" if name in _TEXT_COLUMNS else name


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
    tables: _Tables, handles: dict[int, str], names: HandleNames, texts: RowTexts
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


def _sender(
    row: _Row, handles: dict[int, str], names: HandleNames, owner_label: str
) -> tuple[str, str]:
    """``(sender_handle, sender_name)`` of a row: the owner, a named handle, or unknown."""
    if row.is_from_me:
        return "", owner_label
    address = handles.get(row.handle_id, "") if isinstance(row.handle_id, int) else ""
    return (address, names.name(address)) if address else ("", UNKNOWN_SENDER)


def _fold(
    net: dict[tuple[str, str, str], int], present: set[str]
) -> tuple[dict[str, list[Tapback]], int]:
    """Reactions left after removals, by target guid; and how many target no kept message."""
    folded: dict[str, list[Tapback]] = defaultdict(list)
    orphaned = 0
    for (target, reactor, kind), count in net.items():
        if count <= 0:
            continue
        if target in present:
            folded[target].append(Tapback(kind=kind, sender_name=reactor))
        else:
            orphaned += 1
    return folded, orphaned
