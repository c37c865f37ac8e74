"""Conformance suite of `RecordStore`: every backend must pass it unchanged."""

from __future__ import annotations

import asyncio

from unified_kg_rag.ports import StoreBackend


def test_put_get_replace_delete(backend: StoreBackend) -> None:
    async def body() -> None:
        store = backend.record_store("default")
        assert await store.get("cache", "k") is None
        await store.put("cache", "k", "v1")
        await store.put("cache", "k", "v2")
        assert await store.get("cache", "k") == "v2"
        big = "東京 " * 20000 + '{"json": true}\n\x00end'
        await store.put_many("cache", {"a": "", "b": big})
        assert await store.get_many("cache", ["a", "b", "missing"]) == {"a": "", "b": big}
        assert await store.count("cache") == 3
        assert await store.delete("cache", ["a", "a", "missing"]) == 1
        assert await store.count("cache") == 2
        await store.put_many("cache", {})
        assert await store.get_many("cache", []) == {}

    asyncio.run(body())


def test_namespaces_and_scopes_are_separate(backend: StoreBackend) -> None:
    async def body() -> None:
        one, shared = backend.record_store("one"), backend.record_store("_shared")
        await one.put("extract", "k", "extraction")
        await one.put("checkpoint", "k", "done")
        await shared.put("extract", "k", "shared value")
        assert await one.get("extract", "k") == "extraction"
        assert await one.get("checkpoint", "k") == "done"
        assert await shared.get("extract", "k") == "shared value"
        assert await shared.get("checkpoint", "k") is None
        assert await one.delete("extract", ["k"]) == 1
        assert await shared.count("extract") == 1
        assert await one.count("checkpoint") == 1
        assert await backend.record_store("one").get("checkpoint", "k") == "done"
        assert await backend.list_indexes() == []  # records alone do not make an index

    asyncio.run(body())


def test_keys_lists_one_namespace_of_one_scope_in_code_point_order(backend: StoreBackend) -> None:
    async def body() -> None:
        one, two = backend.record_store("one"), backend.record_store("two")
        shared = backend.record_store("_shared")
        assert await one.keys("extract") == []
        await one.put_many("extract", {"b": "1", "a": "2", "Z": "3", "é": "4", "ab": "5"})
        await one.put("other", "c", "x")
        await two.put("extract", "d", "y")
        await shared.put("extract", "e", "z")
        assert await one.keys("extract") == ["Z", "a", "ab", "b", "é"]
        assert await one.keys("other") == ["c"]
        assert await two.keys("extract") == ["d"]
        assert await shared.keys("extract") == ["e"]
        await one.delete("extract", ["ab"])
        assert await one.keys("extract") == ["Z", "a", "b", "é"]
        assert await backend.record_store("never-written").keys("extract") == []

    asyncio.run(body())
