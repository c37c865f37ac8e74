"""Conformance suite of `SearchIndex`: every backend must pass it unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from tests.conformance.conftest import BACKEND_FACTORIES, BACKEND_PARAMS, SQLITE_ANN_PARAM
from unified_kg_rag.domain.models import Collection, IndexRecord, SearchMode
from unified_kg_rag.ports import Filters, StoreBackend
from unified_kg_rag.util.errors import EmbeddingMismatchError

TU = Collection.TEXT_UNITS


@pytest.fixture(params=[*BACKEND_PARAMS, SQLITE_ANN_PARAM])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreBackend]:
    """Every backend of the conformance suite, plus SQLite served by its HNSW index."""
    store = BACKEND_FACTORIES[request.param](request, tmp_path)
    yield store
    asyncio.run(store.aclose())


def rec(id_: str, text: str, **fields: str | int | float | bool | None) -> IndexRecord:
    return IndexRecord(id=id_, text=text, fields=dict(fields))


def unit(*values: float) -> NDArray[np.float32]:
    v = np.asarray(values, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_upsert_get_count_and_order(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        records = [rec("a", "alpha text", document_id="d1", n=1), rec("b", "beta"), rec("c", "")]
        await idx.upsert(TU, records)
        assert await idx.count(TU) == 3
        assert await idx.count(Collection.ENTITIES) == 0
        got = await idx.get(TU, ["c", "missing", "a"])
        assert [r.id for r in got] == ["c", "a"]
        assert got[1] == records[0]
        assert await idx.get(Collection.ENTITIES, ["a"]) == []

    asyncio.run(body())


def test_upsert_replaces_whole_record(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        await idx.upsert(TU, [rec("a", "old walrus", tag="x")], np.eye(1, 4, dtype=np.float32))
        await idx.upsert(TU, [rec("a", "new penguin", tag="y")])
        assert await idx.get(TU, ["a"]) == [rec("a", "new penguin", tag="y")]
        assert await idx.count(TU) == 1
        assert await idx.search(TU, query_text="walrus", mode=SearchMode.LEXICAL) == []
        hits = await idx.search(TU, query_text="penguin", mode=SearchMode.LEXICAL)
        assert [h.id for h in hits] == ["a"]
        assert hits[0].fields == {"tag": "y"}
        assert await idx.existing_ids(TU, ["a"]) == set()  # replaced without a vector

    asyncio.run(body())


def test_delete_and_existing_ids(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        vecs = np.stack([unit(1, 0, 0), unit(0, 1, 0)])
        await idx.upsert(TU, [rec("a", "apple"), rec("b", "banana")], vecs)
        await idx.upsert(TU, [rec("c", "cherry")])
        assert await idx.existing_ids(TU, ["a", "b", "c", "zz"]) == {"a", "b"}
        assert await idx.delete(TU, ["a", "zz"]) == 1
        assert await idx.delete(TU, ["a"]) == 0
        assert await idx.count(TU) == 2
        assert await idx.search(TU, query_text="apple", mode=SearchMode.LEXICAL) == []
        hits = await idx.search(TU, query_vector=unit(1, 0, 0), mode=SearchMode.VECTOR, k=5)
        assert [h.id for h in hits] == ["b"]

    asyncio.run(body())


def test_searches_see_every_later_write(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        q = unit(1, 0, 0)

        async def ids() -> list[str]:
            return [h.id for h in await idx.search(TU, query_vector=q, mode=SearchMode.VECTOR)]

        await idx.upsert(TU, [rec("a", "apple")], np.stack([unit(1, 0, 0)]))
        assert await ids() == ["a"]
        await idx.upsert(TU, [rec("b", "banana")], np.stack([unit(1, 0.1, 0)]))
        assert await ids() == ["a", "b"]
        await idx.upsert(TU, [rec("a", "apple")], np.stack([unit(0, 1, 0)]))
        assert await ids() == ["b", "a"]
        await idx.upsert(Collection.ENTITIES, [rec("e", "apple")], np.stack([unit(1, 0, 0)]))
        await idx.delete(TU, ["b"])
        assert await ids() == ["a"]
        await idx.upsert(TU, [rec("a", "apple")])
        assert await ids() == []

    asyncio.run(body())


def test_upsert_validates_vectors(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        with pytest.raises(ValueError):
            await idx.upsert(TU, [rec("a", "x"), rec("b", "y")], np.zeros((1, 4), np.float32))
        await idx.bind_embedding("model-a", 4)
        with pytest.raises(EmbeddingMismatchError):
            await idx.upsert(TU, [rec("a", "x")], np.ones((1, 3), np.float32))
        assert await idx.count(TU) == 0
        for bad in (np.nan, np.inf):
            with pytest.raises(ValueError, match="NaN or infinite"):
                await idx.upsert(TU, [rec("a", "x")], np.full((1, 4), bad, np.float32))
        assert await idx.count(TU) == 0
        await idx.upsert(TU, [rec("a", "x")], np.full((1, 4), 3.0, np.float32))
        hits = await idx.search(TU, query_vector=np.ones(4, np.float32), mode=SearchMode.VECTOR)
        assert hits[0].score == pytest.approx(1.0, abs=1e-5)  # stored normalised

    asyncio.run(body())


def test_bind_embedding(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        assert await idx.embedding() is None
        await idx.bind_embedding("model-a", 4)
        await idx.bind_embedding("model-a", 4)
        assert await idx.embedding() == ("model-a", 4)
        await idx.bind_embedding("model-b", 8)  # no vectors yet: re-binding is allowed
        assert await idx.embedding() == ("model-b", 8)
        await idx.upsert(TU, [rec("a", "x")], np.ones((1, 8), np.float32))
        for model, dim in (("model-c", 8), ("model-b", 4)):
            with pytest.raises(EmbeddingMismatchError) as err:
                await idx.bind_embedding(model, dim)
            assert "model-b" in str(err.value)
            assert "new index" in str(err.value)
        assert await idx.embedding() == ("model-b", 8)
        await idx.delete(TU, ["a"])
        await idx.bind_embedding("model-c", 4)
        assert await idx.embedding() == ("model-c", 4)

    asyncio.run(body())


def test_lexical_ranks_rare_term_first(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        common = [rec(f"c{i}", f"the river flows past the town number {i}") for i in range(8)]
        await idx.upsert(TU, [*common, rec("rare", "the zephyr wind over the river")])
        hits = await idx.search(TU, query_text="Zephyr river", mode=SearchMode.LEXICAL, k=20)
        assert hits[0].id == "rare"
        assert {h.id for h in hits} == {"rare"} | {c.id for c in common}
        assert [h.lexical_rank for h in hits] == list(range(1, len(hits) + 1))
        assert all(h.vector_rank is None for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert hits[0].text == "the zephyr wind over the river"
        top3 = await idx.search(TU, query_text="zephyr river", mode=SearchMode.LEXICAL, k=3)
        assert [h.id for h in top3] == [h.id for h in hits[:3]]

    asyncio.run(body())


def test_lexical_without_terms_or_with_quotes(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        await idx.upsert(TU, [rec("a", 'He said "hello" to O\'Neil AND NOT near(x)')])
        assert await idx.search(TU, query_text=" !?— ", mode=SearchMode.LEXICAL) == []
        for q in ('"hello', "o'neil", "NOT", "near(x) AND"):
            hits = await idx.search(TU, query_text=q, mode=SearchMode.LEXICAL)
            assert [h.id for h in hits] == ["a"], q
        assert await idx.search(TU, query_text="café", mode=SearchMode.LEXICAL) == []

    asyncio.run(body())


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("首都", "zh"), ("北京", "zh"), ("東京", "ja"), ("住んで", "ja"), ("서울", "ko"),
        ("Seoul", "en"),
    ],
)
def test_cjk_lexical_search(backend: StoreBackend, query: str, expected: str) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        await idx.upsert(
            TU,
            [
                rec("zh", "北京是中国的首都，有很多历史建筑。"),
                rec("ja", "私は東京都に住んでいます。"),
                rec("ko", "우리는 서울에서 만나요."),
                rec("en", "Seoul and Tokyo are capital cities."),
            ],
        )
        hits = await idx.search(TU, query_text=query, mode=SearchMode.LEXICAL)
        assert [h.id for h in hits] == [expected]

    asyncio.run(body())


def _random_corpus(n: int, d: int, seed: int) -> tuple[list[IndexRecord], NDArray[np.float32]]:
    rng = np.random.default_rng(seed)
    vecs = rng.standard_normal((n, d)).astype(np.float32)
    records = [rec(f"r{i:03d}", f"record {i}", parity=i % 2, bucket=f"b{i % 3}") for i in range(n)]
    return records, vecs


def test_vector_knn_is_exact(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        records, vecs = _random_corpus(60, 16, seed=7)
        await idx.upsert(TU, records, vecs)
        query = np.random.default_rng(8).standard_normal(16).astype(np.float32)
        normed = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
        cos = normed @ (query / np.linalg.norm(query))
        expected = np.argsort(-cos)[:7]
        hits = await idx.search(TU, query_vector=query, mode=SearchMode.VECTOR, k=7)
        assert [h.id for h in hits] == [records[i].id for i in expected]
        assert [h.score for h in hits] == pytest.approx([float(cos[i]) for i in expected], abs=1e-5)
        assert [h.vector_rank for h in hits] == list(range(1, 8))
        assert all(h.lexical_rank is None for h in hits)

    asyncio.run(body())


@pytest.mark.parametrize("mode", list(SearchMode))
@pytest.mark.parametrize(
    ("filters", "allowed"),
    [
        ({"parity": 1}, lambda i: i % 2 == 1),
        ({"bucket": ["b0", "b2"]}, lambda i: i % 3 in (0, 2)),
        ({"bucket": "b1", "parity": 0}, lambda i: i % 3 == 1 and i % 2 == 0),
        ({"bucket": []}, lambda i: False),
        ({"missing": None}, lambda i: True),
        ({"parity": "1"}, lambda i: False),
    ],
)
def test_filters(
    backend: StoreBackend, mode: SearchMode, filters: Filters, allowed: Callable[[int], bool]
) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        records, vecs = _random_corpus(30, 8, seed=3)
        await idx.upsert(TU, records, vecs)
        hits = await idx.search(
            TU, query_text="record", query_vector=vecs[0], mode=mode, filters=filters, k=100
        )
        assert {h.id for h in hits} == {r.id for i, r in enumerate(records) if allowed(i)}

    asyncio.run(body())


def test_hybrid_fuses_both_lists(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        records = [
            rec("both", "quokka habitat notes"),
            rec("lex_only", "quokka sighting"),
            rec("vec_only", "unrelated words entirely"),
            rec("neither", "nothing to see"),
        ]
        vecs = np.stack([unit(1, 0, 0), unit(-1, 0, 0.1), unit(0.9, 0.3, 0), unit(0, 0, 1)])
        await idx.upsert(TU, records, vecs)
        q = unit(1, 0, 0)
        hits = await idx.search(TU, query_text="quokka habitat", query_vector=q, k=3,
                                candidate_k=2)
        by_id = {h.id: h for h in hits}
        assert hits[0].id == "both"
        assert (hits[0].lexical_rank, hits[0].vector_rank) == (1, 1)
        assert set(by_id) == {"both", "lex_only", "vec_only"}
        assert (by_id["lex_only"].lexical_rank, by_id["lex_only"].vector_rank) == (2, None)
        assert (by_id["vec_only"].lexical_rank, by_id["vec_only"].vector_rank) == (None, 2)
        assert hits[0].score == pytest.approx(2 / 61)
        two = await idx.search(TU, query_text="quokka habitat", query_vector=q, k=2,
                               candidate_k=2)
        assert [h.id for h in two] == [h.id for h in hits[:2]]
        weighted = await idx.search(TU, query_text="quokka habitat", query_vector=q, k=3,
                                    candidate_k=2, lexical_weight=0.0, rrf_k=10)
        assert [h.id for h in weighted][:2] == ["both", "vec_only"]
        assert weighted[0].score == pytest.approx(1 / 11)

    asyncio.run(body())


def test_missing_query_input_raises(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        with pytest.raises(ValueError):
            await idx.search(TU, query_text="x", mode=SearchMode.HYBRID)
        with pytest.raises(ValueError):
            await idx.search(TU, query_vector=np.ones(4, np.float32), mode=SearchMode.LEXICAL)
        with pytest.raises(ValueError):
            await idx.search(TU, query_text="x", mode=SearchMode.VECTOR)

    asyncio.run(body())


def test_query_vector_of_another_dimension_raises(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        await idx.upsert(TU, [rec("a", "x")], np.stack([unit(1, 0, 0)]))
        for mode in (SearchMode.VECTOR, SearchMode.HYBRID):
            with pytest.raises(EmbeddingMismatchError):
                await idx.search(TU, query_text="x", query_vector=unit(1, 0), mode=mode)

    asyncio.run(body())


def test_empty_index_searches_return_nothing(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        for mode in SearchMode:
            hits = await idx.search(TU, query_text="x", query_vector=unit(1, 0), mode=mode)
            assert hits == []

    asyncio.run(body())


def test_indexes_and_collections_are_isolated(backend: StoreBackend) -> None:
    async def body() -> None:
        one, two = backend.search_index("one"), backend.search_index("two")
        await one.bind_embedding("m", 2)
        await one.upsert(TU, [rec("x", "shared marmot one")], np.stack([unit(1, 0)]))
        await two.upsert(TU, [rec("x", "shared marmot two"), rec("y", "marmot")],
                         np.stack([unit(1, 0), unit(0, 1)]))
        await one.upsert(Collection.ENTITIES, [rec("x", "marmot entity")])
        assert await two.embedding() is None
        assert (await one.count(TU), await two.count(TU)) == (1, 2)
        assert (await one.get(TU, ["x", "y"]))[0].text == "shared marmot one"
        for mode in SearchMode:
            hits = await one.search(TU, query_text="marmot", query_vector=unit(0, 1), mode=mode)
            assert [(h.id, h.text) for h in hits] == [("x", "shared marmot one")]
        assert await two.delete(TU, ["x"]) == 1
        assert await one.get(TU, ["x"]) == [rec("x", "shared marmot one")]
        assert await backend.list_indexes() == ["one", "two"]

    asyncio.run(body())


def test_filters_on_non_ascii_and_backslash_keys(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        await idx.upsert(TU, [
            IndexRecord(id="a", text="hello", fields={"ключ": "v", "k\\": "w", "作者": "李"}),
            IndexRecord(id="b", text="hello", fields={"ключ": "x"}),
        ])

        async def ids(filters: Filters) -> list[str]:
            hits = await idx.search(TU, query_text="hello", mode=SearchMode.LEXICAL,
                                    filters=filters)
            return sorted(h.id for h in hits)

        assert await ids({"ключ": "v"}) == ["a"]
        assert await ids({"ключ": ["v", "x"]}) == ["a", "b"]
        assert await ids({"k\\": "w"}) == ["a"]
        assert await ids({"作者": "李"}) == ["a"]
        assert await ids({"作者": None}) == ["b"]

    asyncio.run(body())


def test_ids_lists_one_collection_of_one_index(backend: StoreBackend) -> None:
    async def body() -> None:
        idx, other = backend.search_index("default"), backend.search_index("other")
        await idx.upsert(TU, [rec("b", "banana"), rec("a", "apple")])
        await idx.upsert(Collection.ENTITIES, [rec("e", "Eve")])
        await other.upsert(TU, [rec("z", "zebra")])
        assert await idx.ids(TU) == ["a", "b"]
        assert await idx.ids(Collection.ENTITIES) == ["e"]
        assert await idx.ids(Collection.REPORTS) == []
        await idx.delete(TU, ["a"])
        assert await idx.ids(TU) == ["b"]

    asyncio.run(body())


def test_vectors_returns_the_stored_vectors_in_request_order(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        unbound = await backend.search_index("unbound").vectors(TU, ["a"])
        assert unbound[0] == [] and unbound[1].shape == (0, 0)
        await idx.bind_embedding("m", 3)
        vecs = np.asarray([[3, 4, 0], [0, 0, 2], [1, 1, 1]], dtype=np.float32)
        await idx.upsert(TU, [rec("a", "apple"), rec("b", "banana"), rec("c", "cherry")], vecs)
        await idx.upsert(TU, [rec("n", "no vector")])
        await idx.upsert(Collection.ENTITIES, [rec("e", "entity")], vecs[:1])
        ids, got = await idx.vectors(TU, ["c", "zz", "n", "a", "e", "a"])
        assert ids == ["c", "a", "a"]  # order of the request; missing, vectorless, other skipped
        assert got.dtype == np.float32 and got.shape == (3, 3)
        third = 1 / np.sqrt(3)  # stored as upserted, L2-normalised
        assert np.allclose(got, [[third, third, third], [0.6, 0.8, 0], [0.6, 0.8, 0]])
        empty_ids, empty = await idx.vectors(TU, [])
        assert empty_ids == [] and empty.dtype == np.float32 and empty.shape == (0, 3)
        none_ids, none = await idx.vectors(TU, ["n", "zz"])
        assert none_ids == [] and none.shape == (0, 3)
        assert (await idx.vectors(Collection.ENTITIES, ["a", "e"]))[0] == ["e"]

    asyncio.run(body())


def test_vectors_of_many_ids(backend: StoreBackend) -> None:
    async def body() -> None:
        idx = backend.search_index("default")
        stored = [f"t{i:04d}" for i in range(0, 5000, 2)]  # every other id of the request
        vecs = np.random.default_rng(7).normal(size=(len(stored), 8)).astype(np.float32)
        await idx.upsert(TU, [rec(id_, f"unit {id_}") for id_ in stored], vecs)
        wanted = [f"t{i:04d}" for i in range(4999, -1, -1)]
        ids, got = await idx.vectors(TU, wanted)
        assert ids == stored[::-1]
        expected = vecs[::-1] / np.linalg.norm(vecs[::-1], axis=1, keepdims=True)
        assert got.shape == (2500, 8) and np.allclose(got, expected, atol=1e-6)

    asyncio.run(body())
