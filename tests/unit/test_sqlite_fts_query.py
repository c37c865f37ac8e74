"""Any query text is safe, FTS5 indexes exactly the lexical terms, and a word of any script
finds the text it came from."""

from __future__ import annotations

import asyncio
import sqlite3
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.adapters.sqlite.lexical import index_records, namespace_number, prefixed
from unified_kg_rag.adapters.sqlite.migrations import apply_migrations
from unified_kg_rag.domain.models import Collection, IndexRecord, SearchMode
from unified_kg_rag.domain.text.analysis import lexical_terms

pytestmark = pytest.mark.integration

TU = Collection.TEXT_UNITS
_SCRIPTS = "abcxyzéüßøİıДжλΩאبअ東京都北京中国서울에서ひらがなカタカナ"


def _indexed_terms(text: str) -> tuple[int, Counter[str]]:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        apply_migrations(conn, location=":memory:")
        ns = namespace_number(conn, "default", TU.value)
        index_records(conn, ns, [(7, text)])
        rows = conn.execute("SELECT term, doc FROM search_postings").fetchall()
    finally:
        conn.close()
    assert {doc for _, doc in rows} <= {7}
    return ns, Counter(term for term, _ in rows)


def test_fts5_indexes_namespaced_terms_as_given() -> None:
    ns, terms = _indexed_terms('Say "hi" say O’Neil U.S. 東京都 Café: x')
    expected = ["say", "hi", "say", "o'neil", "u.s", "東京", "京都", "cafe", "x"]
    assert terms == Counter(prefixed(ns, t) for t in expected)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=60))
def test_fts5_tokens_are_exactly_the_lexical_terms(text: str) -> None:
    ns, terms = _indexed_terms(text)
    assert terms == Counter(prefixed(ns, t) for t in lexical_terms(text))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(query=st.text(max_size=40))
def test_any_query_text_searches_without_error(tmp_path_factory: pytest.TempPathFactory,
                                               query: str) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz-query.db"

    async def body() -> None:
        async with SqliteBackend(path) as backend:
            idx = backend.search_index("default")
            if await idx.count(TU) == 0:
                await idx.upsert(TU, [IndexRecord(id="a", text='AND OR NOT "near" * ^ : ( )')])
            hits = await idx.search(TU, query_text=query, mode=SearchMode.LEXICAL)
            assert len(hits) <= 1

    asyncio.run(body())


@settings(max_examples=100, deadline=None)
@given(
    words=st.lists(st.text(alphabet=_SCRIPTS, min_size=1, max_size=6), min_size=1, max_size=5),
    pick=st.integers(min_value=0),
)
def test_each_word_finds_its_text(tmp_path_factory: pytest.TempPathFactory, words: list[str],
                                  pick: int) -> None:
    path = tmp_path_factory.mktemp("words") / "ukr.db"
    word = words[pick % len(words)]

    async def body() -> None:
        async with SqliteBackend(path) as backend:
            idx = backend.search_index("default")
            await idx.upsert(TU, [IndexRecord(id="doc", text=" ".join(words)),
                                  IndexRecord(id="other", text="unrelated filler text")])
            hits = await idx.search(TU, query_text=word, mode=SearchMode.LEXICAL)
            ids = [h.id for h in hits]
            assert "doc" in ids, (word, lexical_terms(word))

    asyncio.run(body())
