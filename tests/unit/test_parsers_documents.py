"""Unit tests of the HTML, PDF and DOCX parsers, on files generated inside the tests."""

from __future__ import annotations

import io

import pytest

from unified_kg_rag.adapters.parsers import DocxParser, HtmlParser, PdfParser
from unified_kg_rag.domain.text.analysis import sentence_spans
from unified_kg_rag.util.errors import InputError

pytestmark = pytest.mark.unit


def assert_one_line_error(err: pytest.ExceptionInfo[InputError], path: str, reason: str) -> None:
    message = str(err.value)
    assert "\n" not in message
    assert "Traceback" not in message
    assert message.startswith(f"{path}: ")
    assert reason in message


# --------------------------------------------------------------------------- HTML

PAGE = """<!doctype html>
<html lang="en"><head><title> The   Page </title>
<style>p { color: red }</style><script>var hidden = "script text";</script></head>
<body><nav><a href="/">Home</a> <a href="/about">About us</a></nav>
<h1>Main heading</h1>
<p>First   paragraph
spans <b>two</b> <i>source</i> lines.</p><p>Second paragraph.<br>After a break.</p>
<ul><li>item one</li><li>item <em>two</em></li></ul>
<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ann</td><td>31</td></tr></table>
<pre>def f():
    return 1</pre>
<!-- a comment --><p>Last words.</p></body></html>"""


def test_html_visible_text_blocks_and_title() -> None:
    doc = HtmlParser().parse(PAGE.encode(), path="site/index.html")
    assert doc.title == "The Page"
    assert doc.text == (
        "Main heading\n\n"
        "First paragraph spans two source lines.\n\n"
        "Second paragraph.\nAfter a break.\n\n"
        "item one\nitem two\n\n"
        "Name | Age\n\nAnn | 31\n\n"
        "def f():\n    return 1\n\n"
        "Last words."
    )
    assert doc.metadata == {"encoding": "utf-8", "language": "en"}
    for hidden in ("script text", "color", "About us", "a comment", "The Page"):
        assert hidden not in doc.text


def test_html_title_falls_back_to_first_h1() -> None:
    html = "<html><body><h2>Minor</h2><h1>Big <span>One</span></h1><p>x</p><h1>Later</h1>"
    assert HtmlParser().parse(html.encode(), path="a.htm").title == "Big One"


def test_html_in_latin1_decodes() -> None:
    html = (
        "<html><body><p>Le café de la rue Saint-Honoré était fermé ce matin. Nous avons "
        "mangé une crêpe à la crème près de la tour Eiffel.</p></body></html>"
    )
    doc = HtmlParser().parse(html.encode("latin-1"), path="fr.html")
    assert "crêpe à la crème" in doc.text
    assert doc.metadata["encoding"] != "utf-8"


@pytest.mark.parametrize(
    "html",
    [
        "<html><head><title>Only a title</title></head><body></body></html>",
        "<html><body><script>alert(1)</script><nav>menu</nav>  </body></html>",
    ],
)
def test_html_without_visible_text_is_refused(html: str) -> None:
    with pytest.raises(InputError) as err:
        HtmlParser().parse(html.encode(), path="blank.html")
    assert_one_line_error(err, "blank.html", "empty document (no text)")


def test_deeply_nested_html_does_not_overflow() -> None:
    html = "<div>" * 3000 + "deep text" + "</div>" * 3000
    assert HtmlParser().parse(html.encode(), path="deep.html").text == "deep text"


# --------------------------------------------------------------------------- PDF


