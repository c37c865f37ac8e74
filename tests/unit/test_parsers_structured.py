"""Unit tests of the CSV, JSON and JSON Lines parsers."""

from __future__ import annotations

import json

import pytest

from unified_kg_rag.adapters.parsers import CsvParser, JsonLinesParser, JsonParser
from unified_kg_rag.adapters.parsers.json_records import render_json
from unified_kg_rag.domain.text.analysis import sentence_spans
from unified_kg_rag.util.errors import InputError

pytestmark = pytest.mark.unit


def assert_one_line_error(err: pytest.ExceptionInfo[InputError], path: str, reason: str) -> None:
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert reason in message


# --------------------------------------------------------------------------- CSV


def test_csv_rows_render_with_headers() -> None:
    data = b"name,city,age\r\nAnn,Paris,31\r\nBo,,40\r\n\r\nCy,\"Rome, Italy\",22\r\n"
    doc = CsvParser().parse(data, path="people.csv")
    assert doc.text == (
        "name: Ann; city: Paris; age: 31\n\n"
        "name: Bo; age: 40\n\n"
        "name: Cy; city: Rome, Italy; age: 22"
    )
    assert doc.metadata == {"encoding": "utf-8", "rows": 3, "columns": 3, "delimiter": ","}
    assert doc.title == ""


@pytest.mark.parametrize("delimiter", [";", "\t", "|"])
def test_csv_delimiter_is_sniffed(delimiter: str) -> None:
    rows = [["product", "price"], ["tea", "3,50"], ["coffee", "4,20"]]
    data = "\n".join(delimiter.join(r) for r in rows).encode()
    doc = CsvParser().parse(data, path="p.csv")
    assert doc.text == "product: tea; price: 3,50\n\nproduct: coffee; price: 4,20"
    assert doc.metadata["delimiter"] == delimiter


def test_csv_quoted_newlines_blank_headers_and_extra_cells() -> None:
    data = b'id,,note\n1,x,"line one\nline two"\n2,y,z,extra\n'
    doc = CsvParser().parse(data, path="n.csv")
    assert doc.text.split("\n\n") == [
        "id: 1; column 2: x; note: line one line two",
        "id: 2; column 2: y; note: z; column 4: extra",
    ]


def test_csv_header_only_is_refused() -> None:
    with pytest.raises(InputError) as err:
        CsvParser().parse(b"a,b,c\n", path="h.csv")
    assert_one_line_error(err, "h.csv", "no data rows")


def test_csv_long_cell_is_kept_whole() -> None:
    huge = "x" * 200_000  # over the csv module's default field size limit of 131,072
    doc = CsvParser().parse(f"a,b\n1,2\n3,{huge}\n".encode(), path="big.csv")
    assert doc.text.split("\n\n")[1] == f"a: 3; b: {huge}"


def test_csv_malformed_row_names_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import csv

    from unified_kg_rag.adapters.parsers import tabular

    previous = csv.field_size_limit(1000)
    monkeypatch.setattr(tabular, "_MAX_FIELD_CHARS", 1000)
    try:
        with pytest.raises(InputError) as err:
            CsvParser().parse(f"a,b\n1,2\n3,{'x' * 2000}\n".encode(), path="big.csv")
    finally:
        csv.field_size_limit(previous)
    assert_one_line_error(err, "big.csv", "malformed CSV at line 3: field larger than")


def test_csv_in_latin1_decodes() -> None:
    data = "ville,description\nParis,Le café était fermé ce matin près de la tour.\n"
    doc = CsvParser().parse(data.encode("latin-1"), path="fr.csv")
    assert "description: Le café était fermé" in doc.text


def test_csv_rows_are_sentences_of_their_own() -> None:
    """Issue 16 item 2: rows without a full stop ran together into one "sentence" (a quote
    or a chunk's sentence boundary joined them); each row is now its own paragraph."""
    data = b"name,company,founded\nJane Doe,Acme Ltd,1990\nJohn Roe,Globex,1995\nAl Poe,Initech,2001\n"
    doc = CsvParser().parse(data, path="founders.csv")
    rows = [doc.text[a:b] for a, b in sentence_spans(doc.text)]
    assert rows == [
        "name: Jane Doe; company: Acme Ltd; founded: 1990",
        "name: John Roe; company: Globex; founded: 1995",
        "name: Al Poe; company: Initech; founded: 2001",
    ]


# --------------------------------------------------------------------------- JSON


def test_json_list_of_objects_renders_key_value_blocks() -> None:
    value = [
        {"name": "Ann", "address": {"city": "Paris", "zip": "75001"}, "tags": ["a", "b"]},
        {"name": "Bo", "active": True, "score": 1.5, "boss": None, "empty": {}, "none": []},
    ]
    doc = JsonParser().parse(json.dumps(value).encode(), path="people.json")
    assert doc.text == (
        "name: Ann.\naddress.city: Paris.\naddress.zip: 75001.\ntags[0]: a.\ntags[1]: b.\n\n"
        "name: Bo.\nactive: true.\nscore: 1.5.\nboss: null."
    )
    assert doc.metadata == {"encoding": "utf-8", "records": 2}


