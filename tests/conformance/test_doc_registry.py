"""Conformance suite of `DocRegistry`: every backend must pass it unchanged."""

from __future__ import annotations

import asyncio
import time

import pytest

from unified_kg_rag.domain.models import DocRecord, DocStatus, DocumentDelta
from unified_kg_rag.ports import StoreBackend
from unified_kg_rag.util.errors import IndexBusyError, LeaseLostError


def doc(
    id_: str, path: str, content_hash: str = "h", status: DocStatus = DocStatus.PROCESSED,
    scope: str = "s1",
) -> DocRecord:
    return DocRecord(
        document_id=id_, path=path, source_scope=scope, content_hash=content_hash, status=status,
        text_unit_ids=(f"{id_}-u1", f"{id_}-u2"), updated_at=1700000000.5,
        error="bad bytes" if status is DocStatus.FAILED else None,
    )


def test_put_get_list_and_replace(backend: StoreBackend) -> None:
    async def body() -> None:
        reg = backend.doc_registry("default")
        records = [doc("d2", "b/z.md"), doc("d1", "a.md"), doc("d3", "b/a.md", scope="s2")]
        await reg.put(records)
        assert await reg.get(["d1", "nope"]) == {"d1": records[1]}
        assert [r.document_id for r in await reg.list_records()] == ["d1", "d3", "d2"]
        assert [r.document_id for r in await reg.list_records("s1")] == ["d1", "d2"]
        assert await reg.list_records("s9") == []
        failed = doc("d1", "a.md", "h2", DocStatus.FAILED)
        await reg.put([failed])
        assert (await reg.get(["d1"]))["d1"] == failed
        assert await reg.status_counts() == {"processed": 2, "failed": 1}
        assert await reg.delete(["d2", "d2", "nope"]) == 1
        assert await reg.status_counts() == {"processed": 1, "failed": 1}

    asyncio.run(body())


def test_diff_partitions(backend: StoreBackend) -> None:
    async def body() -> None:
        reg = backend.doc_registry("default")
        await reg.put([
            doc("same", "1.md", "h1"),
            doc("edit", "2.md", "h2"),
            doc("fail", "3.md", "h3", DocStatus.FAILED),
            doc("pend", "4.md", "h4", DocStatus.PENDING),
            doc("gone", "5.md", "h5"),
            doc("other-scope", "6.md", "h6", scope="s2"),
        ])
        current = {"same": "h1", "edit": "h2-new", "fail": "h3", "pend": "h4x", "fresh": "h7"}
        delta = await reg.diff("s1", current)
        assert delta == DocumentDelta(
            new=("fresh",), changed=("edit",), unchanged=("same",),
            failed_before=("fail", "pend"), missing=("gone",),
        )
        assert await reg.diff("s2", {}) == DocumentDelta(missing=("other-scope",))
        assert await reg.diff("s3", {"x": "h"}) == DocumentDelta(new=("x",))

    asyncio.run(body())


def test_registry_indexes_are_isolated(backend: StoreBackend) -> None:
    async def body() -> None:
        one, two = backend.doc_registry("one"), backend.doc_registry("two")
        assert await backend.list_indexes() == []
        await one.put([doc("d1", "a.md")])
        assert await two.get(["d1"]) == {}
        assert await two.list_records() == []
        assert await two.diff("s1", {"d1": "h"}) == DocumentDelta(new=("d1",))
        assert await two.delete(["d1"]) == 0
        assert await two.status_counts() == {}
        assert await backend.list_indexes() == ["one"]

    asyncio.run(body())