def _pdf_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(
    pages: list[list[str]], *, title: str | None = None, heading: str | None = None,
    info_extra: str = "",
) -> bytes:
    """Write a minimal PDF 1.4 file: one Helvetica text line per string, one page per list.

    ``heading``: a line set in 20 pt above the first page's 12 pt lines. ``info_extra``:
    entries added to the information dictionary (written when ``title`` is given).
    """
    page_ids = [4 + 2 * i for i in range(len(pages))]
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for page_id, lines in zip(page_ids, pages, strict=True):
        shows = " ".join(f"({_pdf_string(line)}) Tj T*" for line in lines)
        content = f"BT /F1 12 Tf 72 720 Td 14 TL {shows} ET".encode("latin-1") if lines else b""
        if heading is not None and page_id == page_ids[0]:
            top = f"BT /F1 20 Tf 72 750 Td ({_pdf_string(heading)}) Tj ET ".encode("latin-1")
            content = top + content
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources "
            f"<< /Font << /F1 3 0 R >> >> /Contents {page_id + 1} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content))
    info = ""
    if title is not None:
        objects.append(f"<< /Title ({title}) /Author (Ann Author){info_extra} >>".encode())
        info = f" /Info {len(objects)} 0 R"
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    trailer = f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R{info} >>\n"
    out += trailer.encode() + b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def test_pdf_pages_title_and_author() -> None:
    data = make_pdf(
        [["Graph RAG works.", "It reads (many) files."], ["Page two text."]], title="My Paper"
    )
    doc = PdfParser().parse(data, path="papers/p.pdf")
    assert doc.title == "My Paper"
    assert doc.metadata == {"pages": 2, "author": "Ann Author"}
    first, second = doc.text.split("\n\n")
    assert first.split("\n") == ["Graph RAG works.", "It reads (many) files."]
    assert second == "Page two text."


def test_pdf_states_its_modification_and_creation_dates() -> None:
    data = make_pdf([["Dated."]], title="T", info_extra=(
        " /CreationDate (D:20210304050607Z) /ModDate (D:20220102030405+02'00')"))
    meta = PdfParser().parse(data, path="d.pdf").metadata
    assert meta["created"] == "2021-03-04T05:06:07+00:00"
    assert meta["modified"] == "2022-01-02T03:04:05+02:00"
    # a malformed date only loses the field
    broken = make_pdf([["Dated."]], title="T", info_extra=" /ModDate (yesterday)")
    assert "modified" not in PdfParser().parse(broken, path="b.pdf").metadata


def test_pdf_title_is_a_paragraph_of_its_own() -> None:
    """Issue 16 item 2: the title line ran into the first sentence ("Annual Report Acme Ltd.
    was founded ..."); it is now its own paragraph, so it is its own sentence."""
    data = make_pdf([["Annual Report", "Acme Ltd. was founded in 1990 by Jane Doe in Leeds.",
                      "It makes tea."]], title="Annual  report")
    doc = PdfParser().parse(data, path="report.pdf")
    assert doc.title == "Annual report"
    assert doc.text == (
        "Annual Report\n\nAcme Ltd. was founded in 1990 by Jane Doe in Leeds.\nIt makes tea."
    )
    title, first = sentence_spans(doc.text)[:2]
    assert doc.text[title[0] : title[1]] == "Annual Report"
    assert doc.text[first[0] :].startswith("Acme Ltd. was founded")


def test_pdf_heading_in_a_larger_font_is_the_title_paragraph() -> None:
    data = make_pdf([["Acme Ltd. was founded in 1990.", "It makes tea."]],
                    heading="Company History")
    doc = PdfParser().parse(data, path="history.pdf")
    assert doc.title == "Company History"
    assert doc.text.split("\n\n") == [
        "Company History", "Acme Ltd. was founded in 1990.\nIt makes tea."
    ]


def test_pdf_title_metadata_not_on_the_page_changes_no_text() -> None:
    lines = ["Graph RAG works.", "It reads files."]
    doc = PdfParser().parse(make_pdf([lines], title="Other"), path="p.pdf")
    assert (doc.title, doc.text) == ("Other", "\n".join(lines))


def test_pdf_without_text_layer_is_refused() -> None:
    with pytest.raises(InputError) as err:
        PdfParser().parse(make_pdf([[], []]), path="scan.pdf")
    assert_one_line_error(err, "scan.pdf", "no extractable text (scanned PDF?)")


@pytest.mark.parametrize("cut", [0.3, 0.6, 0.95])
def test_truncated_pdf_is_refused_with_one_line(cut: float) -> None:
    data = make_pdf([["Some text here."]] * 3)
    with pytest.raises(InputError) as err:
        PdfParser().parse(data[: int(len(data) * cut)], path="broken.pdf")
    assert_one_line_error(err, "broken.pdf", "cannot read PDF: ")


