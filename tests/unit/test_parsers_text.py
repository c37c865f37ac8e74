"""Unit tests of text decoding and the ``.txt`` / Markdown parsers."""

from __future__ import annotations

import codecs
import locale
import unicodedata

import pytest

from unified_kg_rag.adapters.parsers import MarkdownParser, TextParser, decode_text
from unified_kg_rag.adapters.parsers.plaintext import front_matter_dates, markdown_title
from unified_kg_rag.util.errors import InputError

pytestmark = pytest.mark.unit

FRENCH = (
    "Le café de la rue Saint-Honoré était fermé ce matin. Nous avons mangé une crêpe à la "
    "crème près de la tour Eiffel, puis nous sommes allés au musée. Où est la bibliothèque ? "
    "Ça dépend du quartier, mais elle ouvre à neuf heures."
)
GERMAN = (
    "Die Straße führt über die Brücke zum Schloss. Größere Häuser stehen am Ufer, "
    "und im Frühling blühen dort die Bäume. Die Bürger treffen sich gern im Café."
)
KOREAN = (
    "서울은 대한민국의 수도이며 가장 큰 도시이다. 한강이 도시를 가로질러 흐르고, 많은 사람들이 "
    "이곳에서 일하고 생활한다. 경복궁과 같은 역사적인 궁궐이 도심에 남아 있으며, 매년 많은 "
    "관광객이 찾아온다. 지하철은 도시 곳곳을 연결한다."
)


def parse_txt(data: bytes, path: str = "corpus/note.txt") -> tuple[str, str]:
    doc = TextParser().parse(data, path=path)
    encoding = doc.metadata["encoding"]
    assert isinstance(encoding, str)
    return doc.text, encoding


def assert_one_line_error(err: pytest.ExceptionInfo[InputError], path: str, reason: str) -> None:
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert reason in message
    assert err.value.path == path


def test_utf8_text_is_kept_as_is() -> None:
    text = "Héllo wörld.\tTabs stay.  Two spaces stay.\n\nNFD: " + unicodedata.normalize("NFD", "é")
    assert parse_txt(text.encode()) == (text, "utf-8")


@pytest.mark.parametrize(
    ("bom_codec", "expected"),
    [("utf-8-sig", "utf-8-sig"), ("utf-16", "utf-16-"), ("utf-32", "utf-32-")],
)
def test_byte_order_marks_decide_the_encoding(bom_codec: str, expected: str) -> None:
    text = "Grüße aus Köln. 東京にいます。"
    decoded_text, encoding = parse_txt(text.encode(bom_codec))
    assert decoded_text == text
    assert encoding.startswith(expected)


def test_utf16_big_endian_with_bom() -> None:
    data = codecs.BOM_UTF16_BE + "Plain words here.".encode("utf-16-be")
    assert parse_txt(data) == ("Plain words here.", "utf-16-be")


@pytest.mark.parametrize("sample", [FRENCH, GERMAN])
def test_latin1_text_decodes(sample: str) -> None:
    data = sample.encode("latin-1")
    with pytest.raises(UnicodeDecodeError):
        data.decode("utf-8")  # the locale's UTF-8 cannot read it: detection must
    text, encoding = parse_txt(data)
    assert text == sample
    assert encoding != "utf-8"


def test_short_french_text_is_not_read_as_central_european() -> None:
    # charset-normalizer alone ranks Windows-1250 first here, reading "crème" as "crčme"
    sample = "Paris,Le café était fermé.\nLyon,Nous avons mangé une crêpe à la crème au marché.\n"
    assert parse_txt(sample.encode("latin-1")) == (sample, "cp1252")


def test_cp949_korean_text_decodes() -> None:
    data = KOREAN.encode("cp949")
    text, encoding = parse_txt(data)
    assert text == KOREAN
    assert encoding in {"cp949", "euc_kr"}


def test_locale_preferred_encoding_is_tried_before_detection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(locale, "getpreferredencoding", lambda do_setlocale=True: "cp1252")
    sample = "Prix : 5 € le café, très cher."
    assert parse_txt(sample.encode("cp1252")) == (sample, "cp1252")


