"""Edits and unsends of iMessages: ``message_summary_info`` read with `plistlib`.

Since macOS 13 / iOS 16 a sent iMessage can be edited (up to five times within 15 minutes) or
unsent (within 2 minutes). ``message.date_edited`` is then set (Apple time, like
``message.date``), ``message.date_retracted`` too for an unsend, and the edit history sits in
``message.message_summary_info``, a binary property list. The keys read here:

========  ======================================================================================
key       value
========  ======================================================================================
``ec``    dictionary: body part index (as text, ``"0"``) → array of the part's versions, oldest
          first, the last being its current text; each version a dictionary with ``d`` (when
          it was written: seconds since 2001-01-01 UTC, an integer or, in early releases, a
          real) and ``t`` (the version's text as an ``attributedBody`` typedstream, data)
``rp``    array of the indexes of body parts that were unsent
``otr``   dictionary: part index → range of the part in the text (not read)
========  ======================================================================================

Other keys (``bcg``, the guid of a link preview an edit produced, and anything newer) are
ignored. A value of an unexpected type is skipped, not fatal: what could be read is kept.

Source: the structure as documented by the open-source ``imessage-exporter`` project
(``message_types/edited.rs``, read as a format description); Apple's user guide "Unsend and
edit messages on iPhone" for the limits.
"""

from __future__ import annotations

import plistlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from unified_kg_rag.adapters.messages.typedstream_body import decode_attributed_body

__all__ = ["EditHistory", "read_summary_info"]


@dataclass(frozen=True)
class EditHistory:
    """What a ``message_summary_info`` says about a message's edits and unsends.

    Attributes:
        versions: the earlier versions of every edited part, ``(written at, text)``, parts in
            index order, each oldest first (a part's current text is not repeated here).
        last_edit: when the newest version of any part was written (None when unknown).
        unsent_parts: indexes of the parts that were unsent.
    """

    versions: tuple[tuple[datetime | None, str], ...] = ()
    last_edit: datetime | None = None
    unsent_parts: frozenset[int] = frozenset()

    @property
    def edited(self) -> bool:
        """True when some part has an earlier version."""
        return bool(self.versions)


def read_summary_info(
    blob: bytes, *, to_time: Callable[[object], datetime | None]
) -> EditHistory:
    """Read the edits and unsends of one ``message_summary_info`` value.

    Args:
        blob: the column's bytes (a binary or XML property list).
        to_time: turns a raw Apple time (``d``) into an aware UTC datetime (None: unknown);
            may raise ValueError for a value out of range (read as unknown).

    Returns:
        The earlier versions, the last edit time and the unsent parts.

    Raises:
        ValueError: the bytes are not a property list whose root is a dictionary.
    """
    try:
        root = plistlib.loads(bytes(blob))
    except Exception as exc:  # plistlib raises many kinds on damaged input
        raise ValueError(f"not a property list ({type(exc).__name__})") from None
    if not isinstance(root, dict):
        raise ValueError("not a dictionary")
    versions: list[tuple[datetime | None, str]] = []
    stamps: list[datetime] = []
    edited = root.get("ec")
    parts_edited: dict[object, object] = edited if isinstance(edited, dict) else {}
    for key in sorted(parts_edited, key=_part_order):
        value = parts_edited[key]
        items: list[object] = value if isinstance(value, list) else []
        history = [v for v in (_version(item, to_time) for item in items) if v is not None]
        versions.extend(history[:-1])  # the last version is the part's current text
        stamps.extend(when for when, _ in history if when is not None)
    unsent = root.get("rp")
    parts = frozenset(
        i for i in (unsent if isinstance(unsent, list) else ())
        if isinstance(i, int) and not isinstance(i, bool)
    )
    return EditHistory(versions=tuple(versions), last_edit=max(stamps, default=None),
                       unsent_parts=parts)


def _part_order(key: object) -> tuple[int, str]:
    text = str(key)
    return (int(text), text) if text.isdigit() else (1 << 30, text)


def _version(
    item: object, to_time: Callable[[object], datetime | None]
) -> tuple[datetime | None, str] | None:
    """One version ``(written at, text)``; None when it holds no readable text."""
    if not isinstance(item, dict):
        return None
    body = item.get("t")
    text = decode_attributed_body(body) if isinstance(body, bytes) else None
    if text is None:
        return None
    raw = item.get("d")
    try:
        when = to_time(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) else None
    except ValueError:
        when = None
    return when, text
