"""Conformance suite of `DocRegistry`: every backend must pass it unchanged."""

from __future__ import annotations

import asyncio

from unified_kg_rag.domain.models import DocRecord, DocStatus, DocumentDelta
from unified_kg_rag.ports import StoreBackend


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
