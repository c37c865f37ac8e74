"""The ``jsonl`` message source: a documented generic format any exporter can write.

WhatsApp, Slack, Signal (or any other) exports are fed without code by converting them to
this format: a UTF-8 text file named ``*.jsonl`` or ``*.ndjson`` holding one JSON object per
line (blank lines are ignored)::

    {"thread_id": "family", "thread_name": "Family", "sender": "+15551234567",
     "timestamp": "2024-03-01T18:04:00Z", "text": "Dinner at 7?",
     "reactions": [{"kind": "liked", "sender": "Alice"}]}
    {"thread_id": "family", "is_from_me": true, "timestamp": 1709316300, "text": "Yes!"}

=================  ========  ===============================================================
field              required  meaning
=================  ========  ===============================================================
``thread_id``      yes       stable thread identity (string or integer)
``text``           yes       the body; must hold non-whitespace text
``guid``           no        stable message identity; when absent: the SHA-256 of
                             (thread_id, sender, sender_handle, is_from_me, timestamp, text),
                             so re-exports of the same message merge (a repeat of an
                             identical line in the file is numbered, so both are kept)
``thread_name``    no        display name of the thread; given on any line, it names every
                             message of the thread (the last one given wins); default:
                             ``thread_id``
``sender``         (1)       display name or raw handle; mapped through ``handle_names``
``sender_handle``  (1)       raw handle (phone, e-mail, user id); mapped through
                             ``handle_names``, kept as the message's ``sender_handle``
``is_from_me``     no        true: the archive owner sent it (named ``owner_label``); default
                             false
``timestamp``      no        ISO 8601 string or a number of seconds since 1970-01-01 UTC;
                             a string without an offset is a local time in
                             ``MessageSourceOptions.timezone`` (``messages.timezone``, UTC by
                             default; a time a clock change skips or repeats reads with the
                             offset before the change); ``Z`` allowed; absent/null, or Go's
                             zero time ``0001-01-01T00:00:00Z``: undated
``reactions``      no        list of ``{"kind": K, "sender": S}`` (``"is_from_me": true``
                             instead of ``sender`` for the owner); K is one of ``loved liked
                             disliked laughed emphasized questioned emoji sticker``
=================  ========  ===============================================================

(1) a message not from the owner needs ``sender`` or ``sender_handle``. Other fields are
ignored. A line that is not a JSON object, lacks a required field or has a bad value is
skipped, counted in ``skipped`` (reason `BAD_LINE`) and described (with its line number) in
``problems``; it never fails the file. A bad reaction is dropped with a problem line (its
message is kept). A repeated ``guid`` keeps the first line. A file that is not UTF-8 fails
(`InputError`).

Invalid Unicode inside a valid file: a JSON escape of a UTF-16 surrogate (U+D800..U+DFFF)
that is not half of a pair (an exporter that cut an emoji in two) cannot be stored, tokenized
or printed. Every
string of the line is repaired (a pair of escapes becomes its character, a lone half U+FFFD)
and the line is kept, with one problem line naming the repaired fields; a ``text`` left with
nothing but U+FFFD is a bad line.

Lines are split at line feeds only: U+2028 and friends inside a JSON string are text.
`JsonLinesSource.matches` accepts a ``.jsonl``/``.ndjson`` file whose first non-blank line is
a JSON object holding ``thread_id``, so ordinary JSON Lines documents still go
to the document parser.

Source: the issue's message-source section (format designed here); seed 001's
``MessageSource`` contract.
"""

from __future__ import annotations

import json
import logging
import math
import os
import stat
from collections.abc import Mapping
from datetime import UTC, datetime, tzinfo
from pathlib import Path

from pydantic import ValidationError

from unified_kg_rag.adapters.messages.names import HandleNames, cap_problems
from unified_kg_rag.domain.messages.transcripts import (
    TAPBACK_KINDS,
    MessageSourceOptions,
    ParsedArchive,
    SourceMessage,
    Tapback,
    message_order,
)
from unified_kg_rag.domain.text.analysis import repair_unicode
from unified_kg_rag.domain.text.decoding import has_surrogates
from unified_kg_rag.util.errors import InputError
from unified_kg_rag.util.hashing import sha256_text

