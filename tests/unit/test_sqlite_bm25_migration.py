"""Migration 0004 (BM25 per index and collection) on a file written with the 0003 schema.

The file is built by the released migrations 0001-0003 and filled the way the adapter of that
schema wrote records (a ``search_records`` row, its lexical terms in ``search_fts``). After the
upgrade, every search finds the same records, and each score equals SQLite FTS5's own
``bm25()`` over a table holding that index and collection alone.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.adapters.sqlite.migrations import MIGRATIONS, apply_migrations
from unified_kg_rag.domain.models import Collection, IndexRecord, SearchMode
from unified_kg_rag.domain.text.analysis import lexical_query_terms, lexical_text
from unified_kg_rag.util.errors import StoreSchemaError

pytestmark = pytest.mark.integration

TU, ENT = Collection.TEXT_UNITS, Collection.ENTITIES
OLD = tuple(m for m in MIGRATIONS if m.name <= "0003_leases")
QUERIES = ["river town", "Zephyr wind over the river", "Café", "东京都 river", "nothing-here"]
_OLD_TOKENIZER = (
    "tokenize = \"unicode61 remove_diacritics 0 categories 'L* N* Co M*' tokenchars '''.'\""
)

CONTENT: dict[tuple[str, Collection], list[str]] = {
    ("default", TU): [
        "the river flows past the town", "a zephyr wind over the river",
        "town hall and café", "東京都 has a river too", "unrelated words only",
        "river river river bank", "the town of river falls",
    ],
    ("default", ENT): ["river", "town", "zephyr", "café", "river god", "town crier"] * 5,
    ("second", TU): ["river town", "wind", "东京都的 river"],
}


def _match(query: str) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in lexical_query_terms(query))


def _write_old_file(path: Path) -> dict[tuple[str, Collection], list[str]]:
    """Create a 0003-schema file with `CONTENT` (two records of each collection with vectors);
    return the ids of each (index, collection)."""
    conn = sqlite3.connect(path, isolation_level=None)
    applied = apply_migrations(conn, location=str(path), migrations=OLD)
    assert applied == [m.name for m in OLD]
    ids: dict[tuple[str, Collection], list[str]] = {}
    rng = np.random.default_rng(1)
    for (index, collection), texts in CONTENT.items():
        ids[(index, collection)] = []
        for i, text in enumerate(texts):
            rid = f"{collection.value[0]}{i:02d}"
            vector = rng.standard_normal(4).astype(np.float32) if i < 2 else None
            blob = None if vector is None else (vector / np.linalg.norm(vector)).tobytes()
            pk = conn.execute(
                "INSERT INTO search_records (index_name, collection, id, text, fields, vector) "
                "VALUES (?, ?, ?, ?, ?, ?) RETURNING pk",
                (index, collection.value, rid, text, json.dumps({"n": i}), blob),
            ).fetchone()[0]
            conn.execute("INSERT INTO search_fts (rowid, terms) VALUES (?, ?)",
                         (pk, lexical_text(text)))
            ids[(index, collection)].append(rid)
    conn.close()
    return ids


def _old_search(path: Path, index: str, collection: Collection, query: str) -> list[str]:
    """The records the 0003 adapter found (its SQL), best first."""
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT r.id FROM search_fts JOIN search_records AS r ON r.pk = search_fts.rowid "
            "WHERE search_fts MATCH ? AND r.index_name = ? AND r.collection = ? "
            "ORDER BY bm25(search_fts), r.id",
            (_match(query), index, collection.value),
        ).fetchall()
    finally:
        conn.close()
    return [str(r[0]) for r in rows]


def _fts5_alone(records: list[tuple[str, str]], query: str) -> list[tuple[str, float]]:
    """``(id, -bm25())`` of SQLite FTS5 over a table holding only ``records``, best first."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute(f"CREATE VIRTUAL TABLE f USING fts5(terms, {_OLD_TOKENIZER})")
        conn.executemany("INSERT INTO f (rowid, terms) VALUES (?, ?)",
                         [(i, lexical_text(text)) for i, (_, text) in enumerate(records)])
        rows = conn.execute("SELECT rowid, bm25(f) FROM f WHERE f MATCH ?",
                            (_match(query),)).fetchall()
    finally:
        conn.close()
    hits = [(records[int(r)][0], -float(s)) for r, s in rows]
    return sorted(hits, key=lambda h: (-h[1], h[0]))


async def _lexical(backend: SqliteBackend, index: str, collection: Collection,
                   query: str) -> list[tuple[str, float]]:
    hits = await backend.search_index(index).search(
        collection, query_text=query, mode=SearchMode.LEXICAL, k=100)
    return [(h.id, h.score) for h in hits]


