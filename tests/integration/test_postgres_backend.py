"""What only the PostgreSQL backend has: schemas per index, migrations, typed connection and
timeout errors, pool closing, concurrent readers and writers, HNSW use, text-search options.

The conformance suites (tests/conformance) cover the port behaviour on every backend; these
tests run against a real PostgreSQL 16 + pgvector server (pgserver, or UKR_TEST_POSTGRES_URL).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest
from tests.support.postgres import fresh_catalog

from unified_kg_rag.adapters.postgres import load_postgres_backend
from unified_kg_rag.adapters.postgres.backend import PostgresBackend
from unified_kg_rag.adapters.postgres.database import APPLICATION_NAME, Conn, index_schema_name
from unified_kg_rag.adapters.postgres.urls import masked_location, scrub
from unified_kg_rag.config.models import PostgresConfig, StoresConfig
from unified_kg_rag.domain.models import (
    Collection,
    DocRecord,
    DocStatus,
    Entity,
    IndexRecord,
    SearchMode,
)
from unified_kg_rag.util.errors import (
    ConfigurationError,
    StoreConnectionError,
    StoreError,
    StoreSchemaError,
    StoreTimeoutError,
)

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

TU = Collection.TEXT_UNITS


@pytest.fixture
def catalog() -> str:
    return fresh_catalog()


@pytest.fixture
def backend(postgres_url: str, catalog: str) -> Iterator[PostgresBackend]:
    store = PostgresBackend(postgres_url, PostgresConfig(schema_name=catalog, pool_min_size=0))
    yield store
    store.close()


def _sql(url: str, query: str, *args: object) -> list[tuple[object, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(query, args or None)
        return cur.fetchall() if cur.description else []


def test_each_index_lives_in_its_own_schema(
    backend: PostgresBackend, postgres_url: str, catalog: str
) -> None:
    async def body() -> None:
        for name, text in (("one", "alpha marmot"), ("two", "beta marmot")):
            await backend.search_index(name).upsert(TU, [IndexRecord(id="x", text=text)])
            await backend.graph_store(name).upsert_entities(
                [Entity(id="e", name=name, text_unit_ids=("x",))])
            await backend.doc_registry(name).put([DocRecord(
                document_id="d", path=f"{name}.md", source_scope="s", content_hash=name,
                status=DocStatus.PROCESSED)])
            await backend.record_store(name).put("ns", "k", name)
        await backend.record_store("_shared").put("ns", "k", "shared")
        assert await backend.list_indexes() == ["one", "two"]
        hits = await backend.search_index("two").search(TU, query_text="marmot",
                                                         mode=SearchMode.LEXICAL)
        assert [h.text for h in hits] == ["beta marmot"]
        assert [e.name for e in await backend.graph_store("one").get_entities(["e"])] == ["one"]
        assert (await backend.doc_registry("two").get(["d"]))["d"].path == "two.md"
        assert await backend.record_store("one").get("ns", "k") == "one"
        assert await backend.record_store("_shared").get("ns", "k") == "shared"
        assert await backend.record_store("three").get("ns", "k") is None

    asyncio.run(body())
    rows = _sql(postgres_url, f'SELECT name, schema_name FROM "{catalog}".indexes ORDER BY name')
    assert rows == [("one", index_schema_name(catalog, "one")),
                    ("two", index_schema_name(catalog, "two"))]
    for _, schema in rows:
        tables = {r[0] for r in _sql(
            postgres_url, "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = %s", schema)}
        assert {"search_records", "entities", "relationships", "doc_records", "records",
                "schema_migrations"} <= tables
    # the shared scope lives in the catalog, keyed by scope
    assert _sql(postgres_url, f'SELECT scope FROM "{catalog}".records') == [("_shared",)]


def test_reads_of_a_missing_index_create_nothing(
    backend: PostgresBackend, postgres_url: str, catalog: str
) -> None:
    async def body() -> None:
        idx = backend.search_index("ghost")
        assert await idx.count(TU) == 0
        assert await idx.search(TU, query_text="x", query_vector=np.ones(3, np.float32)) == []
        assert await idx.delete(TU, ["a"]) == 0
        assert await backend.doc_registry("ghost").list_records() == []
        assert await backend.graph_store("ghost").counts() == {
            "entities": 0, "relationships": 0, "communities": 0, "reports": 0}

    asyncio.run(body())
    assert _sql(postgres_url, f'SELECT count(*) FROM "{catalog}".indexes') == [(0,)]
    schemas = _sql(postgres_url, "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
                   f"{catalog}\\_%")
    assert schemas == []


def test_schema_names_are_distinct_and_legal() -> None:
    names = {index_schema_name("ukr", n) for n in ("A", "a", "x.y", "x_y", "x-y", "z" * 64)}
    assert len(names) == 6
    assert all(len(n.encode()) <= 63 for n in names)
    assert index_schema_name("ukr", "Docs.v2") == index_schema_name("ukr", "Docs.v2")


def test_a_newer_catalog_or_index_schema_is_refused(postgres_url: str, catalog: str) -> None:
    config = PostgresConfig(schema_name=catalog, pool_min_size=0)

    async def write() -> None:
        async with PostgresBackend(postgres_url, config) as store:
            await store.record_store("idx").put("ns", "k", "v")

    asyncio.run(write())
    schema = index_schema_name(catalog, "idx")
    _sql(postgres_url, f'INSERT INTO "{schema}".schema_migrations (name) VALUES (%s)',
         "9999_from_the_future")

    async def read_index() -> None:
        async with PostgresBackend(postgres_url, config) as store:
            await store.record_store("idx").get("ns", "k")

    with pytest.raises(StoreSchemaError, match="9999_from_the_future"):
        asyncio.run(read_index())
    _sql(postgres_url, f'INSERT INTO "{catalog}".schema_migrations (name) VALUES (%s)',
         "9998_catalog_from_the_future")

    async def open_catalog() -> None:
        async with PostgresBackend(postgres_url, config) as store:
            await store.list_indexes()

    with pytest.raises(StoreSchemaError, match=r"newer version.*9998_catalog_from_the_future"):
        asyncio.run(open_catalog())
    # nothing was touched: the stored value is still there
    assert _sql(postgres_url, f'SELECT convert_from(value, \'UTF8\') FROM "{schema}".records') == [
        ("v",)]


def test_migrations_are_recorded_once_with_concurrent_first_use(
    postgres_url: str, catalog: str
) -> None:
    config = PostgresConfig(schema_name=catalog, pool_min_size=0)
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        async def body() -> None:
            async with PostgresBackend(postgres_url, config) as store:
                await store.search_index("shared").upsert(TU, [IndexRecord(id=f"r{n}", text="x")])

        try:
            asyncio.run(body())
        except BaseException as exc:  # collected for the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    schema = index_schema_name(catalog, "shared")
    assert _sql(postgres_url, f'SELECT name FROM "{schema}".schema_migrations ORDER BY name'
                ) == [("0001_initial",), ("0002_doc_status_quarantined",),
                      ("0003_access_counts",)]
    assert _sql(postgres_url, f'SELECT count(*) FROM "{schema}".search_records') == [(4,)]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://ukr:s3cret@127.0.0.1:1/ukr", "127.0.0.1:1"),
        ("postgresql://ukr:s3cret@host.invalid:5432/ukr", "host.invalid"),
    ],
)
def test_unreachable_server_raises_connection_error_without_the_password(
    url: str, expected: str
) -> None:
    store = PostgresBackend(url, PostgresConfig(connect_timeout_s=2))
    started = time.monotonic()
    with pytest.raises(StoreConnectionError) as err:
        asyncio.run(store.search_index("x").count(TU))
    assert time.monotonic() - started < 30
    assert expected in str(err.value) and "s3cret" not in str(err.value)
    store.close()


def test_authentication_and_database_failures_are_connection_errors(postgres_url: str) -> None:
    info = psycopg.conninfo.conninfo_to_dict(postgres_url)
    bad_role = psycopg.conninfo.make_conninfo(**{**info, "user": "nobody_here"})
    bad_db = psycopg.conninfo.make_conninfo(**{**info, "dbname": "no_such_db"})
    for url, needle in ((bad_role, "nobody_here"), (bad_db, "no_such_db")):
        store = PostgresBackend(url)
        with pytest.raises(StoreConnectionError, match=needle):
            asyncio.run(store.list_indexes())
        store.close()


def test_statement_timeout_raises_timeout_error(postgres_url: str, catalog: str) -> None:
    config = PostgresConfig(schema_name=catalog, statement_timeout_s=0.2, pool_min_size=0)

    async def body() -> None:
        async with PostgresBackend(postgres_url, config) as store:

            async def slow(conn: Conn) -> None:
                await conn.execute("SELECT pg_sleep(5)")

            with pytest.raises(StoreTimeoutError, match="statement_timeout_s"):
                await store.database.catalog_tx(slow)
            assert await store.list_indexes() == []  # the pool recovered

    started = time.monotonic()
    asyncio.run(body())
    assert time.monotonic() - started < 4


def test_close_releases_every_connection(postgres_url: str, catalog: str) -> None:
    def sessions() -> int:
        rows = _sql(postgres_url, "SELECT count(*) FROM pg_stat_activity "
                    "WHERE application_name = %s", APPLICATION_NAME)
        return int(rows[0][0])  # type: ignore[call-overload]

    before = sessions()
    store = PostgresBackend(postgres_url, PostgresConfig(schema_name=catalog, pool_min_size=2))

    async def use() -> None:
        await asyncio.gather(*(store.search_index("i").count(TU) for _ in range(6)))

    asyncio.run(use())  # one event loop ...
    asyncio.run(use())  # ... and another: the pool lives on the backend's own loop
    assert sessions() > before
    asyncio.run(store.aclose())
    asyncio.run(store.aclose())  # idempotent
    deadline = time.monotonic() + 5
    while sessions() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sessions() == before
    with pytest.raises(StoreConnectionError, match="closed"):
        asyncio.run(store.search_index("i").count(TU))


def test_readers_are_not_blocked_by_a_writer_and_writers_queue(
    postgres_url: str, catalog: str
) -> None:
    config = PostgresConfig(schema_name=catalog, pool_min_size=0)
    writer, reader = PostgresBackend(postgres_url, config), PostgresBackend(postgres_url, config)
    in_tx, release = threading.Event(), threading.Event()
    order: list[str] = []

    async def seed() -> None:
        await writer.search_index("i").upsert(TU, [IndexRecord(id="a", text="first")])

    asyncio.run(seed())

    def long_write() -> None:
        async def job(conn: Conn) -> None:
            await conn.execute("UPDATE search_records SET text = 'changed'")
            in_tx.set()
            await asyncio.get_running_loop().run_in_executor(None, release.wait, 10)
            order.append("first writer done")

        asyncio.run(writer.database.write_index("i", job))

    thread = threading.Thread(target=long_write)
    thread.start()
    assert in_tx.wait(10)

    async def read_and_write() -> None:
        started = time.monotonic()
        got = await reader.search_index("i").get(TU, ["a"])
        assert time.monotonic() - started < 2  # not blocked by the open write transaction
        assert [r.text for r in got] == ["first"]  # and sees only committed data
        second = asyncio.create_task(
            reader.search_index("i").upsert(TU, [IndexRecord(id="b", text="second")]))
        await asyncio.sleep(0.5)
        assert not second.done()  # the second writer waits for the first (advisory lock)
        release.set()
        await second
        order.append("second writer done")

    asyncio.run(read_and_write())
    thread.join()
    assert order == ["first writer done", "second writer done"]

    async def final() -> list[str]:
        return [r.text for r in await reader.search_index("i").get(TU, ["a", "b"])]

    assert asyncio.run(final()) == ["changed", "second"]
    writer.close()
    reader.close()


def test_vector_search_uses_the_hnsw_index(postgres_url: str, catalog: str) -> None:
    backend = PostgresBackend(postgres_url, PostgresConfig(
        schema_name=catalog, pool_min_size=0, exact_search_max_vectors=1000))
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((3000, 32)).astype(np.float32)
    schema = index_schema_name(catalog, "big")

    def index_scans() -> int:
        rows = _sql(postgres_url, "SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes "
                    "WHERE schemaname = %s AND indexrelname = 'search_records_hnsw_text_units'",
                    schema)
        return int(rows[0][0])  # type: ignore[call-overload]

    async def body() -> list[str]:
        idx = backend.search_index("big")
        await idx.bind_embedding("m", 32)
        records = [IndexRecord(id=f"r{i:04d}", text=f"record {i}") for i in range(3000)]
        await idx.upsert(TU, records, vectors)
        _sql(postgres_url, f'ANALYZE "{schema}".search_records')
        hits = await idx.search(TU, query_vector=vectors[7], mode=SearchMode.VECTOR, k=5)
        return [h.id for h in hits]

    before = index_scans()
    ids = asyncio.run(body())
    assert ids[0] == "r0007"
    backend.close()  # sessions flush their statistics when they end
    deadline = time.monotonic() + 10
    while index_scans() == before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert index_scans() > before


def test_dimensions_beyond_hnsw_limit_search_exactly(backend: PostgresBackend) -> None:
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((20, 2048)).astype(np.float32)

    async def body() -> list[str]:
        idx = backend.search_index("wide")
        await idx.upsert(TU, [IndexRecord(id=f"w{i:02d}", text="w") for i in range(20)], vectors)
        hits = await idx.search(TU, query_vector=vectors[3], mode=SearchMode.VECTOR, k=3)
        return [h.id for h in hits]

    assert asyncio.run(body())[0] == "w03"


def test_language_configuration_stems_terms(postgres_url: str, catalog: str) -> None:
    config = PostgresConfig(schema_name=catalog, text_search_config="english", pool_min_size=0)

    async def body() -> tuple[list[str], list[str]]:
        async with PostgresBackend(postgres_url, config) as store:
            idx = store.search_index("en")
            await idx.upsert(TU, [IndexRecord(id="run", text="She was running races daily"),
                                  IndexRecord(id="other", text="A quiet library")])
            stemmed = await idx.search(TU, query_text="runs", mode=SearchMode.LEXICAL)
            await idx.delete(TU, ["run"])
            after = await idx.search(TU, query_text="runs", mode=SearchMode.LEXICAL)
            return [h.id for h in stemmed], [h.id for h in after]

    assert asyncio.run(body()) == (["run"], [])


def test_ts_rank_cd_ranking_is_available(postgres_url: str, catalog: str) -> None:
    config = PostgresConfig(schema_name=catalog, lexical_ranking="ts_rank_cd", pool_min_size=0)

    async def body() -> list[str]:
        async with PostgresBackend(postgres_url, config) as store:
            idx = store.search_index("r")
            await idx.upsert(TU, [
                IndexRecord(id="one", text="quokka seen once near the river bank"),
                IndexRecord(id="both", text="quokka habitat: the quokka habitat is scrub"),
                IndexRecord(id="none", text="nothing relevant"),
            ])
            hits = await idx.search(TU, query_text="quokka habitat", mode=SearchMode.LEXICAL)
            return [h.id for h in hits]

    assert asyncio.run(body()) == ["both", "one"]


def test_loader_requires_a_url_and_masks_the_password(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"stores\.postgres\.url.*UKR_STORES__POSTGRES__URL"):
        load_postgres_backend(StoresConfig(kind="postgres"), tmp_path)
    config = StoresConfig.model_validate(
        {"kind": "postgres", "postgres": {"url": "postgresql://me:pw123@db.example:6543/prod"}})
    store = load_postgres_backend(config, tmp_path)
    assert store.location == "postgresql://me@db.example:6543/prod"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql+psycopg://ukr:S3cretPW@db.example.com:5432/ukr", "SQLAlchemy"),
        ("mysql://ukr:S3cretPW@db.example.com/ukr", "must start with postgresql://"),
        ("host=db user=ukr password=S3cretPW dbname", "not a valid libpq connection URL"),
    ],
)
def test_bad_urls_are_configuration_errors_without_the_password(
    tmp_path: Path, url: str, message: str
) -> None:
    config = StoresConfig.model_validate({"kind": "postgres", "postgres": {"url": url}})
    with pytest.raises(ConfigurationError, match=message) as err:
        load_postgres_backend(config, tmp_path)
    assert "S3cretPW" not in str(err.value) and "stores.postgres.url" in str(err.value)


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://ukr:Pa/ssw0rd@localhost:5432/ukr", "postgresql://ukr@localhost:5432/ukr"),
        ("postgresql://ukr:p@ss@db:5432/ukr?sslmode=require&password=x",
         "postgresql://ukr@db:5432/ukr"),
        ("postgresql://ukr:with space%zz@db/ukr", "postgresql://ukr@db/ukr"),
        ("postgresql+psycopg://u:S3cret@h/d", "postgresql+psycopg://u@h/d"),
        ("host=h port=5433 user=u password=S3cret dbname=d", "postgresql://u@h:5433/d"),
        ("host=h password='unterminated", "postgresql://(unparsable connection string)"),
    ],
)
def test_locations_never_show_the_password(url: str, shown: str) -> None:
    assert masked_location(url) == shown


def test_error_messages_are_scrubbed() -> None:
    url = "postgresql://ukr:Pa/ss@db/x"
    text = 'missing "=" after "postgresql://ukr:Pa/ss@db/x" in connection info string'
    assert "Pa/ss" not in scrub(text, url)
    assert scrub("password=hunter2 host=x", "host=x password=hunter2") == "password=*** host=x"


@pytest.mark.parametrize(
    ("url", "secret", "shown"),
    [
        ("postgresql://ukr:S3cret@[db/x", "S3cret", "postgresql://ukr:***@[db/x"),
        ("postgresql://ukr:S3cr%zzet@db/x", "S3cr%zzet", 'token: "***"'),
    ],
)
def test_the_driver_error_kept_as_the_cause_is_scrubbed_too(
    url: str, secret: str, shown: str
) -> None:
    """``--verbose`` prints the cause of a store error: psycopg quotes the connection string
    it could not parse, password included, unless the cause is scrubbed as well."""
    store = PostgresBackend(url, PostgresConfig(connect_timeout_s=2))
    with pytest.raises(StoreError) as err:
        asyncio.run(store.list_indexes())
    store.close()
    cause = err.value.__cause__
    assert secret not in str(err.value) and cause is not None
    assert secret not in str(cause) and secret not in repr(cause)
    assert shown in str(cause) and shown in str(err.value)


def test_pool_bounds_are_validated() -> None:
    with pytest.raises(ValueError, match="pool_min_size must not exceed pool_max_size"):
        PostgresConfig(pool_min_size=5, pool_max_size=2)


def test_many_identical_vectors_do_not_hide_the_others(backend: PostgresBackend) -> None:
    """Boilerplate repeated in every file gives hundreds of identical vectors; each distinct
    record must still be found by its own vector (HNSW alone misses most of them)."""
    rng = np.random.default_rng(5)
    unique = rng.standard_normal((9, 64)).astype(np.float32)
    boiler = np.repeat(rng.standard_normal((1, 64)).astype(np.float32), 2000, axis=0)

    async def body() -> list[str]:
        idx = backend.search_index("dups")
        records = [IndexRecord(id=f"b{i:04d}", text="boilerplate") for i in range(2000)]
        records += [IndexRecord(id=f"u{i}", text=f"unique {i}") for i in range(9)]
        await idx.upsert(TU, records, np.vstack([boiler, unique]))
        found = []
        for i in range(9):
            hits = await idx.search(TU, query_vector=unique[i], mode=SearchMode.VECTOR, k=1)
            found.append(hits[0].id)
        return found

    assert asyncio.run(body()) == [f"u{i}" for i in range(9)]


def test_changing_text_search_config_on_an_index_is_refused(
    postgres_url: str, catalog: str
) -> None:
    async def build() -> None:
        async with PostgresBackend(postgres_url, PostgresConfig(schema_name=catalog)) as store:
            await store.search_index("i").upsert(TU, [IndexRecord(id="a", text="running fast")])

    asyncio.run(build())
    stemmed = PostgresConfig(schema_name=catalog, text_search_config="english")

    async def query() -> None:
        async with PostgresBackend(postgres_url, stemmed) as store:
            await store.search_index("i").search(TU, query_text="runs", mode=SearchMode.LEXICAL)

    with pytest.raises(ConfigurationError, match="built with text_search_config 'simple'"):
        asyncio.run(query())


def test_a_read_only_session_can_query_an_existing_index(
    postgres_url: str, catalog: str
) -> None:
    async def build() -> None:
        async with PostgresBackend(postgres_url, PostgresConfig(schema_name=catalog)) as store:
            await store.search_index("i").upsert(TU, [IndexRecord(id="a", text="pangolin")])

    asyncio.run(build())
    info = psycopg.conninfo.conninfo_to_dict(postgres_url)
    read_only = psycopg.conninfo.make_conninfo(
        **{**info, "options": "-c default_transaction_read_only=on"})

    async def query() -> tuple[list[str], list[str]]:
        async with PostgresBackend(read_only, PostgresConfig(schema_name=catalog)) as store:
            hits = await store.search_index("i").search(TU, query_text="pangolin",
                                                         mode=SearchMode.LEXICAL)
            return [h.id for h in hits], await store.list_indexes()

    assert asyncio.run(query()) == (["a"], ["i"])


def test_close_waits_for_calls_in_flight(postgres_url: str, catalog: str) -> None:
    async def body() -> tuple[object, float]:
        store = PostgresBackend(postgres_url, PostgresConfig(schema_name=catalog))

        async def slow(conn: Conn) -> str:
            await conn.execute("SELECT pg_sleep(0.5)")
            return "done"

        call = asyncio.create_task(store.database.catalog_tx(slow))
        await asyncio.sleep(0.2)
        started = time.monotonic()
        await store.aclose()
        return await asyncio.wait_for(call, 5), time.monotonic() - started

    result, waited = asyncio.run(body())
    assert result == "done" and waited < 5


def test_bm25_with_pruned_terms_equals_sqlite_on_a_zipf_corpus(
    backend: PostgresBackend, tmp_path: Path
) -> None:
    """Common query terms are matched last (MaxScore pruning); the top-10 and the scores must
    still be exactly SQLite FTS5's."""
    from unified_kg_rag.adapters.sqlite import SqliteBackend

    rng = np.random.default_rng(11)
    vocab = [f"w{i}" for i in range(400)]
    weights = 1.0 / np.arange(1, 401) ** 1.1
    weights /= weights.sum()
    texts = [" ".join(rng.choice(vocab, size=int(rng.integers(5, 40)), p=weights))
             for _ in range(800)]
    records = [IndexRecord(id=f"r{i:04d}", text=t) for i, t in enumerate(texts)]
    queries = [" ".join(rng.choice(vocab, size=int(rng.integers(2, 5)), p=weights))
               for _ in range(40)]
    queries += ["w0 w1 w350", "w2 w399", "w0", "w0 w1 w2 w3"]

    async def run(store: PostgresBackend | SqliteBackend) -> list[list[tuple[str, float]]]:
        idx = store.search_index("zipf")
        for start in range(0, len(records), 200):
            await idx.upsert(TU, records[start:start + 200])
        out = []
        for q in queries:
            hits = await idx.search(TU, query_text=q, mode=SearchMode.LEXICAL, k=10)
            out.append([(h.id, h.score) for h in hits])
        return out

    sqlite = SqliteBackend(tmp_path / "z.db")
    want = asyncio.run(run(sqlite))
    asyncio.run(sqlite.aclose())
    got = asyncio.run(run(backend))
    for q, w, g in zip(queries, want, got, strict=True):
        assert [i for i, _ in g] == [i for i, _ in w], q
        assert [s for _, s in g] == pytest.approx([s for _, s in w], rel=1e-9), q
