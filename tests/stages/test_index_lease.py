"""One writer per index: the pipeline holds the index's lease for its whole run."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from typer.testing import CliRunner

from tests.fakes import FakeBackend, FakeEmbedder
from tests.fakes.stores import FakeDocRegistry
from tests.support.corpus import write_good_docs
from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.bootstrap import build_app
from unified_kg_rag.cli.app import app as cli
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import Collection, Lease
from unified_kg_rag.ingestion.lease import LeaseLostError, held_lease
from unified_kg_rag.ingestion.pipeline import IndexPipeline
from unified_kg_rag.ports import IndexStores
from unified_kg_rag.util.errors import IndexBusyError, StoreConnectionError

pytestmark = pytest.mark.integration


class SlowEmbedder(FakeEmbedder):
    """Signals when embedding starts, then waits for a go."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()
        self.go = asyncio.Event()

    async def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.started.set()
        await self.go.wait()
        return await super().embed_documents(texts)


def _pipeline(project: Path, embedder: FakeEmbedder) -> tuple[IndexPipeline, SqliteBackend]:
    app = build_app(UkrConfig(), project)
    assert isinstance(app.backend, SqliteBackend)
    pipeline = IndexPipeline(app.index(), embedder=embedder, chunk_tokenizer=app.chunk_tokenizer,
                             parsers=app.parsers, config=app.config)
    return pipeline, app.backend


def test_a_second_concurrent_run_fails_at_once_naming_the_holder(tmp_path: Path) -> None:
    write_good_docs(tmp_path / "docs")

    async def body() -> None:
        slow = SlowEmbedder()
        first, backend1 = _pipeline(tmp_path, slow)
        second, backend2 = _pipeline(tmp_path, FakeEmbedder())  # another "process": own connection
        running = asyncio.create_task(first.run([tmp_path / "docs"]))
        await asyncio.wait_for(slow.started.wait(), 30)
        holder = (await backend2.doc_registry("default").get_lease())
        assert holder is not None
        with pytest.raises(IndexBusyError) as err:
            await asyncio.wait_for(second.run([tmp_path / "docs"]), 5)
        assert holder.holder in str(err.value) and err.value.exit_code == 2
        # readers are not blocked while the writer works (its batch is not committed yet)
        count = backend2.search_index("default").count(Collection.TEXT_UNITS)
        assert await asyncio.wait_for(count, 2) == 0
        slow.go.set()
        report = await running
        assert report.documents_new == 3
        assert await backend2.doc_registry("default").get_lease() is None  # released
        again = await second.run([tmp_path / "docs"])
        assert again.documents_unchanged == 3
        await backend1.aclose()
        await backend2.aclose()

    asyncio.run(body())


def test_an_interrupted_run_releases_its_lease(tmp_path: Path) -> None:
    write_good_docs(tmp_path / "docs")

    async def body() -> None:
        slow = SlowEmbedder()
        pipeline, backend = _pipeline(tmp_path, slow)
        running = asyncio.create_task(pipeline.run([tmp_path / "docs"]))
        await asyncio.wait_for(slow.started.wait(), 30)
        assert await backend.doc_registry("default").get_lease() is not None
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert await backend.doc_registry("default").get_lease() is None
        await backend.aclose()

    asyncio.run(body())


def test_a_run_that_loses_its_lease_is_stopped() -> None:
    async def body() -> None:
        registry = FakeDocRegistry("idx")

        async def run() -> None:
            async with held_lease(registry, "idx", ttl_s=0.3, holder="me:1:a"):
                # another run takes the index over (as after a lapse)
                registry.lease = Lease(holder="other:2:b", acquired_at=0, expires_at=1e12)
                await asyncio.sleep(5)

        with pytest.raises(LeaseLostError, match="could not be renewed") as err:
            await asyncio.wait_for(run(), 3)
        assert "it is held by other:2:b" in str(err.value)  # taken: still said so
        assert registry.lease is not None and registry.lease.holder == "other:2:b"  # kept

    asyncio.run(body())


def test_the_heartbeat_renews_a_long_run() -> None:
    async def body() -> None:
        registry = FakeDocRegistry("idx")
        async with held_lease(registry, "idx", ttl_s=0.3, holder="me:1:a"):
            first = registry.lease
            await asyncio.sleep(0.6)  # twice the term: only renewal keeps it
            assert registry.lease is not None and first is not None
            assert registry.lease.expires_at > first.expires_at + 0.2
            assert registry.lease.acquired_at == first.acquired_at
        assert registry.lease is None

    asyncio.run(body())


def test_cli_index_refuses_a_held_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("UKR_STORES__KIND", "UKR_QUERY__INDEX"):
        monkeypatch.delenv(key, raising=False)
    write_good_docs(tmp_path / "docs")

    async def hold() -> None:
        async with SqliteBackend(tmp_path / ".ukr" / "ukr.db") as backend:
            await backend.doc_registry("default").acquire_lease("buildbox:4242:cafe", 600)

    asyncio.run(hold())
    result = CliRunner().invoke(cli, ["index", str(tmp_path / "docs"), "-C", str(tmp_path)])
    assert result.exit_code == 2
    assert result.stderr.startswith("BuildInProgress: index 'default' is being written by "
                                    "buildbox:4242:cafe")


