"""Access counts end to end on real SQLite files: queries, pipelines, locks, concurrency.

The chain and the pipelines record through the app's `AccessRecorder` (``query.access``);
the counts are read back through another backend on the same file.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import sqlite3
import threading
from collections import Counter
from pathlib import Path

import pytest
from tests.support.graph_fixture import graph_app, unit

from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.adapters.sqlite.access_log import SqliteAccessLog
from unified_kg_rag.adapters.sqlite.database import SqliteDatabase
from unified_kg_rag.config.models import SqliteConfig, UkrConfig
from unified_kg_rag.domain.models import Collection, IndexRecord
from unified_kg_rag.domain.ranking.signals import access_signal
from unified_kg_rag.retrieval.access import KIND_COLLECTIONS, AccessRecorder
from unified_kg_rag.retrieval.pipeline_presets import PipelineComponents, pipeline_from_spec

pytestmark = pytest.mark.integration

TU = Collection.TEXT_UNITS
QUESTIONS = ["Where was Marie Curie born?", "Which river flows through Warsaw?",
             "What is a sourdough starter?"]  # fmt: skip


def _config(flush_interval_s: float = 0.01, **sqlite: float) -> UkrConfig:
    return UkrConfig.model_validate({
        "query": {"access": {"record": True, "flush_interval_s": flush_interval_s}},
        "stores": {"sqlite": sqlite} if sqlite else {},
    })  # fmt: skip


def _counts(db: Path, collection: Collection, ids: list[str]) -> dict[str, int]:
    async def read() -> dict[str, int]:
        async with SqliteBackend(db) as backend:
            return await backend.access_log("default").counts(collection, ids)

    return asyncio.run(read())


def test_each_query_adds_one_per_returned_source_whatever_the_strategy(tmp_path: Path) -> None:
    expected: Counter[tuple[Collection, str]] = Counter()

    async def body() -> Path:
        async with graph_app(tmp_path, _config()) as fx:
            chain = fx.app.chain()
            for question in QUESTIONS:
                for strategy in ("naive", "local"):
                    out = await chain.ainvoke(question, strategy=strategy)
                    assert out.sources
                    expected.update((KIND_COLLECTIONS[s.kind], s.id) for s in out.sources
                                    if s.kind in KIND_COLLECTIONS)  # fmt: skip
            retrieved = await chain.retrieve(QUESTIONS[0], strategy="naive")
            expected.update((TU, s.id) for s in retrieved.sources)
            return Path(fx.app.backend.location)

    db = asyncio.run(body())  # closing the app writes what is queued
    kinds = {c for c, _ in expected}
    assert {TU, Collection.ENTITIES} <= kinds  # `local` cites entities too
    for collection in kinds:
        ids = sorted(i for c, i in expected if c == collection)
        assert _counts(db, collection, ids) == {i: expected[(collection, i)] for i in ids}
    assert expected[(TU, unit("marie"))] >= 3


def test_pipeline_results_are_counted_and_the_access_stage_reads_them(tmp_path: Path) -> None:
    spec = {
        "stages": [{"stage": "semantic", "limit": 7}, {"stage": "access", "cap": 3}],
        "scorer": {"kind": "weighted", "weights": {"semantic": 1.0}},
    }

    async def body() -> None:
        async with graph_app(tmp_path, _config()) as fx:
            stores = fx.app.index()
            recorder = fx.app.access_recorder()
            components = PipelineComponents(
                stores.search, fx.app.embedder, access_log=recorder.log, observers=(recorder,)
            )  # fmt: skip
            pipeline = pipeline_from_spec(spec, components)
            counted: Counter[str] = Counter()
            for question, k in ((QUESTIONS[0], 2), (QUESTIONS[0], 3), (QUESTIONS[2], 1),
                                (QUESTIONS[1], 2), (QUESTIONS[0], 1)):  # fmt: skip
                run = await pipeline.execute(question, k=k)
                counted.update(r.candidate.id for r in run.results)
            assert await recorder.flush()
            ids = sorted(counted)
            assert await recorder.log.counts(TU, ids) == dict(counted)
            last = await pipeline_from_spec(spec, PipelineComponents(
                stores.search, fx.app.embedder, access_log=recorder.log)).execute(
                QUESTIONS[0], k=7)  # fmt: skip
            got = {r.candidate.id: r.signals["access"] for r in last.results}
            want = access_signal([counted[i] for i in got], cap=3)
            assert list(got.values()) == pytest.approx(want)
            assert max(got.values()) == 1.0 and min(got.values()) == 0.0  # unseen units: 0

    asyncio.run(body())


def test_a_query_answers_while_an_index_job_holds_the_lease_and_the_lock(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Counts wait in the queue while the file is locked and land once it is free."""

    async def body() -> None:
        async with graph_app(tmp_path, _config(3600, busy_timeout_s=0.2)) as fx:
            db = Path(fx.app.backend.location)
            await fx.app.index().registry.acquire_lease("index-job", ttl_s=60)
            job = sqlite3.connect(db, isolation_level=None)
            job.execute("BEGIN IMMEDIATE")  # an index job's write transaction
            job.execute("UPDATE search_records SET text = text WHERE id = ?", (unit("bread"),))
            recorder = fx.app.access_recorder()
            try:
                out = await fx.app.chain().ainvoke(QUESTIONS[0], strategy="naive")
                assert out.sources and "Warsaw" in out.answer
                assert not await recorder.flush()  # locked: kept, not lost
                assert recorder.pending == len(out.sources)
            finally:
                job.execute("COMMIT")
                job.close()
            assert await recorder.flush()
            ids = [s.id for s in out.sources]
            assert await recorder.log.counts(TU, ids) == dict.fromkeys(ids, 1)
            assert (await fx.app.index().registry.get_lease()).holder == "index-job"

    with caplog.at_level(logging.WARNING, logger="unified_kg_rag.retrieval.access"):
        asyncio.run(body())
    assert [r.getMessage() for r in caplog.records if "not written" in r.getMessage()]


