"""`stored_path`: every form a user types maps onto the path relative to the indexed folder."""

from __future__ import annotations

import pytest

from unified_kg_rag.domain.index.paths import location_index, stored_path

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