def test_not_a_pdf_is_refused() -> None:
    with pytest.raises(InputError) as err:
        PdfParser().parse(b"this is plain text, not a PDF at all", path="fake.pdf")
    assert_one_line_error(err, "fake.pdf", "cannot read PDF: ")


def _encrypt(data: bytes, user_password: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user_password, owner_password="owner", algorithm="RC4-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_password_protected_pdf_is_refused() -> None:
    data = _encrypt(make_pdf([["Secret text."]]), "s3cret")
    with pytest.raises(InputError) as err:
        PdfParser().parse(data, path="locked.pdf")
    assert_one_line_error(err, "locked.pdf", "encrypted PDF")


def test_pdf_encrypted_with_empty_user_password_is_read() -> None:
    data = _encrypt(make_pdf([["Open to read."]]), "")
    assert PdfParser().parse(data, path="perm.pdf").text == "Open to read."


def test_empty_pdf_file_is_refused() -> None:
    with pytest.raises(InputError) as err:
        PdfParser().parse(b"", path="zero.pdf")
    assert_one_line_error(err, "zero.pdf", "empty document (no text)")


# --------------------------------------------------------------------------- DOCX


def make_docx() -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.author = "Bo Writer"
    document.add_paragraph("Quarterly Report", style="Title")
    document.add_heading("Overview", level=1)
    document.add_paragraph("Revenue grew in every region.")
    document.add_paragraph("")  # empty paragraphs are skipped
    document.add_paragraph("first point", style="List Bullet")
    document.add_paragraph("second point", style="List Bullet")
    table = document.add_table(rows=2, cols=3)
    for cell, value in zip(table.rows[0].cells, ["Region", "Q1", "Q2"], strict=True):
        cell.text = value
    merged = table.cell(1, 1).merge(table.cell(1, 2))
    table.cell(1, 0).text = "North"
    merged.text = "n/a"
    document.add_paragraph("Closing words.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_docx_paragraphs_lists_and_tables_in_order() -> None:
    doc = DocxParser().parse(make_docx(), path="reports/q.docx")
    assert doc.text == (
        "Quarterly Report\n\n"
        "Overview\n\n"
        "Revenue grew in every region.\n\n"
        "first point\nsecond point\n\n"
        "Region | Q1 | Q2\n\nNorth | n/a\n\n"
        "Closing words."
    )
    assert doc.title == "Quarterly Report"
    assert doc.metadata == {"author": "Bo Writer"}


def test_docx_title_property_wins() -> None:
    import docx

    document = docx.Document()
    document.core_properties.title = "From Properties"
    document.add_heading("A Heading", level=1)
    document.add_paragraph("Body.")
    out = io.BytesIO()
    document.save(out)
    assert DocxParser().parse(out.getvalue(), path="t.docx").title == "From Properties"


def test_docx_title_falls_back_to_first_heading() -> None:
    import docx

    document = docx.Document()
    document.add_paragraph("Plain opening line.")
    document.add_heading("First Heading", level=1)
    document.add_heading("Second Heading", level=1)
    out = io.BytesIO()
    document.save(out)
    assert DocxParser().parse(out.getvalue(), path="h.docx").title == "First Heading"


def test_docx_without_text_is_refused() -> None:
    import docx

    out = io.BytesIO()
    docx.Document().save(out)
    with pytest.raises(InputError) as err:
        DocxParser().parse(out.getvalue(), path="blank.docx")
    assert_one_line_error(err, "blank.docx", "empty document (no text)")


@pytest.mark.parametrize(
    "data",
    [b"PK\x03\x04 not really a zip archive", b"plain text pretending to be docx"],
    ids=["bad-zip", "text"],
)
def test_corrupt_docx_is_refused(data: bytes) -> None:
    with pytest.raises(InputError) as err:
        DocxParser().parse(data, path="bad.docx")
    assert_one_line_error(err, "bad.docx", "cannot read DOCX: ")


def test_truncated_docx_is_refused() -> None:
    data = make_docx()
    with pytest.raises(InputError) as err:
        DocxParser().parse(data[: len(data) // 2], path="half.docx")
    assert_one_line_error(err, "half.docx", "cannot read DOCX: ")
