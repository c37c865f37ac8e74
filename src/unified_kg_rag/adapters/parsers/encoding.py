"""Decoding the bytes of a text file (txt, md, csv, json, jsonl, html) into a string.

The order is: a byte-order mark (UTF-8, UTF-16 or UTF-32) decides; otherwise the bytes are
refused as binary when they hold a NUL byte early on; otherwise the locale's preferred encoding
(normally UTF-8) is tried strictly; otherwise ``charset-normalizer`` guesses. Newlines are
normalised to LF and nothing else is changed, so character offsets into the result stay
meaningful. Format parsing does not belong here.
"""

from __future__ import annotations

import codecs
import locale
import logging
import re
from dataclasses import dataclass

from unified_kg_rag.adapters.parsers.base import normalise_newlines
from unified_kg_rag.util.errors import InputError

__all__ = ["BINARY_REASON", "DecodedText", "decode_text"]

logger = logging.getLogger(__name__)

BINARY_REASON = "binary data, not text"
"""The reason given for bytes that are not text in any encoding."""

_BOMS: tuple[tuple[bytes, str, str], ...] = (
    # UTF-32 first: its little-endian BOM starts with the UTF-16 one.
    (codecs.BOM_UTF32_LE, "utf-32-le", "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig", "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "utf-16"),
)
_SNIFF_BYTES = 8192
_CONTROL_SAMPLE_CHARS = 65536
_MAX_CONTROL_SHARE = 0.1
_CP1252_TIE = 0.01
# Unicode category Cc less the whitespace controls (\t \n \v \f \r) and ESC (ANSI colours in logs).
_CONTROL = re.compile("[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class DecodedText:
    """A decoded text file.

    Attributes:
        text: the text, newlines normalised to LF.
        encoding: the Python codec name used (``utf-8``, ``utf-16-le``, ``cp949`` ...).
    """

    text: str
    encoding: str


def decode_text(data: bytes, *, path: str) -> DecodedText:
    """Decode the bytes of a text file.

    Args:
        data: the file's bytes.
        path: the file, for error messages.

    Returns:
        The text (newlines normalised) and the encoding used.

    Raises:
        InputError: the bytes are binary (a NUL byte in the first 8 KB without a UTF-16/32
            byte-order mark, no encoding fits, or the decoded text is mostly control
            characters), or text under a byte-order mark that does not decode.
    """
    for bom, name, codec in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as exc:
                reason = f"invalid {name} text after its byte-order mark ({exc.reason})"
                raise InputError(path, reason) from exc
            return DecodedText(normalise_newlines(text), name)
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise InputError(path, BINARY_REASON)
    preferred = codecs.lookup(locale.getpreferredencoding(False)).name
    try:
        text = data.decode(preferred)
        encoding = preferred
    except UnicodeDecodeError:
        text, encoding = _detect(data, path)
    if _mostly_control(text):
        raise InputError(path, BINARY_REASON)
    return DecodedText(normalise_newlines(text), encoding)


def _detect(data: bytes, path: str) -> tuple[str, str]:
    """Guess the encoding with charset-normalizer, breaking near-ties towards Windows-1252.

    On short Western text several single-byte code pages decode almost equally well (``é``
    is 0xE9 in most of them; ``è`` is not), and charset-normalizer can pick Mac Latin-2 or
    Windows-1250 for French. Windows-1252 is the most common legacy encoding (WHATWG reads
    every ``latin-1`` label as it), so it wins when its mess ratio is within 0.01 of the best
    guess and its language coherence is at least as high.
    """
    from charset_normalizer import from_bytes

    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        raise InputError(path, BINARY_REASON)
    for match in matches:
        if (
            match.encoding == "cp1252"
            and match.chaos <= best.chaos + _CP1252_TIE
            and match.coherence >= best.coherence
        ):
            best = match
            break
    encoding = codecs.lookup(best.encoding).name
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError:
        # charset-normalizer judges from samples; a stray byte elsewhere is replaced, not fatal.
        logger.warning("%s: undecodable bytes replaced while reading it as %s", path, encoding)
        return data.decode(encoding, errors="replace"), encoding


def _mostly_control(text: str) -> bool:
    sample = text[:_CONTROL_SAMPLE_CHARS]
    if not sample:
        return False
    controls = len(_CONTROL.findall(sample))
    return controls > _MAX_CONTROL_SHARE * len(sample)
