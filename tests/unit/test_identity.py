import pytest

from unified_kg_rag.domain.identity import (
    document_id,
    entity_id,
    entity_key,
    relationship_id,
    text_unit_id,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("ACME Corp.", "Acme Corp"),
        ("New_York", "new york"),
        ("Jean-Paul  Sartre", "jean paul sartre"),
        ("“Quoted” Name", "quoted name"),
        ("Ｔｏｋｙｏ", "tokyo"),  # NFKC folds full-width letters
        ("Smith, John", "smith john"),
    ],
)
def test_equivalent_names_share_a_key(a: str, b: str) -> None:
    assert entity_key(a) == entity_key(b)
    assert entity_id(a) == entity_id(b)


@pytest.mark.parametrize(("a", "b"), [("C++", "C#"), ("R&D", "RD"), ("東京", "京都"), ("1.5", "15")])
def test_symbols_and_scripts_are_kept(a: str, b: str) -> None:
    assert entity_key(a) != entity_key(b)


@pytest.mark.parametrize("name", ["...", "!!", "'", "-", "“”", "_"])
def test_non_blank_name_never_gives_an_empty_key(name: str) -> None:
    assert entity_key(name) != ""


def test_ids_are_sha256_hex_and_stable() -> None:
    doc = document_id("/corpus", "a/b.txt")
    assert len(doc) == 64 and int(doc, 16) >= 0
    assert doc == document_id("/corpus", "a/b.txt")
    assert doc != document_id("/other", "a/b.txt")
    assert text_unit_id(doc, 0, "x") != text_unit_id(doc, 1, "x")
    assert relationship_id("A", "B", "knows") != relationship_id("B", "A", "knows")
    assert relationship_id("ACME Corp.", "B", "owns") == relationship_id("acme corp", "b", "OWNS")
