"""`stored_path`: every form a user types maps onto the path relative to the indexed folder."""

from __future__ import annotations

import pytest

from unified_kg_rag.domain.index.paths import full_location, location_index, stored_path

KNOWN = location_index([("/home/me/corpus", "notes/a.md"), ("/home/me/corpus/", "b.txt"),
                        ("/srv/other", "notes/a.md")])


@pytest.mark.parametrize(("typed", "stored"), [
    ("notes/a.md", "notes/a.md"),
    ("./notes/a.md", "notes/a.md"),
    ("notes/../b.txt", "b.txt"),
    ("/home/me/corpus/b.txt", "b.txt"),
    ("/home/me/corpus/./notes/a.md", "notes/a.md"),
    ("corpus/b.txt", "b.txt"),  # from the current directory /home/me
    ("missing.md", "missing.md"),
    ("/elsewhere/b.txt", "/elsewhere/b.txt"),
])
def test_stored_path(typed: str, stored: str) -> None:
    assert stored_path(typed, KNOWN, cwd="/home/me") == stored


def test_location_index_joins_scope_and_path_once() -> None:
    assert KNOWN["/home/me/corpus/b.txt"] == "b.txt"
    assert KNOWN["/srv/other/notes/a.md"] == "notes/a.md"


def test_full_location_names_one_document_only_for_an_absolute_or_cwd_path() -> None:
    assert full_location("/srv/other/notes/a.md", KNOWN) == "/srv/other/notes/a.md"
    assert full_location("corpus/notes/a.md", KNOWN, cwd="/home/me") == "/home/me/corpus/notes/a.md"
    assert full_location("notes/a.md", KNOWN, cwd="/nowhere") is None  # shown form: two folders


def test_a_name_typed_in_nfd_matches_its_nfc_record() -> None:
    import unicodedata

    known = location_index([("/home/me/corpus", "deep er/größe.txt")])
    typed = unicodedata.normalize("NFD", "deep er/größe.txt")
    assert typed != "deep er/größe.txt"
    assert stored_path(typed, known) == "deep er/größe.txt"
    assert full_location("/home/me/corpus/" + typed, known) == "/home/me/corpus/deep er/größe.txt"