def test_a_broken_access_log_never_fails_the_query(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def body() -> None:
        async with graph_app(tmp_path, _config()) as fx:
            path = Path(fx.app.backend.location)
            closed = SqliteDatabase(path)
            await closed.close()
            reader = SqliteDatabase(path)
            recorder = AccessRecorder(SqliteAccessLog(reader, closed, "default"),
                                      flush_interval_s=0.01)  # fmt: skip
            fx.app.access_recorders["default"] = recorder
            returned = 0
            for question in QUESTIONS:
                out = await fx.app.chain().ainvoke(question, strategy="naive")
                assert out.sources and out.answer
                returned += len(out.sources)
            await asyncio.sleep(0.1)
            assert recorder.pending == returned  # every count kept for the next try
            await reader.close()

    with caplog.at_level(logging.WARNING, logger="unified_kg_rag.retrieval.access"):
        asyncio.run(body())
    messages = [r.getMessage() for r in caplog.records]
    assert sum("not written (kept to retry)" in m for m in messages) == 1
    assert any("is closed" in m for m in messages)
    assert any("could not be written and are lost" in m for m in messages)


def test_recording_off_writes_nothing(tmp_path: Path) -> None:
    async def body() -> Path:
        async with graph_app(tmp_path) as fx:
            assert fx.app.config.query.access.record is False
            for question in QUESTIONS:
                assert (await fx.app.chain().ainvoke(question, strategy="naive")).sources
            assert fx.app.access_recorders == {}
            return Path(fx.app.backend.location)

    db = asyncio.run(body())
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM access_counts").fetchone()[0] == 0


def test_deleting_a_document_deletes_the_counts_of_its_text_units(tmp_path: Path) -> None:
    from tests.support.corpus import write_good_docs

    from unified_kg_rag.bootstrap import build_app

    write_good_docs(tmp_path / "docs")
    config = UkrConfig.model_validate({"indexing": {"methodologies": ["lazy"]},
                                       "query": {"access": {"record": True}}})  # fmt: skip

    async def body() -> None:
        async with build_app(config, tmp_path / "p") as app:
            assert (await app.index_pipeline().run([tmp_path / "docs"])).failed == []
            chain = app.chain()
            for question in ("barn owl voles", "queen bee", "clipper ship"):
                await chain.ainvoke(question, strategy="naive")
            recorder = app.access_recorder()
            assert await recorder.flush()
            units = await app.index().search.ids(TU)
            before = await recorder.log.counts(TU, units)
            assert len(before) == len(units) == 3 and set(before.values()) == {3}
            owls = [u for u in units if "Owls" in (await app.index().search.get(TU, [u]))[0].text]
            await app.index_pipeline().delete(["owls.md"])
            after = await recorder.log.counts(TU, units)
            assert after == {u: 3 for u in units if u not in owls}
            assert await recorder.log.totals() == {"text_units": 6}

    asyncio.run(body())


# ----------------------------------------------------------------- concurrency

IDS = [f"u{i}" for i in range(10)]
ROUNDS, TASKS = 5, 20


def _record_rounds(db: str, worker: int) -> None:
    """One process or thread: 20 concurrent queries x 5 rounds through its own recorder."""

    async def query(recorder: AccessRecorder, t: int) -> None:
        await asyncio.sleep(0)
        recorder.record(TU, [IDS[(worker + t) % 10], IDS[(worker + 2 * t) % 10]])

    async def body() -> None:
        async with SqliteBackend(Path(db), SqliteConfig(busy_timeout_s=10)) as backend:
            recorder = AccessRecorder(backend.access_log("default"), flush_interval_s=0.001)
            for _ in range(ROUNDS):
                await asyncio.gather(*(query(recorder, t) for t in range(TASKS)))
                await asyncio.sleep(0.002)  # let the writer write between rounds
            await recorder.aclose()

    asyncio.run(body())


def _expected(workers: range) -> dict[str, int]:
    want: Counter[str] = Counter()
    for worker in workers:
        for t in range(TASKS):
            want[IDS[(worker + t) % 10]] += ROUNDS
            want[IDS[(worker + 2 * t) % 10]] += ROUNDS
    return dict(want)


def _fresh_db(tmp_path: Path) -> Path:
    db = tmp_path / "ukr.db"

    async def create() -> None:
        async with SqliteBackend(db) as backend:
            await backend.search_index("default").upsert(
                TU, [IndexRecord(id=i, text=i) for i in IDS])

    asyncio.run(create())
    return db


def test_threads_recording_on_one_file_lose_no_increment(tmp_path: Path) -> None:
    db = _fresh_db(tmp_path)
    threads = [threading.Thread(target=_record_rounds, args=(str(db), w)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert _counts(db, TU, IDS) == _expected(range(4))
    assert sum(_expected(range(4)).values()) == 4 * ROUNDS * TASKS * 2


def test_processes_recording_on_one_file_lose_no_increment(tmp_path: Path) -> None:
    db = _fresh_db(tmp_path)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_record_rounds, args=(str(db), w)) for w in range(2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=120)
        assert proc.exitcode == 0
    assert _counts(db, TU, IDS) == _expected(range(2))


@pytest.mark.postgres
def test_threads_recording_on_one_postgres_index_lose_no_increment(postgres_url: str) -> None:
    """Three threads, each with its own backend and connection pool, on one index."""
    from tests.support.postgres import fresh_catalog

    from unified_kg_rag.adapters.postgres.backend import PostgresBackend
    from unified_kg_rag.config.models import PostgresConfig

    config = PostgresConfig(schema_name=fresh_catalog(), pool_min_size=0)

    async def create() -> None:
        async with PostgresBackend(postgres_url, config) as backend:
            await backend.search_index("default").upsert(
                TU, [IndexRecord(id=i, text=i) for i in IDS])

    def worker(w: int) -> None:
        async def body() -> None:
            async with PostgresBackend(postgres_url, config) as backend:
                recorder = AccessRecorder(backend.access_log("default"), flush_interval_s=0.001)
                for _ in range(ROUNDS):
                    recorder.record(TU, [IDS[(w + t) % 10] for t in range(TASKS)])
                    recorder.record(TU, [IDS[(w + 2 * t) % 10] for t in range(TASKS)])
                    await asyncio.sleep(0.005)
                await recorder.aclose()

        asyncio.run(body())

    async def read() -> dict[str, int]:
        async with PostgresBackend(postgres_url, config) as backend:
            return await backend.access_log("default").counts(TU, IDS)

    asyncio.run(create())
    threads = [threading.Thread(target=worker, args=(w,)) for w in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert asyncio.run(read()) == _expected(range(3))
