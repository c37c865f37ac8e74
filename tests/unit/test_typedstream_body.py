"""attributedBody decoding: real NSAttributedString typedstreams written by tests/support."""

from __future__ import annotations

import pytest
import typedstream
from tests.support.chatdb import typedstream_body

from unified_kg_rag.adapters.messages.typedstream_body import (
    attributed_body_bytes,
    decode_attributed_body,
)

pytestmark = pytest.mark.unit

_PLUS = b"\x84\x01+"


def _length_head(blob: bytes) -> int:
    """The first byte of the NSString's length prefix (just after the '+' type tag)."""
    return blob[blob.index(_PLUS) + len(_PLUS)]


@pytest.mark.parametrize(
    "text",
    [
        "Hello world",
        "Café crème, naïve — “quoted”",
        "東京で会いましょう 👋🏽",
        "a",
        "line one\nline two",
    ],
)
def test_round_trip(text: str) -> None:
    blob = typedstream_body(text)
    assert blob.startswith(b"\x04\x0bstreamtyped\x81\xe8\x03")
    assert decode_attributed_body(blob) == text


def test_writer_output_is_a_real_typedstream() -> None:
    # pytypedstream's own unarchiver reads the blob as Messages' archive: an
    # NSAttributedString whose first value is the NSString, then the attribute run.
    text = "Ünïcode 🙂 body"
    root = typedstream.unarchive_from_data(typedstream_body(text))
    assert root.clazz.name == b"NSAttributedString"
    assert root.clazz.superclass.name == b"NSObject"
    assert root.contents[0].value.value == text
    run = root.contents[1]
    assert run.values == [1, len(text.encode("utf-16-le")) // 2]


def test_mutable_string_and_bare_string() -> None:
    assert decode_attributed_body(typedstream_body("mutable", mutable=True)) == "mutable"
    assert decode_attributed_body(typedstream_body("bare", attributes=False)) == "bare"


def test_body_over_255_bytes_has_a_wide_length_prefix() -> None:
    text = "Ω long body " * 30  # 390 UTF-8 bytes
    blob = typedstream_body(text)
    assert len(text.encode("utf-8")) > 255
    assert _length_head(blob) == 0x81  # 2-byte length follows: a one-byte read truncates
    assert decode_attributed_body(blob) == text


def test_body_between_128_and_255_bytes() -> None:
    text = "x" * 200
    blob = typedstream_body(text)
    assert _length_head(blob) == 0x81
    assert decode_attributed_body(blob) == text


def test_body_over_32767_bytes_has_a_four_byte_length() -> None:
    text = "word " * 8000
    blob = typedstream_body(text)
    assert _length_head(blob) == 0x82
    assert decode_attributed_body(blob) == text


def test_attribute_object_pytypedstream_rejects_still_decodes() -> None:
    blob = typedstream_body("still readable")
    bad = blob.replace(b"NSNumber\x00", b"NSNumber\x07")  # a class version it refuses
    assert bad != blob
    with pytest.raises(ValueError, match="version"):
        typedstream.unarchive_from_data(bad)
    assert decode_attributed_body(bad) == "still readable"


def test_blob_damaged_after_the_text_still_decodes() -> None:
    text = "truncated tail " * 20
    blob = typedstream_body(text)
    assert decode_attributed_body(blob[:-12]) == text


def test_byte_scan_fallback_for_an_unreadable_header() -> None:
    text = "é" * 150  # 300 bytes: the fallback must read the wide prefix too
    blob = bytearray(typedstream_body(text))
    blob[0] = 9  # a streamer version pytypedstream rejects
    with pytest.raises(typedstream.InvalidTypedStreamError):
        typedstream.unarchive_from_data(bytes(blob))
    assert decode_attributed_body(bytes(blob)) == text


@pytest.mark.parametrize(
    "blob",
    [
        None,
        b"",
        b"not a typedstream at all",
        b"\x04\x0bstreamtyped\x81\xe8\x03",  # header only
        bytes(range(256)) * 4,
    ],
)
def test_undecodable_returns_none(blob: bytes | None) -> None:
    assert decode_attributed_body(blob) is None


def test_invalid_utf8_text_is_repaired_not_lost() -> None:
    # Issue 15 item 6(a): bytes that are not UTF-8 used to lose the whole message (None, the
    # row skipped as "no text"); they are repaired with U+FFFD, the rest of the text kept.
    blob = typedstream_body("abcd and more")
    broken = blob.replace(b"abcd", b"\xff\xfe\xfd\xfc", 1)
    assert decode_attributed_body(broken) == "\ufffd" * 4 + " and more"
    assert attributed_body_bytes(broken) == b"\xff\xfe\xfd\xfc and more"
    cesu = typedstream_body(b"hi \xed\xa0\xbd\xed\xb8\x80")  # an emoji as two UTF-16 halves
    assert decode_attributed_body(cesu) == "hi \U0001f600"


def test_empty_string_decodes_to_empty() -> None:
    # The source treats "" as "no recoverable text"; the decoder reports it as is.
    assert decode_attributed_body(typedstream_body("")) == ""
