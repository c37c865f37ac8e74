"""A synthetic iMessage ``chat.db``/``sms.db`` builder for tests, on Apple's real schemas.

`ChatDb` creates a database from one of the schema dumps in
``/work/shared/data/imessage/schemas/`` (iOS 6.1.6, 9.2.1, 10.2, 11.2 and a 2025 macOS
``chat.db``), or from a hand-written ``minimal`` schema holding only the columns the parser
reads (so the core tests run where the shared data is absent). Rows are inserted in one
transaction; `ChatDb.close` commits and, for the macOS schema, creates Apple's triggers last:
they call functions only Messages defines (``delete_attachment_path`` ...), which reproduces a
real file that plain ``sqlite3`` cannot write to (a DELETE fails with "no such function").

`summary_info` writes the binary plist of ``message.message_summary_info`` with which recent
macOS/iOS versions record edits and unsends (the structure the imessage source documents).

`typedstream_body` writes a real ``NSAttributedString`` typedstream (``streamtyped``
little-endian header, ``NSAttributedString``/``NSObject`` class chain, an ``NSString`` or
``NSMutableString`` with the text, one attribute run with the
``__kIMMessagePartAttributeName`` dictionary) the way Messages stores ``attributedBody``.
Integers follow the typedstream encoding: one byte when it is no tag, else ``0x81`` + 2 bytes
or ``0x82`` + 4 bytes, so a body over 127 bytes gets a length prefix wider than one byte.

Usage::

    db = ChatDb(tmp_path / "chat.db", schema="ios11")
    bob = db.handle("+15551234567")
    chat = db.chat("iMessage;-;+15551234567", handles=[bob])
    db.message("G1", text="hi", chats=[chat], handle=bob, date=apple_nanos(when))
    db.close()
"""

from __future__ import annotations

import os
import plistlib
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "APPLE_EPOCH",
    "SCHEMAS",
    "SCHEMA_DIR",
    "ChatDb",
    "RawText",
    "apple_nanos",
    "apple_seconds",
    "schema_available",
    "schema_statements",
    "summary_info",
    "typedstream_body",
]

SCHEMA_DIR = Path(
    os.environ.get("UKR_IMESSAGE_SCHEMA_DIR", "/work/shared/data/imessage/schemas")
)
"""Where the real schema dumps live (override with ``UKR_IMESSAGE_SCHEMA_DIR``)."""

SCHEMAS: dict[str, str | None] = {
    "ios6": "sms_db_iOS6.1.6.sql",
    "ios9": "sms_db_iOS9.2.1.sql",
    "ios10": "sms_db_iOS10.2.sql",
    "ios11": "sms_db_iOS11.2.sql",
    "macos": "chat_db_macos_2025_imessage_exporter_test_db.sql",
    "minimal": None,
}
"""Schema name -> dump file name in `SCHEMA_DIR`; ``minimal`` is hand-written (always there)."""

APPLE_EPOCH = datetime(2001, 1, 1, tzinfo=UTC)

_MINIMAL_SCHEMA = """
CREATE TABLE handle (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL,
    service TEXT NOT NULL DEFAULT 'iMessage');
CREATE TABLE chat (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL,
    chat_identifier TEXT, display_name TEXT);
CREATE TABLE chat_handle_join (chat_id INTEGER, handle_id INTEGER, UNIQUE(chat_id, handle_id));
CREATE TABLE message (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL,
    text TEXT, attributedBody BLOB, handle_id INTEGER DEFAULT 0, date INTEGER,
    is_from_me INTEGER DEFAULT 0, associated_message_guid TEXT,
    associated_message_type INTEGER DEFAULT 0, cache_has_attachments INTEGER DEFAULT 0,
    message_summary_info BLOB, date_retracted INTEGER DEFAULT 0,
    date_edited INTEGER DEFAULT 0);
CREATE TABLE chat_message_join (chat_id INTEGER, message_id INTEGER,
    PRIMARY KEY (chat_id, message_id));
"""


class RawText(bytes):
    """Bytes to store as a ``TEXT`` value exactly as given (``CAST(? AS TEXT)``).

    SQLite does not check that text is UTF-8, so a real ``chat.db`` can hold text values
    Python's ``sqlite3`` refuses to decode; pass one as any text column of `ChatDb`
    (``text=RawText(b"caf\\xe9")``, a handle address, a chat's display name).
    """


def schema_available(schema: str) -> bool:
    """Return True when ``schema`` can be built here (``minimal`` always can).

    Raises:
        KeyError: ``schema`` is not a key of `SCHEMAS`.
    """
    file_name = SCHEMAS[schema]
    return file_name is None or (SCHEMA_DIR / file_name).is_file()


