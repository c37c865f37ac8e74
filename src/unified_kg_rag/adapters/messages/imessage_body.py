"""The body of one iMessage row: its text, its edits, or why it has none.

* **Text** comes from ``text`` when it holds any, else from ``attributedBody`` (recent macOS
  versions leave ``text`` NULL). Text values are read as bytes and decoded leniently
  (`RowTexts`): a value that is not UTF-8 is repaired, with a problem line, never fatal.
* **Attachments** sit in the text as U+FFFC (OBJECT REPLACEMENT CHARACTER). One between two
  words becomes a space (``"see\ufffcthis"`` reads ``see this``, not ``seethis``); one at
  either end, or next to a space or line break, goes.
* **Edits** (macOS 13 / iOS 16 on): ``date_edited`` set, the earlier versions in
  ``message_summary_info`` (`edit_history.read_summary_info`). The row's text is the last
  version; the message is marked edited, with its last edit time and earlier versions.
* **Unsends**: ``date_retracted`` set, or every part listed as unsent in
  ``message_summary_info``. An unsent message has no text left and is skipped as ``unsent``.

A row without a body is skipped under one reason: `UNSENT`, `ATTACHMENT_ONLY` (attachment
placeholders only, or ``cache_has_attachments`` and no text) or `NO_TEXT` (nothing at all:
a group event, an empty row, an unreadable body).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from unified_kg_rag.adapters.messages.edit_history import EditHistory, read_summary_info
from unified_kg_rag.adapters.messages.imessage_codes import apple_timestamp
from unified_kg_rag.adapters.messages.typedstream_body import attributed_body_bytes
from unified_kg_rag.domain.messages.ref import MessageEdit
from unified_kg_rag.domain.text.decoding import decode_utf8

__all__ = [
    "ATTACHMENT_ONLY",
    "NO_TEXT",
    "UNSENT",
    "Body",
    "BodyColumns",
    "RowTexts",
    "row_body",
    "without_placeholders",
]

NO_TEXT = "no text"
"""Skip reason: a row with no text at all (a group event, an empty or unreadable body)."""

ATTACHMENT_ONLY = "attachment only"
"""Skip reason: a row holding attachments and no text."""

UNSENT = "unsent"
"""Skip reason: a message its sender unsent."""

_PLACEHOLDER = "\ufffc"  # OBJECT REPLACEMENT CHARACTER: where an attachment sat
_PLACEHOLDERS = re.compile(r"\s*\ufffc[\s\ufffc]*")


class RowTexts:
    """Decodes text values read as bytes; one problem line per repaired value."""

    def __init__(self) -> None:
        self.problems: list[str] = []

    def decode(self, value: object, where: str, column: str) -> str | None:
        """The value as text (None for NULL); bytes that are not UTF-8 repaired and noted.

        Args:
            value: the column's value (bytes for text read as ``CAST(... AS BLOB)``).
            where: the row, for the problem line (``message ROWID 12``).
            column: the column, for the problem line.
        """
        if value is None:
            return None
        if not isinstance(value, bytes):
            return str(value)
        text, repaired = decode_utf8(value)
        if repaired:
            self.problems.append(f"{where}: invalid UTF-8 in {column!r} repaired (U+FFFD "
                                 "where no character could be read)")
        return text


@dataclass(frozen=True)
class BodyColumns:
    """The columns of a message row that make its body (absent columns read as None)."""

    text: object
    attributed_body: object
    has_attachments: object
    date_edited: object
    date_retracted: object
    summary_info: object


@dataclass(frozen=True)
class Body:
    """The body of a row that has one.

    Attributes:
        text: the text (its last version), placeholders resolved.
        edited: the sender edited it.
        edited_at: the last edit (aware UTC), None when unknown.
        edits: the earlier versions, oldest first.
    """

    text: str
    edited: bool = False
    edited_at: datetime | None = None
    edits: tuple[MessageEdit, ...] = ()


def without_placeholders(text: str) -> str:
    """Return ``text`` with its attachment placeholders (U+FFFC) resolved.

    A run of placeholders between two words becomes one space (a line break when the run
    holds one); at either end of the text it goes. ``"see\ufffcthis"`` → ``"see this"``.
    """
    if _PLACEHOLDER not in text:
        return text
    joined = _PLACEHOLDERS.sub(lambda m: "\n" if "\n" in m.group() else " ", text)
    return joined.strip()


def row_body(row: BodyColumns, texts: RowTexts, where: str) -> Body | str:
    """Return the body of a (non-reaction) message row, or the reason it has none.

    Args:
        row: the row's body columns.
        texts: the decoder (collects problem lines).
        where: the row, for problem lines (``message ROWID 12``).

    Returns:
        The body, or one of `UNSENT`, `ATTACHMENT_ONLY`, `NO_TEXT`.
    """
    text, placeholder = _cleaned(texts.decode(row.text, where, "text"))
    blob = _bytes(row.attributed_body)
    if text is None and blob is not None:
        text, more = _cleaned(texts.decode(attributed_body_bytes(blob), where, "attributedBody"))
        placeholder = placeholder or more
    changed = _set(row.date_edited) or _set(row.date_retracted)
    history = _history(row.summary_info, texts, where) if changed or text is None else None
    history = history or EditHistory()
    if text is None:
        if _set(row.date_retracted) or history.unsent_parts:
            return UNSENT
        return ATTACHMENT_ONLY if placeholder or _set(row.has_attachments) else NO_TEXT
    if not (history.edited or _set(row.date_edited)):
        return Body(text)
    edits = tuple(
        MessageEdit(timestamp=when.isoformat() if when else "",
                    text=without_placeholders(version))
        for when, version in history.versions
    )
    return Body(text, edited=True, edited_at=_time(row.date_edited) or history.last_edit,
                edits=edits)


def _cleaned(decoded: str | None) -> tuple[str | None, bool]:
    """``(text without placeholders or None when nothing is left, held a placeholder)``."""
    if decoded is None:
        return None, False
    cleaned = without_placeholders(decoded)
    return (cleaned if cleaned.strip() else None), _PLACEHOLDER in decoded


def _history(value: object, texts: RowTexts, where: str) -> EditHistory:
    blob = _bytes(value)
    if not blob:
        return EditHistory()
    try:
        return read_summary_info(blob, to_time=apple_timestamp)
    except ValueError as exc:
        texts.problems.append(f"{where}: unreadable message_summary_info ({exc}); its edit "
                              "history is not read")
        return EditHistory()


def _bytes(value: object) -> bytes | None:
    return value if isinstance(value, bytes) and value else None


def _set(value: object) -> bool:
    """True for a non-zero Apple time (an edit or unsend happened)."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value != 0


def _time(value: object) -> datetime | None:
    try:
        return apple_timestamp(value)
    except ValueError:
        return None
