"""Any query text is safe for FTS5, and a word of any script finds the text it came from."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.adapters.sqlite.search_index import fts_query
from unified_kg_rag.domain.models import Collection, IndexRecord, SearchMode
from unified_kg_rag.domain.text import lexical_terms

pytestmark = pytest.mark.integration

TU = Collection.TEXT_UNITS
_SCRIPTS = "abcxyzéüßøİıДжλΩאبअ東京都北京中国서울에서ひらがなカタカナ"


def test_fts_query_quotes_distinct_terms() -> None:
    assert fts_query('Say "hi" say') == '"say" OR "hi"'
    assert fts_query("東京都") == '"東京" OR "京都"'
    assert fts_query(" ,.!? ") == ""


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