__all__ = ["BAD_LINE", "SUFFIXES", "JsonLinesSource"]

logger = logging.getLogger(__name__)

SUFFIXES = (".jsonl", ".ndjson")
"""File name endings `JsonLinesSource.matches` considers (case-insensitive)."""

BAD_LINE = "bad line"
"""Skip reason of every line that is not a valid message record."""

_PROBE_BYTES = 1 << 20  # matches() reads at most this much looking for the first line


class _BadLineError(ValueError):
    """One line cannot be a message; the text is the problem description."""


class JsonLinesSource:
    """Reads the generic JSON Lines message format described in this module."""

    @property
    def name(self) -> str:
        """``jsonl``."""
        return "jsonl"

    def matches(self, path: Path) -> bool:
        """Return True for a ``.jsonl``/``.ndjson`` file whose first record is a message.

        The first non-blank line must be a JSON object holding ``thread_id`` (a first message
        without text is still a message record: it is skipped as a bad line by `parse`).
        Reads at most 1 MiB; never raises.
        """
        try:
            if Path(path).suffix.lower() not in SUFFIXES:
                return False
            if not stat.S_ISREG(os.stat(path).st_mode):
                return False
            with open(path, "rb") as handle:
                head = handle.read(_PROBE_BYTES)
            for raw in head.split(b"\n"):
                line = raw.decode("utf-8-sig").strip()
                if line:
                    record = json.loads(line)
                    return isinstance(record, dict) and "thread_id" in record
        except (OSError, ValueError, RecursionError):
            return False
        return False

    def parse(self, path: Path, options: MessageSourceOptions) -> ParsedArchive:
        """Read every valid line of the file, oldest first.

        Args:
            path: the ``.jsonl``/``.ndjson`` file.
            options: handle → name map, the owner's label, and the time zone of timestamps
                without an offset.

        Returns:
            The messages (undated first, then by timestamp, then guid); bad lines counted in
            ``skipped`` (reason `BAD_LINE`) and, like repaired lines, described in
            ``problems`` (at most 20 listed).

        Raises:
            InputError: the file cannot be read or is not UTF-8 text.
        """
        where = str(path)
        try:
            data = Path(path).read_bytes()
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            raise InputError(where, f"cannot read: {reason}") from exc
        try:
            content = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(where, f"not UTF-8 text (bad byte at offset {exc.start})") from exc
        names = HandleNames(options.handle_names)
        messages: dict[str, SourceMessage] = {}
        problems: list[str] = []
        skipped = 0
        folded = 0
        seen: dict[str, int] = {}
        records: list[dict[str, object]] = []
        for number, line in enumerate(_lines(content), start=1):
            if not line.strip():
                continue
            try:
                record, repaired = _record(line)
                records.append(record)
                message, notes = _message(record, names, options, seen)
                if message.guid in messages:
                    raise _BadLineError(f"duplicate guid {message.guid!r}")
            except _BadLineError as exc:
                skipped += 1
                problems.append(f"line {number}: {exc}")
                continue
            if repaired:
                notes.insert(0, "invalid Unicode (a lone surrogate escape) in "
                             f"{', '.join(repaired)} replaced by U+FFFD")
            problems.extend(f"line {number}: {note}" for note in notes)
            messages[message.guid] = message
            folded += len(message.tapbacks)
        ordered = _carry_thread_names(sorted(messages.values(), key=message_order), records)
        logger.info(
            "jsonl %s: %d message(s), %d line(s) skipped", path, len(ordered), skipped
        )
        return ParsedArchive(
            source=self.name,
            messages=tuple(ordered),
            skipped=skipped,
            skipped_reasons={BAD_LINE: skipped} if skipped else {},
            tapbacks_folded=folded,
            problems=cap_problems(problems),
        )