def apple_seconds(dt: datetime) -> int:
    """Return ``dt`` (timezone-aware) as whole seconds since 2001-01-01 UTC (the old era)."""
    delta = dt - APPLE_EPOCH
    return delta.days * 86_400 + delta.seconds


def apple_nanos(dt: datetime) -> int:
    """Return ``dt`` (timezone-aware) as nanoseconds since 2001-01-01 UTC (macOS 10.13+ era)."""
    delta = dt - APPLE_EPOCH
    return ((delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds) * 1000


def schema_statements(schema: str) -> tuple[list[str], list[str]]:
    """Return ``(statements, triggers)`` of a schema: tables/indexes, then CREATE TRIGGERs.

    ``sqlite_*`` statements (``sqlite_sequence``, ``sqlite_stat1``: SQLite makes them itself
    and rejects them) are dropped.

    Raises:
        KeyError: unknown schema.
        FileNotFoundError: the dump is not in `SCHEMA_DIR`.
    """
    file_name = SCHEMAS[schema]
    text = _MINIMAL_SCHEMA if file_name is None else (SCHEMA_DIR / file_name).read_text("utf-8")
    statements: list[str] = []
    triggers: list[str] = []
    pending = ""
    for piece in text.split(";"):
        pending += piece + ";"
        if not sqlite3.complete_statement(pending):
            continue
        statement = "\n".join(
            line for line in pending.splitlines() if not line.strip().startswith("--")
        ).strip()
        pending = ""
        words = statement.split()
        if len(words) < 3 or statement == ";":
            continue
        head = " ".join(words[:3]).upper()
        name = words[2].split("(")[0].lower()
        if head.startswith("CREATE TABLE") and name.startswith("sqlite_"):
            continue
        (triggers if head.startswith("CREATE TRIGGER") else statements).append(statement)
    return statements, triggers


class ChatDb:
    """A chat.db under construction: handles, chats and messages, inserted in one transaction.

    Columns a schema lacks are not written; asking for a non-default value in such a column
    (a tapback on iOS 6) raises ValueError, so a scenario never silently degrades.

    Args:
        path: the database file to create (must not exist).
        schema: a key of `SCHEMAS`.

    Raises:
        FileExistsError: ``path`` exists.
        FileNotFoundError: the schema dump is missing (check `schema_available` first).
    """

    def __init__(self, path: Path, schema: str = "macos") -> None:
        if path.exists():
            raise FileExistsError(path)
        self.path = path
        self.schema = schema
        statements, self._triggers = schema_statements(schema)
        self._conn = sqlite3.connect(path, isolation_level=None)
        self._conn.execute("BEGIN")
        for statement in statements:
            self._conn.execute(statement)
        self._columns: dict[str, set[str]] = {}
        for table in ("handle", "chat", "message", "chat_message_join", "chat_handle_join"):
            rows = self._conn.execute(f"PRAGMA table_info({table})").fetchall()
            self._columns[table] = {row[1] for row in rows}
        self._closed = False

    def has_column(self, table: str, column: str) -> bool:
        """Return True when ``table`` (handle, chat, message, *_join) has ``column``."""
        return column in self._columns.get(table, set())

    def has_table(self, table: str) -> bool:
        """Return True when the schema has ``table`` (of the five the builder writes)."""
        return bool(self._columns.get(table))

    def handle(self, address: str | RawText, *, service: str = "iMessage") -> int:
        """Insert a handle (phone number or e-mail); return its ROWID."""
        return self._insert(
            "handle",
            {"id": address, "service": service, "country": "us", "uncanonicalized_id": address},
        )

    def chat(
        self, guid: str, *, display_name: str | RawText | None = None,
        handles: Sequence[int] = (),
    ) -> int:
        """Insert a chat joined to ``handles``; return its ROWID.

        Raises:
            ValueError: ``display_name`` is given but the schema has no such column (iOS 6).
        """
        group = len(handles) > 1
        identifier = guid.rsplit(";", 1)[-1]
        values: dict[str, object] = {
            "guid": guid,
            "style": 43 if group else 45,
            "state": 3,
            "chat_identifier": identifier,
            "service_name": "iMessage",
            "room_name": identifier if group else None,
            "account_login": "E:owner@example.com",
            "is_archived": 0,
        }
        if display_name is not None:
            self._require("chat", "display_name")
            values["display_name"] = display_name
        rowid = self._insert("chat", values)
        for handle_id in handles:
            self._insert("chat_handle_join", {"chat_id": rowid, "handle_id": handle_id})
        return rowid

    def message(
        self,
        guid: str,
        *,
        text: str | RawText | None,
        chats: Sequence[int] = (),
        handle: int = 0,
        is_from_me: bool = False,
        date: int | None = None,
        body: bytes | None = None,
        associated_type: int = 0,
        associated_guid: str | None = None,
        has_attachments: bool = False,
        date_edited: int = 0,
        date_retracted: int = 0,
        summary: bytes | None = None,
    ) -> int:
        """Insert a message joined to ``chats``; return its ROWID.

        Args:
            guid: ``message.guid``.
            text: the ``text`` column (None: the body is only in ``attributedBody``).
            chats: chat ROWIDs to join it to (several: a message in several chats).
            handle: the sender's handle ROWID (0 for the owner or an unknown sender).
            is_from_me: the owner sent it.
            date: raw ``message.date`` (`apple_seconds` or `apple_nanos`); None stays NULL.
            body: the ``attributedBody`` blob (`typedstream_body`).
            associated_type: ``associated_message_type`` (2000-2007 tapback, 3000-3007 removal).
            associated_guid: ``associated_message_guid`` (``p:0/GUID`` or ``bp:GUID``).
            has_attachments: ``cache_has_attachments`` (the row has attachments).
            date_edited: raw ``date_edited`` of an edited (or unsent) message; 0 for none.
            date_retracted: raw ``date_retracted`` of an unsent message; 0 for none.
            summary: ``message_summary_info`` (`summary_info`).

        Raises:
            ValueError: a tapback, association, edit or unsend is asked of a schema without
                those columns.
        """
        values: dict[str, object] = {
            "guid": guid,
            "text": text,
            "handle_id": handle,
            "date": date,
            "date_read": 0,
            "date_delivered": 0,
            "is_from_me": int(is_from_me),
            "is_finished": 1,
            "is_sent": int(is_from_me),
            "is_delivered": 1,
            "is_read": int(not is_from_me),
            "service": "iMessage",
            "account": "e:owner@example.com",
        }
        if body is not None:
            self._require("message", "attributedBody")
            values["attributedBody"] = body
        if associated_type:
            self._require("message", "associated_message_type")
            values["associated_message_type"] = associated_type
        if associated_guid is not None:
            self._require("message", "associated_message_guid")
            values["associated_message_guid"] = associated_guid
        for column, value, default in (
            ("cache_has_attachments", int(has_attachments), 0),
            ("date_edited", date_edited, 0),
            ("date_retracted", date_retracted, 0),
            ("message_summary_info", summary, None),
        ):
            if value != default:
                self._require("message", column)
                values[column] = value
        rowid = self._insert("message", values)
        for chat_id in chats:
            self._insert(
                "chat_message_join",
                {"chat_id": chat_id, "message_id": rowid, "message_date": date or 0},
            )
        return rowid

    def close(self, *, triggers: bool = True) -> None:
        """Commit and close; with ``triggers``, create the schema's triggers last (macOS).

        Idempotent.
        """
        if self._closed:
            return
        self._conn.execute("COMMIT")
        if triggers:
            for statement in self._triggers:
                self._conn.execute(statement)
        self._conn.close()
        self._closed = True

    def __enter__(self) -> ChatDb:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------- internals

    def _require(self, table: str, column: str) -> None:
        if not self.has_column(table, column):
            raise ValueError(f"schema {self.schema!r}: {table} has no column {column!r}")

    def _insert(self, table: str, values: dict[str, object]) -> int:
        columns = self._columns[table]
        if not columns:
            raise ValueError(f"schema {self.schema!r} has no table {table!r}")
        kept = {k: v for k, v in values.items() if k in columns}
        names = ", ".join(kept)
        marks = ", ".join("CAST(? AS TEXT)" if isinstance(v, RawText) else "?"
                          for v in kept.values())
        cursor = self._conn.execute(
            f"INSERT INTO {table} ({names}) VALUES ({marks})", tuple(kept.values())
        )
        return int(cursor.lastrowid or 0)


# ----------------------------------------------------------------------------- typedstream

_TAG_INTEGER_2 = 0x81
_TAG_INTEGER_4 = 0x82
_TAG_NEW = 0x84
_TAG_NIL = 0x85
_TAG_END_OF_OBJECT = 0x86
_FIRST_REFERENCE = -110  # the lowest number a back-reference head can hold (0x92)


class _TypedStreamWriter:
    """Writes a little-endian (``streamtyped``) typedstream, with shared-string and object
    reference tables numbered the way NSArchiver numbers them."""

    def __init__(self) -> None:
        self.out = bytearray([4, 11]) + b"streamtyped"
        self._strings: list[bytes] = []
        self._objects: dict[bytes, int] = {}  # class name -> object number
        self._next_object = 0
        self.integer(1000)  # system version: Mac OS X

    def integer(self, value: int) -> None:
        if -128 <= value <= 127 and not -128 <= value <= -111:
            self.out += value.to_bytes(1, "little", signed=True)
        elif -32768 <= value <= 32767:
            self.out += bytes([_TAG_INTEGER_2]) + value.to_bytes(2, "little", signed=True)
        else:
            self.out += bytes([_TAG_INTEGER_4]) + value.to_bytes(4, "little", signed=True)

    def shared_string(self, data: bytes) -> None:
        if data in self._strings:
            self.integer(_FIRST_REFERENCE + self._strings.index(data))
            return
        self.out.append(_TAG_NEW)
        self.integer(len(data))
        self.out += data
        self._strings.append(data)

    def begin_object(self, chain: Sequence[tuple[bytes, int]]) -> None:
        """Start an object whose class chain is ``chain`` (most derived first, root last)."""
        self.out.append(_TAG_NEW)
        self._next_object += 1  # the object's own number comes before its classes
        for name, version in chain:
            if name in self._objects:
                self.integer(_FIRST_REFERENCE + self._objects[name])
                return
            self.out.append(_TAG_NEW)
            self.shared_string(name)
            self.integer(version)
            self._objects[name] = self._next_object
            self._next_object += 1
        self.out.append(_TAG_NIL)

    def end_object(self) -> None:
        self.out.append(_TAG_END_OF_OBJECT)

    def nsstring(self, text: str | bytes, *, mutable: bool = False) -> None:
        chain = [(b"NSString", 1), (b"NSObject", 0)]
        if mutable:
            chain.insert(0, (b"NSMutableString", 1))
        self.shared_string(b"@")
        self.begin_object(chain)
        self.shared_string(b"+")
        data = text if isinstance(text, bytes) else text.encode("utf-8")
        self.integer(len(data))
        self.out += data
        self.end_object()

    def nsnumber(self, value: int) -> None:
        self.shared_string(b"@")
        self.begin_object([(b"NSNumber", 0), (b"NSValue", 0), (b"NSObject", 0)])
        self.shared_string(b"*")
        self.out.append(_TAG_NEW)  # a literal C string: the value's type encoding
        self.shared_string(b"i")
        self._next_object += 1  # C strings take an object number too
        self.shared_string(b"i")
        self.integer(value)
        self.end_object()


def typedstream_body(
    text: str | bytes, *, mutable: bool = False, attributes: bool = True
) -> bytes:
    """Return ``text`` archived as Messages archives ``attributedBody``.

    Args:
        text: the message body (any Unicode; stored as UTF-8), or the string's bytes exactly
            as stored (to write bytes that are not UTF-8).
        mutable: archive the string as ``NSMutableString`` (some macOS versions do).
        attributes: append the attribute run (``iI`` range + ``NSDictionary`` holding
            ``__kIMMessagePartAttributeName`` -> ``NSNumber(0)``), as real blobs carry.

    Returns:
        The typedstream bytes (``04 0b "streamtyped" 81 e8 03 ...``).
    """
    w = _TypedStreamWriter()
    w.shared_string(b"@")
    w.begin_object([(b"NSAttributedString", 0), (b"NSObject", 0)])
    w.nsstring(text, mutable=mutable)
    if attributes:
        w.shared_string(b"iI")
        w.integer(1)
        shown = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        w.integer(len(shown.encode("utf-16-le")) // 2)  # run length in UTF-16 units
        w.shared_string(b"@")
        w.begin_object([(b"NSDictionary", 0), (b"NSObject", 0)])
        w.shared_string(b"i")
        w.integer(1)
        w.nsstring("__kIMMessagePartAttributeName")
        w.nsnumber(0)
        w.end_object()
    w.end_object()
    return bytes(w.out)


# ----------------------------------------------------------------------------- edits and unsends


def summary_info(
    parts: int = 1,
    *,
    edits: Mapping[int, Sequence[tuple[int, str]]] | None = None,
    unsent: Sequence[int] = (),
) -> bytes:
    """Return a ``message_summary_info`` binary plist recording edits and unsends.

    The root dictionary holds ``otr`` (part index as text → ``{"le": length, "lo": start}``),
    ``ec`` (part index as text → every version of that part, oldest first, the last one being
    the current text: ``{"d": seconds since 2001-01-01 UTC, "t": attributedBody typedstream}``)
    and ``rp`` (indexes of unsent parts), as Messages writes it.

    Args:
        parts: how many body parts the message has.
        edits: part index → its versions ``(apple_seconds, text)``, oldest first.
        unsent: indexes of the parts that were unsent.
    """
    root: dict[str, object] = {
        "otr": {str(i): {"le": 1, "lo": i} for i in range(parts)},
    }
    if edits:
        root["ec"] = {
            str(part): [{"d": when, "t": typedstream_body(text)} for when, text in versions]
            for part, versions in edits.items()
        }
    if unsent:
        root["rp"] = list(unsent)
    return plistlib.dumps(root, fmt=plistlib.FMT_BINARY)
