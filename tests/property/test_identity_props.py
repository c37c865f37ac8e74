"""Identity-key laws (DESIGN.md §4): idempotent, non-empty for non-blank names, case-blind."""

import string

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from unified_kg_rag.domain.identity import entity_key

pytestmark = pytest.mark.unit

names = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != "")


@given(names)
def test_key_is_never_empty(name: str) -> None:
    assert entity_key(name) != ""


@given(names)
@example("x. .")  # trailing punctuation after a space: once kept "x."
@example("Acme Corp ; ")
def test_key_is_its_own_key(name: str) -> None:
    key = entity_key(name)
    assert entity_key(key) == key


@given(st.text(alphabet=string.ascii_letters + " .,-_", min_size=1, max_size=20))
def test_ascii_case_does_not_matter(name: str) -> None:
    assert entity_key(name.upper()) == entity_key(name.lower())
