"""Checks every parser applies to its output: one-line failure reasons, no empty documents.

Only small helpers shared by the parsers of this package belong here; a parser's own format
logic stays in its module.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import date, datetime

from unified_kg_rag.domain.models import MetadataValue, ParsedDocument
from unified_kg_rag.util.errors import InputError

__all__ = ["EMPTY_REASON", "finish", "normalise_newlines", "one_line", "require_bytes",
           "stated_date"]

logger = logging.getLogger(__name__)

EMPTY_REASON = "empty document (no text)"
"""The reason given for a file that holds no text."""

_MAX_REASON_CHARS = 300


def one_line(reason: object) -> str:
    """Return ``reason`` as text on one line: whitespace runs (newlines too) become one space.

    Long reasons (a library quoting a whole buffer) are cut at 300 characters with an ellipsis.
    """
    text = " ".join(str(reason).split()) or "unknown error"
    if len(text) > _MAX_REASON_CHARS:
        text = text[: _MAX_REASON_CHARS - 1] + "…"
    return text


def normalise_newlines(text: str) -> str:
    """Return ``text`` with CRLF and lone CR turned into LF; nothing else changes."""
    if "\r" not in text:
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def require_bytes(data: bytes, path: str) -> None:
    """Raise the "empty document" error for a zero-byte file.

    Raises:
        InputError: ``data`` is empty.
    """
    if not data:
        raise InputError(path, EMPTY_REASON)


def finish(
    text: str,
    *,
    path: str,
    title: str = "",
    metadata: dict[str, MetadataValue] | None = None,
    empty_reason: str = EMPTY_REASON,
) -> ParsedDocument:
    """Build the `ParsedDocument` of a parser, refusing one without text.

    Args:
        text: the extracted text; newlines are normalised, nothing else is changed.
        path: the file, for the error message.
        title: the document's own title (stripped and put on one line), or empty.
        metadata: JSON-scalar fields the parser found.
        empty_reason: the reason given when ``text`` is blank.

    Raises:
        InputError: ``text`` is empty or only whitespace.
    """
    text = normalise_newlines(text)
    if not text or text.isspace():
        raise InputError(path, empty_reason)
    return ParsedDocument(title=" ".join(title.split()), text=text, metadata=dict(metadata or {}))


def stated_date(read: Callable[[], object]) -> str | None:
    """Return a date a document states as ISO-8601 text, or None when it states none.

    Args:
        read: returns the value (a `datetime`, a `date`, or text the caller already knows
            to be ISO-8601); any exception it raises (a malformed date field) gives None.

    The metadata keys parsers use for it are `domain.text.unit_times.STATED_TIME_KEYS`
    (``modified``, ``date``, ``created``): the time recency is scored from.
    """
    try:
        value = read()
    except Exception:  # a malformed date only loses the field
        return None
    if isinstance(value, datetime | date):
        try:
            return value.isoformat()
        except (ValueError, OverflowError):
            return None
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None
