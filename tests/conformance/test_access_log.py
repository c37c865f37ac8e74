"""Conformance suite of `AccessLog`: every backend must pass it unchanged."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from unified_kg_rag.domain.models import Collection, IndexRecord
from unified_kg_rag.ports import StoreBackend

TU, ENT = Collection.TEXT_UNITS, Collection.ENTITIES


async def _index(backend: StoreBackend, index: str, ids: list[str]) -> None:
    """Store text units ``ids`` in ``index`` (an index must exist to hold counts)."""
    records = [IndexRecord(id=i, text=f"passage {i}") for i in ids]
    vectors = np.eye(len(ids), 4, dtype=np.float32) + 0.1
    await backend.search_index(index).upsert(TU, records, vectors)


def test_increments_add_up_per_collection_and_index(backend: StoreBackend) -> None:
    async def body() -> None:
        await _index(backend, "one", ["a", "b"])
        await _index(backend, "two", ["a"])
        log, other = backend.access_log("one"), backend.access_log("two")
        assert await log.counts(TU, ["a", "b"]) == {}
        await log.increment(TU, {"a": 1, "b": 2})
        await log.increment(TU, {"a": 3})
        await log.increment(ENT, {"a": 5})
        await other.increment(TU, {"a": 7})
        assert await log.counts(TU, ["a", "b", "never"]) == {"a": 4, "b": 2}
        assert await log.counts(ENT, ["a", "b"]) == {"a": 5}
        assert await other.counts(TU, ["a", "b"]) == {"a": 7}
        assert await log.counts(TU, []) == {}
        assert await log.totals() == {"entities": 5, "text_units": 6}
        await log.increment(TU, {})  # nothing to write
        with pytest.raises(ValueError, match="must be >= 1"):
            await log.increment(TU, {"a": 0})
        assert await log.counts(TU, ["a"]) == {"a": 4}
        assert await log.reset() == 3
        assert await log.totals() == {}
        assert await other.totals() == {"text_units": 7}

    asyncio.run(body())


def test_deleting_an_item_deletes_its_count_and_an_upsert_keeps_it(
    backend: StoreBackend,
) -> None:
    async def body() -> None:
        await _index(backend, "default", ["a", "b"])
        log = backend.access_log("default")
        await log.increment(TU, {"a": 2, "b": 3})
        await _index(backend, "default", ["a", "b"])  # re-indexed in place: counts stay
        assert await log.counts(TU, ["a", "b"]) == {"a": 2, "b": 3}
        assert await backend.search_index("default").delete(TU, ["a"]) == 1
        assert await log.counts(TU, ["a", "b"]) == {"b": 3}
        assert await log.totals() == {"text_units": 3}
        await _index(backend, "default", ["a"])  # the same id again starts from nothing
        assert await log.counts(TU, ["a"]) == {}

    asyncio.run(body())


def test_concurrent_increments_lose_nothing(backend: StoreBackend) -> None:
    """20 concurrent tasks x 5 rounds on overlapping ids: the exact totals."""
    ids = [f"u{i}" for i in range(8)]

    async def body() -> None:
        await _index(backend, "default", ids)
        log = backend.access_log("default")
        for _ in range(5):
            await asyncio.gather(*(
                log.increment(TU, {ids[t % 8]: 1, ids[(t + 3) % 8]: 2}) for t in range(20)
            ))  # fmt: skip
        found = await log.counts(TU, ids)
        expected = dict.fromkeys(ids, 0)
        for t in range(20):
            expected[ids[t % 8]] += 5
            expected[ids[(t + 3) % 8]] += 10
        assert found == expected
        assert sum(found.values()) == 20 * 5 * 3

    asyncio.run(body())