def test_a_paused_run_stops_before_its_next_write() -> None:
    """A run paused past two thirds of its term (SIGSTOP, a frozen VM) may have lost the index
    to another run: its next write is refused before it reaches the store."""
    from unified_kg_rag.ingestion.lease import fenced
    from unified_kg_rag.util.errors import LeaseLostError as Lost

    async def body() -> None:
        backend = FakeBackend()
        stores = IndexStores(name="idx", search=backend.search_index("idx"),
                             graph=backend.graph_store("idx"),
                             registry=backend.doc_registry("idx"),
                             records=backend.record_store("idx"))
        async with held_lease(stores.registry, "idx", ttl_s=30, holder="me:1:a") as fence:
            guarded = fenced(stores, fence)
            await guarded.records.put("ns", "k", "written while the lease is fresh")
            assert await guarded.records.count("ns") == 1  # reads are never fenced
            fence.renewal_sent -= 25  # as if the process had been frozen for 25 s
            with pytest.raises(Lost, match="last renewed 25 s ago"):
                await guarded.records.put("ns", "k2", "must not land")
            assert await stores.records.get("ns", "k2") is None

    asyncio.run(body())


def test_a_run_that_resumes_after_its_lease_was_taken_and_released_stops() -> None:
    async def body() -> None:
        registry = FakeDocRegistry("idx")

        async def run_a() -> None:
            async with held_lease(registry, "idx", ttl_s=0.6, holder="a:1:x"):
                # meanwhile run B takes the (lapsed) index over, finishes and releases it
                registry.lease = None
                await asyncio.sleep(5)

        with pytest.raises(LeaseLostError, match="released"):
            await asyncio.wait_for(run_a(), 3)

    asyncio.run(body())


UNREACHABLE = (
    "PostgreSQL at postgresql://ukr@db.example:5432/ukr is unreachable (connection refused, "
    'server at "db.example", port 5432)'
)


class DownRegistry(FakeDocRegistry):
    """A registry whose store goes down after the lease was taken: every renewal fails after
    ``hang_s`` (a pool waiting for a connection) with the store's own error."""

    def __init__(self, hang_s: float = 0.0) -> None:
        super().__init__("idx")
        self.hang_s = hang_s
        self.renewals = 0

    async def renew_lease(self, holder: str, ttl_s: float) -> Lease:
        self.renewals += 1
        await asyncio.sleep(self.hang_s)
        raise StoreConnectionError(UNREACHABLE)


def test_a_store_outage_during_a_run_is_named_first_not_as_a_lost_lease() -> None:
    """The heartbeat cannot reach the store: the run stops with the store's error (its kind
    and message first), not with "another run may own the index now"."""

    async def body() -> None:
        registry = DownRegistry()

        async def run() -> None:
            async with held_lease(registry, "idx", ttl_s=0.6, holder="me:1:a"):
                await asyncio.sleep(5)

        with pytest.raises(StoreConnectionError) as err:
            await asyncio.wait_for(run(), 3)
        assert not isinstance(err.value, LeaseLostError)
        assert str(err.value).startswith(UNREACHABLE)
        assert "Index 'idx': stopped, its write lease could not be renewed" in str(err.value)
        assert "another run may own" not in str(err.value)
        assert registry.renewals >= 2  # retried while the term allowed

    asyncio.run(body())


def test_a_write_while_a_renewal_waits_for_a_down_store_names_the_outage() -> None:
    """Renewals hang (a pool timeout) past two thirds of the term; a write arriving then waits
    for the renewal's outcome and stops with the store's error, and does not reach the store."""
    from unified_kg_rag.ingestion.lease import fenced

    async def body() -> None:
        backend = FakeBackend()
        registry = DownRegistry(hang_s=1.2)
        stores = IndexStores(name="idx", search=backend.search_index("idx"),
                             graph=backend.graph_store("idx"), registry=registry,
                             records=backend.record_store("idx"))

        async def run() -> None:
            async with held_lease(registry, "idx", ttl_s=0.9, holder="me:1:a") as fence:
                guarded = fenced(stores, fence)
                await asyncio.sleep(0.7)  # past 2/3 of the term; the first renewal hangs
                await guarded.records.put("ns", "k", "must not land")

        with pytest.raises(StoreConnectionError) as err:
            await asyncio.wait_for(run(), 5)
        assert not isinstance(err.value, LeaseLostError)
        assert str(err.value).startswith(UNREACHABLE)
        assert await backend.record_store("idx").get("ns", "k") is None

    asyncio.run(body())


def test_a_paused_run_without_failed_renewals_still_says_another_run_may_own_the_index() -> None:
    """With no renewal error known (the process was frozen), the fence cannot name a store
    failure: the lease message stays."""

    async def body() -> None:
        registry = FakeDocRegistry("idx")
        async with held_lease(registry, "idx", ttl_s=30, holder="me:1:a") as fence:
            fence.renewal_sent -= 25
            with pytest.raises(LeaseLostError, match="another run may own the index now"):
                await fence.ready()

    asyncio.run(body())