def test_single_writer_lease(backend: StoreBackend) -> None:
    async def body() -> None:
        registry = backend.doc_registry("default")
        assert await registry.get_lease() is None
        before = time.time()
        first = await registry.acquire_lease("host:1:a", 60)
        assert first.holder == "host:1:a"
        assert before - 5 <= first.acquired_at <= time.time() + 5
        assert first.expires_at == pytest.approx(first.acquired_at + 60)
        assert await registry.get_lease() == first
        with pytest.raises(IndexBusyError) as err:
            await registry.acquire_lease("host:2:b", 60)
        assert "host:1:a" in str(err.value) and "'default'" in str(err.value)
        assert err.value.expires_in_s == pytest.approx(60, abs=5)
        renewed = await registry.acquire_lease("host:1:a", 120)
        assert renewed.acquired_at == first.acquired_at
        assert renewed.expires_at > first.expires_at
        # another index has its own lease
        other = await backend.doc_registry("other").acquire_lease("host:2:b", 60)
        assert other.holder == "host:2:b"
        assert not await registry.release_lease("host:2:b")
        assert await registry.release_lease("host:1:a")
        assert await registry.get_lease() is None
        assert not await registry.release_lease("host:1:a")
        assert (await registry.acquire_lease("host:2:b", 60)).holder == "host:2:b"
        with pytest.raises(ValueError):
            await registry.acquire_lease("host:2:b", 0)

    asyncio.run(body())


def test_a_lapsed_lease_can_be_taken_over(backend: StoreBackend) -> None:
    async def body() -> None:
        registry = backend.doc_registry("default")
        await registry.acquire_lease("dead:1:x", 0.2)
        await asyncio.sleep(0.4)
        taken = await registry.acquire_lease("live:2:y", 30)
        assert taken.holder == "live:2:y" and taken.acquired_at > 0
        assert (await registry.get_lease()) == taken

    asyncio.run(body())


def test_concurrent_acquisitions_have_one_winner(backend: StoreBackend) -> None:
    async def body() -> None:
        registry = backend.doc_registry("default")
        results = await asyncio.gather(
            *(registry.acquire_lease(f"h:{n}:r", 30) for n in range(5)), return_exceptions=True
        )
        winners = [r for r in results if not isinstance(r, BaseException)]
        assert len(winners) == 1
        assert all(isinstance(r, IndexBusyError) for r in results if r not in winners)
        assert await registry.get_lease() == winners[0]

    asyncio.run(body())


def test_renewal_fails_once_the_lease_was_released_or_taken(backend: StoreBackend) -> None:
    async def body() -> None:
        registry = backend.doc_registry("default")
        with pytest.raises(LeaseLostError):
            await registry.renew_lease("a:1:x", 30)  # never held
        await registry.acquire_lease("a:1:x", 0.2)
        await asyncio.sleep(0.4)
        lapsed = await registry.renew_lease("a:1:x", 30)  # lapsed, but nobody took it
        assert lapsed.holder == "a:1:x" and lapsed.expires_at > time.time() + 20
        assert await registry.release_lease("a:1:x")
        with pytest.raises(LeaseLostError, match="released"):
            await registry.renew_lease("a:1:x", 30)
        await registry.acquire_lease("b:2:y", 0.2)
        await asyncio.sleep(0.4)
        await registry.acquire_lease("c:3:z", 30)  # takes the lapsed lease over
        with pytest.raises(LeaseLostError, match="c:3:z"):
            await registry.renew_lease("b:2:y", 30)
        assert (await registry.get_lease()).holder == "c:3:z"  # type: ignore[union-attr]

    asyncio.run(body())


def test_quarantined_records_keep_their_count_and_diff_as_unchanged_at_their_content(
    backend: StoreBackend,
) -> None:
    async def body() -> None:
        reg = backend.doc_registry("default")
        stuck = DocRecord(
            document_id="q", path="q.md", source_scope="s1", content_hash="hq",
            status=DocStatus.QUARANTINED, text_unit_ids=("old-u1",), error="ValueError: boom",
            updated_at=1700000000.5, failure_count=3,
        )
        await reg.put([stuck, doc("q2", "r.md", "hr", DocStatus.QUARANTINED), doc("p", "p.md")])
        assert (await reg.get(["q"]))["q"] == stuck
        assert (await reg.get(["q"]))["q"].failure_count == 3
        assert await reg.status_counts() == {"processed": 1, "quarantined": 2}
        # at the content it failed on: unchanged (not retried); at new content: changed
        delta = await reg.diff("s1", {"q": "hq", "q2": "hr-new", "p": "h"})
        assert delta == DocumentDelta(
            changed=("q2",), unchanged=("p", "q"), quarantined=("q",)
        )
        assert [r.document_id for r in await reg.list_records() if
                r.status is DocStatus.QUARANTINED] == ["q", "q2"]

    asyncio.run(body())
