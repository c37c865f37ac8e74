r"""Text that enters from outside: lenient UTF-8 decoding and escaped display of odd names.

Bytes from an archive (an iMessage ``TEXT`` column, an ``attributedBody`` string) are meant to
be UTF-8 but sometimes are not: a truncated character, or the CESU-8/WTF-8 form of a
character outside the Basic Multilingual Plane (each UTF-16 half encoded on its own, as
NSString and Java write it). `decode_utf8` never fails on them: a pair of encoded halves
becomes its character, anything else undecodable becomes U+FFFD, and the caller learns that
the text was repaired (so it can say so). Lone surrogates in decoded strings (JSON escapes)
are repaired by `domain.text.analysis.repair_unicode`.

File names are different: on POSIX systems they are bytes, and Python decodes the bytes that
are not UTF-8 to lone surrogates U+DC80..U+DCFF (``surrogateescape``). Replacing those with
U+FFFD would make ``caf\xe9.txt`` and ``caf\xe8.txt`` look alike; `escape_undecodable`
shows each such byte as ``\xNN`` instead (Python's ``backslashreplace`` of the original
bytes), so the two names stay apart and the text can be printed, stored and written as JSON.

Not here: charset detection of whole documents (``adapters.parsers.encoding``).
"""

from __future__ import annotations

import re

from unified_kg_rag.domain.text.analysis import repair_unicode

__all__ = ["decode_utf8", "escape_undecodable", "has_surrogates", "unescape_undecodable"]

_SURROGATE = re.compile(r"[\ud800-\udfff]")
_BYTE_ESCAPE = re.compile(r"\\x([89a-f][0-9a-f])")
_ESCAPED_BYTE = range(0xDC80, 0xDD00)
"""Lone surrogates ``surrogateescape`` makes of the bytes 0x80..0xFF."""


def has_surrogates(text: str) -> bool:
    """Return True when ``text`` holds a surrogate code point (it cannot be encoded as UTF-8)."""
    return _SURROGATE.search(text) is not None


def decode_utf8(data: bytes) -> tuple[str, bool]:
    """Decode UTF-8 bytes without failing: ``(text, repaired)``.

    Valid UTF-8 decodes as is (``repaired`` False). Otherwise the encoded surrogate halves of
    CESU-8/WTF-8 are read (a pair becomes its character, a lone half U+FFFD), and when other
    bytes are still undecodable every undecodable sequence becomes U+FFFD.

    Args:
        data: the bytes, meant to be UTF-8.

    Returns:
        The text (never holding a surrogate) and whether anything had to be repaired.
    """
    try:
        return data.decode("utf-8"), False
    except UnicodeDecodeError:
        pass
    try:
        return repair_unicode(data.decode("utf-8", "surrogatepass")), True
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace"), True


def escape_undecodable(text: str) -> str:
    r"""Return ``text`` with every surrogate written as an escape: printable and distinct.

    A byte that was not UTF-8 in a file name (U+DC80..U+DCFF from ``surrogateescape``) shows as
    ``\xNN``, the byte itself: ``"caf\udce9.txt"`` → ``caf\xe9.txt``. Any other lone
    surrogate (a Windows name, a JSON escape) shows as ``\udNNN``. Text without surrogates is
    returned unchanged, so valid names are shown exactly as before.

    Args:
        text: a name as Python decoded it (``os.fsdecode``).

    Returns:
        Text that encodes as UTF-8; two names that differ stay different.
    """
    if not has_surrogates(text):
        return text
    return _SURROGATE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    point = ord(match.group())
    if point in _ESCAPED_BYTE:
        return f"\\x{point - 0xDC00:02x}"
    return f"\\u{point:04x}"


def unescape_undecodable(text: str) -> str:
    r"""Return the name `escape_undecodable` showed as ``text``: each ``\xNN`` (80..ff) a byte.

    The escape is not unambiguous (a name may hold a literal ``\xe9``), so use this only to
    look for a file both ways, never as the one true name.
    """
    if "\\x" not in text:
        return text
    return _BYTE_ESCAPE.sub(lambda m: chr(0xDC00 + int(m.group(1), 16)), text)