def _carry_thread_names(
    messages: list[SourceMessage], records: list[dict[str, object]]
) -> list[SourceMessage]:
    """Give every message of a thread the thread's name, when any line of it names it.

    The last ``thread_name`` given for a thread in the file wins (a renamed chat shows its
    current name everywhere); a thread never named keeps its id as its name. ``records`` are
    the file's JSON objects, in file order (bad lines included: a line may name its thread
    and still lack a text).
    """
    named: dict[str, str] = {}
    for record in records:
        name = record.get("thread_name")
        if isinstance(name, str) and name.strip() and record.get("thread_id") is not None:
            named[str(record["thread_id"])] = name.strip()
    return [
        m if named.get(m.thread_id, m.thread_name) == m.thread_name
        else m.model_copy(update={"thread_name": named[m.thread_id]})
        for m in messages
    ]


_ZERO_TIME = datetime(1, 1, 1, tzinfo=UTC)


def _lines(content: str) -> list[str]:
    """Return the file's lines: split at line feeds only, a trailing carriage return removed.

    U+2028, U+0085 and friends may sit inside a JSON string written with
    ``ensure_ascii=False``; `str.splitlines` would cut the line there.
    """
    return [line.removesuffix("\r") for line in content.split("\n")]


def _record(line: str) -> tuple[dict[str, object], list[str]]:
    """Read one line's JSON object, every string in it valid Unicode.

    Returns:
        The object, and the fields whose strings held a lone surrogate escape (repaired to
        U+FFFD; a pair of escapes is a character and needs no repair), sorted.

    Raises:
        _BadLineError: the line is not JSON, or not an object.
    """
    try:
        record = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise _BadLineError(f"not JSON ({_short(exc)})") from None
    if not isinstance(record, dict):
        raise _BadLineError("not a JSON object")
    repaired: set[str] = set()
    clean = {repair_unicode(k): _repaired(v, k, repaired) for k, v in record.items()}
    if len(clean) < len(record) or any(has_surrogates(k) for k in record):
        repaired.add("(a field name)")
    return clean, sorted(f"'{field}'" for field in repaired)


def _repaired(value: object, where: str, repaired: set[str]) -> object:
    """``value`` with every string (keys too) valid Unicode; repaired fields added by name.

    `json.loads` already joins a pair of escapes into its character, so any surrogate left in
    a string is a lone half.
    """
    if isinstance(value, str):
        if not has_surrogates(value):
            return value
        repaired.add(where or "(a key)")
        return repair_unicode(value)
    if isinstance(value, dict):
        return {
            _repaired(k, where, repaired): _repaired(v, f"{where}.{k}" if where else k, repaired)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_repaired(v, f"{where}[{i}]", repaired) for i, v in enumerate(value)]
    return value


def _message(
    record: dict[str, object],
    names: HandleNames,
    options: MessageSourceOptions,
    seen: dict[str, int],
) -> tuple[SourceMessage, list[str]]:
    """Build the message of one line's object, plus notes on dropped reactions.

    ``seen`` counts the derived guids so far: identical lines without a ``guid`` (the same
    "ok" twice in a minute) get distinct guids, numbered by their order in the file. A
    derived guid hashes the timestamp as written (one without an offset read as UTC, as
    before ``timezone`` applied to it), so changing the zone keeps every message's id.

    Raises:
        _BadLineError: the object is not a valid message record.
    """
    thread_id = record.get("thread_id")
    if isinstance(thread_id, int) and not isinstance(thread_id, bool):
        thread_id = str(thread_id)
    if not isinstance(thread_id, str) or not thread_id.strip():
        raise _BadLineError("missing or empty 'thread_id'")
    text = record.get("text")
    if not isinstance(text, str) or not text.strip():
        raise _BadLineError("missing or empty 'text'")
    if not text.replace("\ufffd", "").strip():
        raise _BadLineError("'text' holds no valid text (only invalid Unicode)")
    thread_name = _optional_str(record, "thread_name") or thread_id
    sender = _optional_str(record, "sender")
    sender_handle = _optional_str(record, "sender_handle")
    is_from_me = record.get("is_from_me", False)
    if not isinstance(is_from_me, bool):
        raise _BadLineError("'is_from_me' must be true or false")
    owner_label = options.owner_label
    timestamp, written = _timestamp(record.get("timestamp"), options.zone)
    person = owner_label if is_from_me else _person(names, sender, sender_handle)
    if person is None:
        raise _BadLineError("missing 'sender' (or 'sender_handle')")
    guid = record.get("guid")
    if guid is None:
        stamp = written.isoformat() if written else ""
        base = sha256_text(
            thread_id, sender, sender_handle, "me" if is_from_me else "", stamp, text
        )
        seen[base] = seen.get(base, 0) + 1
        guid = base if seen[base] == 1 else sha256_text(base, str(seen[base]))
    elif not isinstance(guid, str) or not guid.strip():
        raise _BadLineError("'guid' must be a non-empty string")
    tapbacks, notes = _reactions(record.get("reactions"), names, owner_label)
    try:
        message = SourceMessage(
            guid=guid,
            thread_id=thread_id,
            thread_name=thread_name,
            sender_handle="" if is_from_me else sender_handle,
            sender_name=person,
            is_from_me=is_from_me,
            timestamp=timestamp,
            text=text,
            tapbacks=tapbacks,
        )
    except ValidationError as exc:  # any value the model refuses is this line's problem
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise _BadLineError(f"bad {field!r}: {first['msg']}") from None
    return message, notes