def test_newlines_are_normalised() -> None:
    assert parse_txt(b"one\r\ntwo\rthree\nfour")[0] == "one\ntwo\nthree\nfour"


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4,
        b"text then a NUL \x00 byte",
        bytes([1, 2, 3, 4, 5, 6, 7, 8, 14, 15, 16]) * 200,
    ],
    ids=["png", "nul", "controls"],
)
def test_binary_data_is_refused(data: bytes) -> None:
    with pytest.raises(InputError) as err:
        TextParser().parse(data, path="corpus/image.txt")
    assert_one_line_error(err, "corpus/image.txt", "binary data, not text")


def test_random_high_bytes_are_refused() -> None:
    import random

    rng = random.Random(7)
    data = bytes(rng.randrange(0x80, 0x100) for _ in range(4000))
    with pytest.raises(InputError) as err:
        TextParser().parse(data, path="r.txt")
    assert_one_line_error(err, "r.txt", "binary data, not text")


@pytest.mark.parametrize("data", [b"", b"   \n\t\r\n  "], ids=["empty", "whitespace"])
@pytest.mark.parametrize("parser", [TextParser(), MarkdownParser()], ids=["txt", "md"])
def test_empty_files_are_refused(data: bytes, parser: TextParser | MarkdownParser) -> None:
    with pytest.raises(InputError) as err:
        parser.parse(data, path="a/empty.txt")
    assert_one_line_error(err, "a/empty.txt", "empty document (no text)")


def test_decode_text_reports_encoding() -> None:
    decoded = decode_text(KOREAN.encode("utf-8"), path="k.txt")
    assert (decoded.text, decoded.encoding) == (KOREAN, "utf-8")


def test_five_megabyte_single_line_parses() -> None:
    data = (b"lorem ipsum dolor sit amet " * 200_000)[:5_000_000]
    text, encoding = parse_txt(data)
    assert len(text) == 5_000_000
    assert encoding == "utf-8"


def test_txt_has_no_title() -> None:
    assert TextParser().parse(b"# Looks like a heading\nbody", path="x.txt").title == ""


def test_markdown_title_and_text_as_is() -> None:
    source = "Intro line\n\n## Sub\n\n#  The Title  ##\n\nBody *text* [link](x).\n"
    doc = MarkdownParser().parse(source.encode(), path="doc.md")
    assert doc.title == "The Title"
    assert doc.text == source
    assert doc.metadata == {"encoding": "utf-8"}


def test_markdown_heading_in_code_fence_is_not_the_title() -> None:
    source = "```bash\n# install it\npip install x\n```\n\n# Real Title\n"
    assert markdown_title(source) == "Real Title"
    assert markdown_title("~~~~\n# no\n~~~\n# still code\n~~~~\n# Yes\n") == "Yes"


@pytest.mark.parametrize(
    ("source", "title"),
    [
        ("No heading\n=====\n\ntext", ""),  # setext headings are not taken
        ("#hashtag only\n", ""),  # needs a space after #
        ("# C#\n", "C#"),
        ("   # Indented three\n", "Indented three"),
        ("    # indented four is code\n", ""),
        ("#\n# Second\n", "Second"),
    ],
)
def test_markdown_title_rules(source: str, title: str) -> None:
    assert markdown_title(source) == title


def test_markdown_front_matter_states_its_dates() -> None:
    data = (b"---\ntitle: Plan\ndate: 2024-05-06\nlastmod: 2025-01-02T03:04:05Z\n"
            b"created: not a date\n---\n# Plan\n\nBody.\n")
    doc = MarkdownParser().parse(data, path="p.md")
    assert doc.metadata == {"encoding": "utf-8", "date": "2024-05-06",
                            "modified": "2025-01-02T03:04:05+00:00"}
    assert doc.title == "Plan"
    # the first of lastmod / updated / modified / last_modified wins; `...` ends it too
    assert front_matter_dates("---\nupdated: '2023-02-03'\nmodified: 2020-01-01\n...\nx") == {
        "modified": "2023-02-03"}
    # no front matter, front matter that is not a mapping or not YAML, a boolean date
    for text in ("# Plan\n\ndate: 2024-05-06\n", "---\n- a list\n---\n", "---\ndate: [\n---\n",
                 "---\ndate: true\n---\n", "Intro\n---\ndate: 2024-05-06\n---\n"):
        assert front_matter_dates(text) == {}, text
