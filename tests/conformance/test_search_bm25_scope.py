"""Conformance: BM25 statistics belong to one index and collection, and follow every write.

A graph index stores tens of thousands of short entity and relationship records next to its
text units; they must not change how text units rank (nor must another index's records).
"""

from __future__ import annotations

import asyncio

import pytest

from unified_kg_rag.domain.models import Collection, IndexRecord, SearchMode
from unified_kg_rag.ports import SearchIndex, StoreBackend

TU = Collection.TEXT_UNITS
QUERY = "alpha beta"

UNITS = [
    IndexRecord(id="t1", text="alpha beta gamma"),
    IndexRecord(id="t2", text="alpha delta"),
    IndexRecord(id="t3", text="beta epsilon zeta eta"),
    IndexRecord(id="t4", text="gamma delta"),
    IndexRecord(id="t5", text="theta iota"),
    IndexRecord(id="t6", text="iota kappa lambda"),
]


async def _ranking(idx: SearchIndex, collection: Collection = TU) -> list[tuple[str, float]]:
    hits = await idx.search(collection, query_text=QUERY, mode=SearchMode.LEXICAL, k=20)
    return [(h.id, h.score) for h in hits]


def _assert_same(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-9)


def test_other_collections_and_indexes_do_not_change_text_unit_bm25(
    backend: StoreBackend,
) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        await idx.upsert(TU, UNITS)
        before = await _ranking(idx)
        assert [i for i, _ in before] == ["t1", "t2", "t3"]
        # many short records holding one query term only: file-wide statistics would make
        # "alpha" common (IDF near zero), "beta" rare, and put t3 above t2
        await idx.upsert(Collection.ENTITIES,
                         [IndexRecord(id=f"e{i}", text="alpha") for i in range(300)])
        await idx.upsert(Collection.RELATIONSHIPS,
                         [IndexRecord(id=f"r{i}", text=f"alpha x{i}") for i in range(100)])
        other = backend.search_index("other")
        await other.upsert(TU, [IndexRecord(id=f"o{i}", text="alpha alpha") for i in range(200)])
        _assert_same(await _ranking(idx), before)
        await idx.delete(Collection.ENTITIES, [f"e{i}" for i in range(150)])
        await idx.upsert(Collection.ENTITIES, [IndexRecord(id="e0", text="beta beta beta")])
        _assert_same(await _ranking(idx), before)
        entity_hits = await _ranking(idx, Collection.ENTITIES)
        assert entity_hits[0][0] == "e0"
        assert len(entity_hits) == 20

    asyncio.run(body())


def test_same_collection_writes_do_change_bm25(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        await idx.upsert(TU, UNITS)
        before = await _ranking(idx)
        await idx.upsert(TU, [IndexRecord(id=f"z{i}", text="alpha") for i in range(20)])
        after = dict(await _ranking(idx))
        assert after["t1"] != pytest.approx(dict(before)["t1"], rel=1e-6)
        await idx.delete(TU, [f"z{i}" for i in range(20)])
        _assert_same(await _ranking(idx), before)

    asyncio.run(body())


def test_statistics_after_replacements_and_deletes_match_a_fresh_index(
    backend: StoreBackend,
) -> None:
    async def body() -> None:
        edited, fresh = backend.search_index("edited"), backend.search_index("fresh")
        await edited.upsert(TU, [IndexRecord(id="t1", text="alpha alpha alpha words"),
                                 IndexRecord(id="gone", text="beta beta"), *UNITS[1:]])
        await edited.upsert(TU, [UNITS[0], IndexRecord(id="t4", text="old text"), UNITS[3]])
        assert await edited.delete(TU, ["gone", "missing"]) == 1
        await fresh.upsert(TU, UNITS)
        _assert_same(await _ranking(edited), await _ranking(fresh))

    asyncio.run(body())