def _optional_str(record: Mapping[str, object], key: str) -> str:
    value = record.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _BadLineError(f"{key!r} must be a string")
    return value.strip()


def _person(names: HandleNames, sender: str, sender_handle: str) -> str | None:
    """Display name of a sender: a mapped handle first, then the given name or handle."""
    for candidate in (sender_handle, sender):
        if candidate:
            mapped = names.get(candidate)
            if mapped is not None:
                return mapped
    return sender or sender_handle or None


def _timestamp(value: object, zone: tzinfo) -> tuple[datetime | None, datetime | None]:
    """Parse an ISO 8601 string or epoch seconds; None/absent is undated.

    A string without an offset is a wall-clock time in ``zone``.

    Returns:
        ``(instant, written)``: the instant in UTC, and the timestamp as written with an
        offset-less one read as UTC (what a derived guid hashes); both None when undated.

    Raises:
        _BadLineError: any other value.
    """
    if value is None:
        return None, None
    if isinstance(value, bool):
        raise _BadLineError("'timestamp' must be ISO 8601 text or epoch seconds")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise _BadLineError(f"bad 'timestamp' {value!r}")
        try:
            instant = datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise _BadLineError(f"'timestamp' {value!r} is out of range") from None
        return instant, instant
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip())
        except ValueError:
            raise _BadLineError(f"bad 'timestamp' {value[:40]!r} (want ISO 8601)") from None
        naive = parsed.tzinfo is None
        try:
            written = parsed.replace(tzinfo=UTC) if naive else parsed.astimezone(UTC)
            if written == _ZERO_TIME:  # Go's zero time, written by exporters for "unknown"
                return None, None
            instant = parsed.replace(tzinfo=zone).astimezone(UTC) if naive else written
        except (OverflowError, ValueError):
            raise _BadLineError(f"'timestamp' {value[:40]!r} is out of range") from None
        return instant, written
    raise _BadLineError("'timestamp' must be ISO 8601 text or epoch seconds")


def _reactions(
    value: object, names: HandleNames, owner_label: str
) -> tuple[tuple[Tapback, ...], list[str]]:
    """Valid reactions (deduplicated, sorted) and one note per dropped one."""
    if value is None:
        return (), []
    if not isinstance(value, list):
        return (), ["'reactions' is not a list; ignored"]
    kept: set[tuple[str, str]] = set()
    notes: list[str] = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            notes.append(f"reaction {index}: not an object; dropped")
            continue
        kind = item.get("kind")
        if kind not in TAPBACK_KINDS:
            notes.append(f"reaction {index}: unknown kind {kind!r}; dropped")
            continue
        if item.get("is_from_me") is True:
            who: str | None = owner_label
        else:
            sender = item.get("sender")
            who = names.name(sender.strip()) if isinstance(sender, str) and sender.strip() else None
        if who is None:
            notes.append(f"reaction {index}: missing 'sender'; dropped")
            continue
        kept.add((str(kind), who))
    return tuple(Tapback(kind=k, sender_name=s) for k, s in sorted(kept)), notes


def _short(exc: Exception) -> str:
    return " ".join(str(exc).split())[:80]

