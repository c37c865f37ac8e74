"""SQLite-only behaviour of the store backend: files, schema, threads, errors, the loader."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from unified_kg_rag.adapters.registry import STORE_BACKENDS
from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.adapters.sqlite.migrations import MIGRATIONS
from unified_kg_rag.config.models import SqliteConfig, StoresConfig
from unified_kg_rag.domain.models import (
    Collection,
    DocRecord,
    DocStatus,
    Entity,
    IndexRecord,
    SearchMode,
)
from unified_kg_rag.util.errors import StoreConnectionError, StoreError, StoreSchemaError

pytestmark = pytest.mark.integration

TU = Collection.TEXT_UNITS


async def _fill(backend: SqliteBackend) -> None:
    idx = backend.search_index("default")
    await idx.bind_embedding("m", 2)
    record = IndexRecord(id="a", text="persistent walrus")
    await idx.upsert(TU, [record], np.ones((1, 2), np.float32))
    await backend.graph_store("default").upsert_entities([Entity(id="e", name="E")])
    await backend.doc_registry("default").put([
        DocRecord(document_id="d", path="p.md", source_scope="s", content_hash="h",
                  status=DocStatus.PROCESSED)
    ])
    await backend.record_store("_shared").put("cache", "k", "v")


def test_data_persists_after_reopen(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"

    async def body() -> None:
        async with SqliteBackend(path) as backend:
            await _fill(backend)
        async with SqliteBackend(path) as backend:
            idx = backend.search_index("default")
            assert await idx.embedding() == ("m", 2)
            hits = await idx.search(TU, query_text="walrus", query_vector=np.ones(2, np.float32))
            assert [(h.id, h.lexical_rank, h.vector_rank) for h in hits] == [("a", 1, 1)]
            assert [e.id for e in await backend.graph_store("default").get_entities(["e"])] == ["e"]
            assert list(await backend.doc_registry("default").get(["d"])) == ["d"]
            assert await backend.record_store("_shared").get("cache", "k") == "v"
            assert await backend.list_indexes() == ["default"]

    asyncio.run(body())


def test_wal_mode_and_schema_ledger(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"

    async def body() -> None:
        async with SqliteBackend(path) as backend:
            await _fill(backend)

    asyncio.run(body())
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
        assert names == sorted(m.name for m in MIGRATIONS)
    finally:
        conn.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"

    async def create() -> None:
        async with SqliteBackend(path) as backend:
            await _fill(backend)

    asyncio.run(create())
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations VALUES ('9999_from_the_future', 0)")
    conn.commit()
    conn.close()

    async def reopen() -> None:
        async with SqliteBackend(path) as backend:
            with pytest.raises(StoreSchemaError) as err:
                await backend.list_indexes()
            assert "9999_from_the_future" in str(err.value)
            assert str(path) in str(err.value)
            with pytest.raises(StoreSchemaError):
                await backend.record_store("x").put("n", "k", "v")

    asyncio.run(reopen())


def test_use_after_close_raises(tmp_path: Path) -> None:
    async def body() -> None:
        backend = SqliteBackend(tmp_path / "ukr.db")
        idx = backend.search_index("default")
        await idx.upsert(TU, [IndexRecord(id="a", text="x")])
        await backend.aclose()
        await backend.aclose()  # idempotent
        with pytest.raises(StoreConnectionError):
            await idx.count(TU)
        with pytest.raises(StoreConnectionError):
            await backend.record_store("s").put("n", "k", "v")
        with pytest.raises(StoreConnectionError):
            await backend.list_indexes()

    asyncio.run(body())


def test_reads_create_nothing_and_first_write_creates_the_file(tmp_path: Path) -> None:
    path = tmp_path / "state" / "deeper" / "ukr.db"

    async def body() -> None:
        async with SqliteBackend(path) as backend:
            assert await backend.list_indexes() == []
            assert await backend.search_index("i").count(TU) == 0
            assert await backend.search_index("i").embedding() is None
            hits = await backend.search_index("i").search(
                TU, query_text="x", mode=SearchMode.LEXICAL
            )
            assert hits == []
            assert await backend.graph_store("i").counts() == {
                "entities": 0, "relationships": 0, "communities": 0, "reports": 0
            }
            assert await backend.doc_registry("i").status_counts() == {}
            assert await backend.record_store("i").get("n", "k") is None
            assert not (tmp_path / "state").exists()
            await backend.record_store("i").put("n", "k", "v")
            assert path.is_file()
            assert await backend.record_store("i").get("n", "k") == "v"

    asyncio.run(body())


def test_registry_loader_resolves_paths(tmp_path: Path) -> None:
    loader = STORE_BACKENDS.get("sqlite")
    relative = loader(StoresConfig(), tmp_path)
    assert relative.location == str(tmp_path / ".ukr" / "ukr.db")
    absolute = tmp_path / "elsewhere.db"
    config = StoresConfig(sqlite=SqliteConfig(path=str(absolute)))
    assert loader(config, tmp_path / "project").location == str(absolute)
    asyncio.run(relative.aclose())
    assert not (tmp_path / ".ukr").exists()


def test_unopenable_file_raises_connection_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")

    async def body() -> None:
        async with SqliteBackend(blocker / "ukr.db") as backend:
            with pytest.raises(StoreConnectionError) as err:
                await backend.record_store("s").put("n", "k", "v")
            assert str(blocker) in str(err.value)
        async with SqliteBackend(tmp_path) as backend:  # a directory is no database
            with pytest.raises(StoreConnectionError):
                await backend.list_indexes()

    asyncio.run(body())


def test_not_a_database_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not sqlite" * 100)

    async def body() -> None:
        async with SqliteBackend(path) as backend:
            with pytest.raises(StoreError) as err:
                await backend.list_indexes()
            assert str(path) in str(err.value)

    asyncio.run(body())


def test_locked_database_raises_connection_error(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"

    async def body() -> None:
        async with SqliteBackend(path, SqliteConfig(busy_timeout_s=0.2)) as backend:
            await backend.record_store("s").put("n", "k", "v")
            other = sqlite3.connect(path, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")
            try:
                with pytest.raises(StoreConnectionError) as err:
                    await backend.record_store("s").put("n", "k", "v2")
                assert "locked" in str(err.value)
            finally:
                other.execute("ROLLBACK")
                other.close()
            assert await backend.record_store("s").get("n", "k") == "v"

    asyncio.run(body())


def test_vector_cache_sees_writes_of_another_connection(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"
    vec = np.asarray([[1.0, 0.0]], np.float32)

    async def body() -> None:
        async with SqliteBackend(path) as reader, SqliteBackend(path) as writer:
            await writer.search_index("i").upsert(TU, [IndexRecord(id="a", text="a")], vec)
            idx = reader.search_index("i")
            first = await idx.search(TU, query_vector=vec[0], mode=SearchMode.VECTOR)
            assert [h.id for h in first] == ["a"]
            await writer.search_index("i").upsert(TU, [IndexRecord(id="b", text="b")], vec)
            await writer.search_index("i").delete(TU, ["a"])
            second = await idx.search(TU, query_vector=vec[0], mode=SearchMode.VECTOR)
            assert [h.id for h in second] == ["b"]

    asyncio.run(body())


def test_concurrent_calls_are_serialised(tmp_path: Path) -> None:
    async def body() -> None:
        async with SqliteBackend(tmp_path / "ukr.db") as backend:
            store = backend.record_store("s")
            await asyncio.gather(*(store.put("n", f"k{i}", str(i)) for i in range(50)))
            values = await asyncio.gather(*(store.get("n", f"k{i}") for i in range(50)))
            assert values == [str(i) for i in range(50)]
            assert await store.count("n") == 50

    asyncio.run(body())


def test_migration_0002_reindexes_existing_terms_exactly(tmp_path: Path) -> None:
    """A file written before 0002 (FTS5 folded accents and split "o'neil") is re-indexed with
    the shared lexical terms, and searches through the new analysis find its records."""
    from unified_kg_rag.adapters.sqlite.migrations import apply_migrations

    path = tmp_path / "ukr.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn, location=str(path), migrations=MIGRATIONS[:1])
    conn.execute(
        "INSERT INTO search_records (pk, index_name, collection, id, text) VALUES "
        "(1, 'default', 'text_units', 'a', 'O’Neil visited the Café'), "
        "(2, 'default', 'text_units', 'b', 'neil and o went to a cafe')"
    )
    conn.executemany("INSERT INTO search_fts (rowid, terms) VALUES (?, ?)",
                     [(1, "o'neil visited the café"), (2, "neil and o went to a cafe")])
    conn.close()

    async def body() -> dict[str, list[str]]:
        async with SqliteBackend(path) as backend:
            idx = backend.search_index("default")
            return {
                q: [h.id for h in await idx.search(TU, query_text=q, mode=SearchMode.LEXICAL)]
                for q in ("o'neil", "O’NEIL", "cafe", "café", "neil")
            }

    assert asyncio.run(body()) == {
        "o'neil": ["a"], "O’NEIL": ["a"], "cafe": ["a", "b"], "café": ["a", "b"],
        "neil": ["b"],
    }
    conn = sqlite3.connect(path)
    try:
        terms = dict(conn.execute("SELECT rowid, terms FROM search_fts ORDER BY rowid"))
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    finally:
        conn.close()
    # since 0004 each term carries the number of its (index, collection) namespace
    assert terms == {1: "1:o'neil 1:visited 1:the 1:cafe",
                     2: "1:neil 1:and 1:o 1:went 1:to 1:a 1:cafe"}
    assert names == sorted(m.name for m in MIGRATIONS)
