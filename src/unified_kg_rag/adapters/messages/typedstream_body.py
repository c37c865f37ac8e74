"""Decode an iMessage ``attributedBody`` blob (an archived ``NSAttributedString``) to text.

Newer macOS/iOS versions leave ``message.text`` NULL and keep the body only in
``attributedBody``: an ``NSAttributedString`` serialized with ``NSArchiver`` as a
*typedstream* (header ``04 0b "streamtyped" 81 e8 03``). The archived string is the first
value of the object (attribute runs follow it), so the first ``NSString`` reached depth-first
in the unarchived object graph is the message text.

Two tiers:

1. pytypedstream's event reader (``typedstream.stream.TypedStreamReader``). An archive is
   written depth-first, so walking its events *is* the depth-first walk of the object graph:
   the text is the first byte string after a class record of ``NSString`` or a subclass
   (``NSMutableString``). Reading events, not building objects, is about four times faster
   than ``typedstream.unarchive_from_data`` and ignores what the text does not need (an
   attribute object of a class version pytypedstream does not know, a damaged tail: the
   reader is lazy, so a blob broken *after* the text still decodes).
2. For a blob the reader rejects before the text (an unexpected header, say), a byte scan:
   the ``NSString`` class name, then the literal ``+`` type tag (``84 01 2b``), then the
   length and the UTF-8 bytes.

Both tiers read length prefixes as typedstream writes integers: one byte, or ``0x81`` + 2
bytes, or ``0x82`` + 4 bytes (little-endian), so bodies over 127 bytes decode whole (a naive
one-byte read truncates them). Any failure returns None; nothing here raises.

The string's bytes are meant to be UTF-8; when they are not (a character cut in two, the
CESU-8 form of an emoji that an NSString holding a lone UTF-16 half archives to),
`decode_attributed_body` repairs them (`domain.text.decoding.decode_utf8`) instead of losing
the message; `attributed_body_bytes` gives the bytes, for a caller that reports the repair.

Source: seed 001 (``IMessageSource._decode_attributed_body``: the first-``NSString``
rule and "a bad blob skips its row, never the file"); the format as pytypedstream reads it.
"""

from __future__ import annotations

import logging

from unified_kg_rag.domain.text.decoding import decode_utf8

__all__ = ["attributed_body_bytes", "decode_attributed_body"]

logger = logging.getLogger(__name__)

_STRING_CLASSES = frozenset({b"NSString", b"NSMutableString"})
_MAX_EVENTS = 10_000
_PLUS_TAG = b"\x84\x01+"  # a new shared string of length 1: the "+" type encoding
_SCAN_WINDOW = 32  # how far after the class name the "+" tag may sit


def decode_attributed_body(blob: bytes | None) -> str | None:
    """Return the text of an ``attributedBody`` blob, or None when it holds none.

    Args:
        blob: the column's bytes (None or empty for rows without one).

    Returns:
        The archived string (UTF-8 decoded, repaired with U+FFFD where it is not UTF-8;
        possibly empty), or None when the blob is empty, not a typedstream, or holds no
        string. Never raises.
    """
    data = attributed_body_bytes(blob)
    return None if data is None else decode_utf8(data)[0]


def attributed_body_bytes(blob: bytes | None) -> bytes | None:
    """Return the bytes of the string an ``attributedBody`` blob archives (meant as UTF-8).

    Args:
        blob: the column's bytes (None or empty for rows without one).

    Returns:
        The string's bytes, undecoded, or None when the blob is empty, not a typedstream, or
        holds no string. Never raises.
    """
    if not blob:
        return None
    data = bytes(blob)
    try:
        text = _from_events(data)
    except Exception as exc:  # any reader failure falls to the byte scan
        logger.debug("attributedBody: typedstream reader failed (%s); scanning bytes", exc)
        text = None
    if text is None:
        text = _from_bytes(data)
    return text


def _from_events(data: bytes) -> bytes | None:
    """Tier 1: the first string value of the first NSString object, via pytypedstream."""
    from typedstream.stream import (  # type: ignore[import-untyped]  # pure Python, lazy
        SingleClass,
        TypedStreamReader,
    )

    with TypedStreamReader.from_data(data) as reader:
        armed = False
        for count, event in enumerate(reader):
            if count > _MAX_EVENTS:
                return None
            if isinstance(event, SingleClass):
                armed = armed or event.name in _STRING_CLASSES
            elif armed and isinstance(event, bytes):
                return event
    return None


def _from_bytes(data: bytes) -> bytes | None:
    """Tier 2: find ``NSString``, its ``+`` tag, and read the length-prefixed UTF-8 bytes."""
    start = data.find(b"NSString")
    if start < 0:
        return None
    tag = data.find(_PLUS_TAG, start, start + len(b"NSString") + _SCAN_WINDOW)
    if tag < 0:
        return None
    at = tag + len(_PLUS_TAG)
    if at >= len(data):
        return None
    head = data[at]
    if head == 0x81:
        width = 2
    elif head == 0x82:
        width = 4
    elif 0x80 <= head <= 0x91:  # any other tag cannot start a length
        return None
    else:
        width = 0
    if width:
        length = int.from_bytes(data[at + 1 : at + 1 + width], "little", signed=False)
        at += 1 + width
    else:
        length = head
        at += 1
    if at + length > len(data):
        return None
    return data[at : at + length]