async def _stored(backend: SqliteBackend, index: str,
                  collection: Collection, ids: list[str]) -> list[tuple[str, str]]:
    return [(r.id, r.text) for r in await backend.search_index(index).get(collection, ids)]


def _stored_vector(path: Path, record_id: str) -> np.ndarray:
    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT vector FROM search_records WHERE index_name = 'default' "
                           "AND collection = 'text_units' AND id = ?", (record_id,)).fetchone()
    finally:
        conn.close()
    return np.frombuffer(row[0], dtype=np.float32)


def _assert_hits(got: list[tuple[str, float]], want: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in want]
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-12)


def test_upgrade_keeps_hits_and_scores_each_collection_alone(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"
    ids = _write_old_file(path)
    before = {(key, q): _old_search(path, *key, q) for key in CONTENT for q in QUERIES}
    assert sum(map(len, before.values())) > 30

    async def body() -> None:
        async with SqliteBackend(path) as backend:
            for key in CONTENT:
                records = await _stored(backend, *key, ids[key])
                for q in QUERIES:
                    got = await _lexical(backend, *key, q)
                    assert sorted(i for i, _ in got) == sorted(before[(key, q)]), (key, q)
                    _assert_hits(got, _fts5_alone(records, q))
            idx = backend.search_index("default")
            vec = _stored_vector(path, "t01")
            hits = await idx.search(TU, query_vector=vec, mode=SearchMode.VECTOR, k=2)
            assert hits[0].id == "t01"
            assert hits[0].score == pytest.approx(1.0, abs=1e-6)
            hybrid = await idx.search(TU, query_text="zephyr", query_vector=vec, k=2,
                                      filters={"n": 1})
            assert [(h.id, h.lexical_rank, h.vector_rank) for h in hybrid] == [("t01", 1, 1)]

    asyncio.run(body())
    conn = sqlite3.connect(path)
    try:
        stats = {(r[0], r[1]): (r[2], r[3]) for r in conn.execute(
            "SELECT index_name, collection, n_docs, total_terms FROM search_namespaces")}
        names = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    finally:
        conn.close()
    assert stats == {
        (index, c.value): (len(texts), sum(len(lexical_text(t).split()) for t in texts))
        for (index, c), texts in CONTENT.items()
    }
    assert names == sorted(m.name for m in MIGRATIONS)


def test_file_with_one_collection_ranks_exactly_as_before(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"
    conn = sqlite3.connect(path, isolation_level=None)
    apply_migrations(conn, location=str(path), migrations=OLD)
    texts = CONTENT[("default", TU)]
    for i, text in enumerate(texts):
        conn.execute("INSERT INTO search_records (pk, index_name, collection, id, text) "
                     "VALUES (?, 'default', 'text_units', ?, ?)", (i + 1, f"t{i}", text))
        conn.execute("INSERT INTO search_fts (rowid, terms) VALUES (?, ?)",
                     (i + 1, lexical_text(text)))
    old = {q: [(str(r[0]), -float(r[1])) for r in conn.execute(
        "SELECT r.id, bm25(search_fts) FROM search_fts JOIN search_records AS r "
        "ON r.pk = search_fts.rowid WHERE search_fts MATCH ? ORDER BY 2, 1", (_match(q),))]
        for q in QUERIES}
    conn.close()

    async def body() -> dict[str, list[tuple[str, float]]]:
        async with SqliteBackend(path) as backend:
            return {q: await _lexical(backend, "default", TU, q) for q in QUERIES}

    new = asyncio.run(body())
    assert sum(map(len, old.values())) > 5
    for q in QUERIES:
        _assert_hits(new[q], old[q])


def test_upgraded_file_takes_writes_and_is_refused_by_old_code(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"
    ids = _write_old_file(path)

    async def body() -> None:
        async with SqliteBackend(path) as backend:
            idx = backend.search_index("default")
            await idx.upsert(TU, [IndexRecord(id="t00", text="a brand new river text"),
                                  IndexRecord(id="new", text="river and town and zephyr")])
            assert await idx.delete(TU, ["t01", "t02"]) == 2
            await idx.upsert(ENT, [IndexRecord(id="x", text="river")] * 2)
            for key in (("default", TU), ("default", ENT), ("second", TU)):
                wanted = [*ids[key], "new", "x"]
                records = await _stored(backend, *key, wanted)
                for q in QUERIES:
                    _assert_hits(await _lexical(backend, *key, q), _fts5_alone(records, q))

    asyncio.run(body())
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        with pytest.raises(StoreSchemaError, match="0004_bm25_per_collection"):
            apply_migrations(conn, location=str(path), migrations=OLD)
    finally:
        conn.close()