def test_json_object_with_title_and_text_is_a_document() -> None:
    value = {"title": "Seoul", "text": "Seoul is the capital.\n\nIt has a river.", "id": 7}
    doc = JsonParser().parse(json.dumps(value, ensure_ascii=False).encode(), path="s.json")
    assert (doc.title, doc.text) == ("Seoul", "Seoul is the capital.\n\nIt has a river.")


def test_json_object_with_non_string_text_renders_generically() -> None:
    doc = JsonParser().parse(b'{"title": "T", "text": {"body": "B"}}', path="o.json")
    assert (doc.title, doc.text) == ("T", "title: T.\ntext.body: B.")


def test_json_title_without_text_is_the_document_title() -> None:
    """Issue 16 item 9: the docs promise the `title` field is the title; it was ignored unless
    a `text` field existed too."""
    value = {"title": "Head of research", "company": "Acme Inc.", "since": 1995}
    doc = JsonParser().parse(json.dumps(value).encode(), path="jobs/role.json")
    assert doc.title == "Head of research"
    assert doc.text == "title: Head of research.\ncompany: Acme Inc.\nsince: 1995."


@pytest.mark.parametrize("title", [7.5, None, ["a"], {"k": "v"}])
def test_json_title_that_is_not_a_string_is_not_the_title(title: object) -> None:
    doc = JsonParser().parse(json.dumps({"title": title, "x": "y"}).encode(), path="n.json")
    assert doc.title == ""


def test_json_fields_are_sentences_of_their_own() -> None:
    """Issue 16 item 2: `title: … company: …` read as one sentence (no full stop between the
    lines); each field now ends as a sentence, each record is a paragraph."""
    value = [{"title": "Head of research", "company": "Acme Inc.", "city": "Leeds"},
             {"title": "Founder", "company": "Globex", "note": "Is it \"big\"?"}]
    doc = JsonParser().parse(json.dumps(value).encode(), path="roles.json")
    sentences = [doc.text[a:b] for a, b in sentence_spans(doc.text)]
    assert sentences == [
        "title: Head of research.", "company: Acme Inc.", "city: Leeds.",
        "title: Founder.", "company: Globex.", 'note: Is it "big"?',
    ]
    assert doc.text.split("\n\n")[1].startswith("title: Founder.")


def test_render_json_scalars_and_nested_lists() -> None:
    assert render_json("just text") == "just text"
    assert render_json(3) == "3"
    assert render_json({"m": [[1, 2], {"k": "v"}]}) == "m[0][0]: 1.\nm[0][1]: 2.\nm[1].k: v."


def test_malformed_json_names_line_and_column() -> None:
    data = b'{\n  "a": 1,\n  "b": oops\n}'
    with pytest.raises(InputError) as err:
        JsonParser().parse(data, path="bad.json")
    assert_one_line_error(err, "bad.json", "invalid JSON at line 3, column 8")


def test_json_nested_too_deeply_is_refused() -> None:
    data = b"[" * 100_000 + b"]" * 100_000
    with pytest.raises(InputError) as err:
        JsonParser().parse(data, path="deep.json")
    assert_one_line_error(err, "deep.json", "nested too deeply")


@pytest.mark.parametrize("data", [b"[]", b"{}", b'""', b"[{}, []]"])
def test_json_without_text_is_refused(data: bytes) -> None:
    with pytest.raises(InputError) as err:
        JsonParser().parse(data, path="e.json")
    assert_one_line_error(err, "e.json", "empty document (no text)")


# --------------------------------------------------------------------------- JSONL


def test_jsonl_lines_become_paragraphs() -> None:
    data = b'{"q": "What?", "a": {"text": "That."}}\n\n["x", "y"]\r\n"plain line"\n'
    doc = JsonLinesParser().parse(data, path="qa.jsonl")
    assert doc.text == "q: What?\na.text: That.\n\n[0]: x.\n[1]: y.\n\nplain line"
    assert doc.metadata == {"encoding": "utf-8", "records": 3}


def test_malformed_jsonl_names_the_line() -> None:
    data = b'{"ok": 1}\n{"ok": 2}\n\n{"broken": \n{"ok": 4}\n'
    with pytest.raises(InputError) as err:
        JsonLinesParser().parse(data, path="log.jsonl")
    assert_one_line_error(err, "log.jsonl", "invalid JSON on line 4")


def test_jsonl_binary_is_refused() -> None:
    with pytest.raises(InputError) as err:
        JsonLinesParser().parse(b'{"a": 1}\n\x00\x01\x02', path="b.jsonl")
    assert_one_line_error(err, "b.jsonl", "binary data, not text")
