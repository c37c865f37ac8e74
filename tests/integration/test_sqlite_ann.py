"""The SQLite store's HNSW index (adapters/sqlite/ann.py) on real database files.

Results are compared with the same file searched exactly (a second backend with
``stores.sqlite.ann.enabled: false``): equal below the threshold, recall@10 >= 0.95 above it;
writes through the port, through another connection and by a killed process are reflected;
a missing, truncated, foreign or future index file is verified and rebuilt.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray
from pydantic import ValidationError

from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.config.models import SqliteAnnConfig, SqliteConfig
from unified_kg_rag.domain.models import Collection, IndexRecord, SearchMode
from unified_kg_rag.ports import Filters

pytest.importorskip("usearch")
pytestmark = pytest.mark.integration

TU = Collection.TEXT_UNITS
DIM = 48
ROOT = Path(__file__).resolve().parents[2]


def clustered(n: int, seed: int = 0, dim: int = DIM) -> NDArray[np.float32]:
    """``[n, dim]`` float32: 40 random centres plus noise (cosine to the centre about 0.8)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim)).astype(np.float32)
    noise = 0.75 * rng.standard_normal((n, dim)).astype(np.float32)
    return centres[rng.integers(0, 40, n)] + noise


def records(n: int, start: int = 0) -> list[IndexRecord]:
    return [IndexRecord(id=f"u{i:05d}", text=f"unit {i}", fields={"part": i % 50})
            for i in range(start, start + n)]  # fmt: skip


def ann(threshold: int = 500, **values: object) -> SqliteConfig:
    return SqliteConfig(ann=SqliteAnnConfig(exact_search_max_vectors=threshold, **values))  # type: ignore[arg-type]


EXACT = SqliteConfig(ann=SqliteAnnConfig(enabled=False))


async def ids(backend: SqliteBackend, query: NDArray[np.float32], k: int = 10,
              filters: Filters | None = None) -> list[str]:  # fmt: skip
    hits = await backend.search_index("i").search(
        TU, query_vector=query, mode=SearchMode.VECTOR, k=k, filters=filters)
    return [h.id for h in hits]


async def fill(path: Path, n: int, seed: int = 0) -> NDArray[np.float32]:
    vectors = clustered(n, seed)
    async with SqliteBackend(path, EXACT) as backend:
        for lo in range(0, n, 1000):
            hi = min(n, lo + 1000)
            await backend.search_index("i").upsert(TU, records(hi - lo, lo), vectors[lo:hi])
    return vectors


def files(path: Path) -> list[str]:
    folder = path.parent / "ann"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def queries(n: int = 40, seed: int = 5) -> NDArray[np.float32]:
    return clustered(n, seed)


async def recall_vs_exact(path: Path, config: SqliteConfig, qs: NDArray[np.float32]) -> float:
    async with SqliteBackend(path, config) as fast, SqliteBackend(path, EXACT) as exact:
        found = [len(set(await ids(fast, q)) & set(await ids(exact, q))) / 10 for q in qs]
    return float(np.mean(found))


def test_below_the_threshold_results_equal_exact_search_and_no_file(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"

    async def body() -> None:
        await fill(path, 400)
        async with SqliteBackend(path, ann(threshold=500)) as fast, \
                SqliteBackend(path, EXACT) as exact:  # fmt: skip
            for q in queries(10):
                a = await fast.search_index("i").search(TU, query_vector=q, k=10,
                                                        mode=SearchMode.VECTOR)  # fmt: skip
                b = await exact.search_index("i").search(TU, query_vector=q, k=10,
                                                         mode=SearchMode.VECTOR)  # fmt: skip
                assert [(h.id, h.score) for h in a] == [(h.id, h.score) for h in b]
        assert files(path) == []

    asyncio.run(body())


def test_above_the_threshold_recall_and_exact_scores(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"

    async def body() -> None:
        vectors = await fill(path, 4000)
        qs = queries()
        assert await recall_vs_exact(path, ann(), qs) >= 0.95
        assert [n.rsplit(".", 1)[1] for n in files(path)] == ["json", "usearch"]
        async with SqliteBackend(path, ann()) as fast:
            hits = await fast.search_index("i").search(TU, query_vector=vectors[7], k=3,
                                                       mode=SearchMode.VECTOR)  # fmt: skip
            assert hits[0].id == "u00007"
            assert hits[0].score == pytest.approx(1.0, abs=1e-6)  # exact float32 cosine

    asyncio.run(body())


def test_adds_updates_and_deletes_are_reflected_without_a_rebuild(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "ukr.db"
    caplog.set_level(logging.INFO, logger="unified_kg_rag.adapters.sqlite.ann")

    async def body() -> None:
        vectors = await fill(path, 2000)
        async with SqliteBackend(path, ann()) as backend:
            index = backend.search_index("i")
            probe = clustered(3, seed=42)
            assert "new" not in await ids(backend, probe[0])
            await index.upsert(TU, [IndexRecord(id="new", text="n")], probe[:1])
            assert (await ids(backend, probe[0]))[0] == "new"
            await index.upsert(TU, [IndexRecord(id="u00003", text="moved")], probe[1:2])
            assert (await ids(backend, probe[1]))[0] == "u00003"
            assert "u00003" not in await ids(backend, vectors[3])
            await index.delete(TU, ["u00010"])
            assert "u00010" not in await ids(backend, vectors[10], k=50)
            await index.upsert(TU, [IndexRecord(id="u00011", text="no vector")])
            assert "u00011" not in await ids(backend, vectors[11], k=50)
        assert sum("built the vector index" in r.getMessage() for r in caplog.records) == 1

    asyncio.run(body())


def test_a_write_through_another_connection_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"

    async def body() -> None:
        await fill(path, 2000)
        probe = clustered(2, seed=77)
        async with SqliteBackend(path, ann()) as reader, SqliteBackend(path, EXACT) as writer:
            assert "other" not in await ids(reader, probe[0])  # the reader's index is built
            await writer.search_index("i").upsert(TU, [IndexRecord(id="other", text="o")],
                                                  probe[:1])  # fmt: skip
            await writer.search_index("i").delete(TU, ["u00001"])
            assert (await ids(reader, probe[0]))[0] == "other"
            assert "u00001" not in await ids(reader, clustered(2000)[1], k=50)

    asyncio.run(body())


_WRITER = """
import asyncio, os, sys, numpy as np
from pathlib import Path
from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.config.models import SqliteAnnConfig, SqliteConfig
from unified_kg_rag.domain.models import Collection, IndexRecord, SearchMode
import unified_kg_rag.adapters.sqlite.ann_files as files

async def main():
    config = SqliteConfig(ann=SqliteAnnConfig(exact_search_max_vectors=500))
    async with SqliteBackend(Path(sys.argv[1]), config) as backend:
        index = backend.search_index("i")
        vectors = np.load(sys.argv[2])
        await index.upsert(Collection.TEXT_UNITS, [IndexRecord(id=f"k{i}", text="k")
                           for i in range(len(vectors))], vectors)
        if sys.argv[3] == "mid-save":  # the next save writes its temporary file, then stops
            real = os.replace
            def stuck(src, dst):
                print("saving", flush=True)
                import time; time.sleep(600)
            files.os.replace = stuck
            await index.search(Collection.TEXT_UNITS, query_vector=vectors[0],
                               mode=SearchMode.VECTOR)
        print("committed", flush=True)
        await asyncio.sleep(600)

asyncio.run(main())
"""


@pytest.mark.parametrize("moment", ["after-commit", "mid-save"])
def test_a_process_killed_before_its_index_is_saved(tmp_path: Path, moment: str) -> None:
    path = tmp_path / "ukr.db"
    new = clustered(1500, seed=9)  # >= 1,000 changes: the next query saves the index
    np.save(tmp_path / "new.npy", new)

    async def prepare() -> None:
        await fill(path, 2000)
        async with SqliteBackend(path, ann()) as backend:
            await ids(backend, new[0])  # built and saved before the writer starts

    asyncio.run(prepare())
    saved = files(path)
    script = tmp_path / "writer.py"
    script.write_text(textwrap.dedent(_WRITER))
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    proc = subprocess.Popen([sys.executable, str(script), str(path), str(tmp_path / "new.npy"),
                             moment], stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip
    assert proc.stdout is not None
    wanted = "saving" if moment == "mid-save" else "committed"
    said = ""
    for line in proc.stdout:
        said = line.strip()
        if said in ("saving", "committed"):
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert said == wanted
    if moment == "mid-save":
        assert any(name.endswith(".tmp") for name in files(path))
    else:
        assert files(path) == saved

    async def check() -> None:
        async with SqliteBackend(path, ann()) as fast, SqliteBackend(path, EXACT) as exact:
            for q in new[:10]:
                assert (await ids(fast, q))[0] == (await ids(exact, q))[0]
        assert await recall_vs_exact(path, ann(), queries(20)) >= 0.95

    asyncio.run(check())
    assert not any(name.endswith(".tmp") for name in files(path))  # swept by the next save


def _damage(folder: Path, how: str, tmp_path: Path) -> None:
    index_file = next(folder.glob("*.usearch"))
    side = index_file.with_suffix(".json")
    if how == "deleted":
        index_file.unlink()
    elif how == "truncated":
        data = index_file.read_bytes()
        index_file.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        index_file.write_bytes(os.urandom(index_file.stat().st_size))
    elif how == "foreign":  # the pair of another database, with the same index name
        other = tmp_path / "other" / "ukr.db"
        asyncio.run(fill(other, 1500, seed=3))

        async def build() -> None:
            async with SqliteBackend(other, ann()) as backend:
                await ids(backend, queries(1)[0])

        asyncio.run(build())
        for old in folder.iterdir():
            old.unlink()
        for theirs in (other.parent / "ann").iterdir():
            (folder / theirs.name).write_bytes(theirs.read_bytes())
    elif how == "future":  # a file claiming changes the log never had
        meta = json.loads(side.read_text())
        seq = meta["seq"] + 1000
        meta["seq"] = seq
        stem = index_file.name.rsplit("-", 1)[0]
        (folder / f"{stem}-{seq}.json").write_text(json.dumps(meta))
        index_file.rename(folder / f"{stem}-{seq}.usearch")
        side.unlink()


@pytest.mark.parametrize("how", ["deleted", "truncated", "garbage", "foreign", "future"])
def test_a_bad_index_file_is_verified_and_rebuilt(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "ukr.db"
    asyncio.run(fill(path, 2000))

    async def serve() -> float:
        async with SqliteBackend(path, ann()) as fast:
            await ids(fast, queries(1)[0])
        return await recall_vs_exact(path, ann(), queries(20))

    assert asyncio.run(serve()) >= 0.95
    _damage(path.parent / "ann", how, tmp_path)
    caplog.set_level(logging.WARNING, logger="unified_kg_rag.adapters.sqlite.ann")
    assert asyncio.run(serve()) >= 0.95
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == (0 if how == "deleted" else 1), warnings
    assert len([n for n in files(path) if n.endswith(".usearch")]) == 1


def test_a_changed_dimension_rebuilds_the_index(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"

    async def body() -> None:
        await fill(path, 1500)
        async with SqliteBackend(path, ann()) as fast:
            await ids(fast, queries(1)[0])
        async with SqliteBackend(path, EXACT) as exact:  # the index is emptied and refilled
            await exact.search_index("i").delete(TU, [r.id for r in records(1500)])
            wide = clustered(1500, seed=4, dim=64)
            await exact.search_index("i").upsert(TU, records(1500), wide)
        async with SqliteBackend(path, ann()) as fast:
            assert (await ids(fast, wide[12]))[0] == "u00012"

    asyncio.run(body())


def test_filtered_queries(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"

    async def body() -> None:
        await fill(path, 3000)
        async with SqliteBackend(path, ann()) as fast, SqliteBackend(path, EXACT) as exact:
            for q in queries(10):
                selective: Filters = {"part": 7}  # 60 rows: the ANN candidates miss: exact
                assert await ids(fast, q, filters=selective) == \
                    await ids(exact, q, filters=selective)  # fmt: skip
                broad: Filters = {"part": list(range(40))}  # 80 %: filtered ANN candidates
                got = await ids(fast, q, filters=broad)
                want = await ids(exact, q, filters=broad)
                assert len(got) == 10
                assert all(int(i[1:]) % 50 < 40 for i in got)
                assert len(set(got) & set(want)) >= 8

    asyncio.run(body())


def test_a_shrunk_collection_goes_back_to_exact_search(tmp_path: Path) -> None:
    path = tmp_path / "ukr.db"

    async def body() -> None:
        await fill(path, 1000)
        async with SqliteBackend(path, ann()) as fast:
            await ids(fast, queries(1)[0])
            assert files(path)
            kept = files(path)
            await fast.search_index("i").delete(TU, [r.id for r in records(800)])
            vectors = clustered(1000)
            # a query searches exactly and leaves the index alone; only an index run drops it
            assert (await ids(fast, vectors[900]))[0] == "u00900"
            assert files(path) == kept
            assert await fast.search_index("i").prepare_vector_search() == []
            assert files(path) == []
            assert (await ids(fast, vectors[900]))[0] == "u00900"
        import sqlite3

        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT COUNT(*) FROM ann_collections").fetchone()[0] == 0
            assert conn.execute("SELECT COUNT(*) FROM ann_log").fetchone()[0] == 0

    asyncio.run(body())


def test_the_end_of_an_index_run_saves_every_change_and_trims_the_log(tmp_path: Path) -> None:
    """A few changes (far under the 1,000 a query waits for) are saved by the run's last step,
    so the next process loads a current file instead of replaying the log."""
    import sqlite3

    path = tmp_path / "ukr.db"

    async def body() -> None:
        await fill(path, 1000)
        probe = clustered(5, seed=77)
        async with SqliteBackend(path, ann()) as run:
            index = run.search_index("i")
            assert await index.prepare_vector_search() == ["text_units"]
            before = files(path)
            await index.upsert(TU, [IndexRecord(id=f"n{i}", text="n") for i in range(5)], probe)
            assert await index.prepare_vector_search() == ["text_units"]
            after = files(path)
        assert after != before and len(after) == 2  # a newer pair replaced the old one
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT COUNT(*) FROM ann_log WHERE pk != 0").fetchone()[0] == 0
        async with SqliteBackend(path, ann()) as reader:
            assert (await ids(reader, probe[3]))[0] == "n3"

    asyncio.run(body())


def test_a_query_process_with_another_threshold_leaves_the_index_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A `ukr query` started without the indexer's settings must not throw the build away."""
    path = tmp_path / "ukr.db"

    async def body() -> None:
        vectors = await fill(path, 1000)
        async with SqliteBackend(path, ann()) as indexer:
            assert await indexer.search_index("i").prepare_vector_search() == ["text_units"]
        built = files(path)
        assert built
        async with SqliteBackend(path, ann(100_000)) as other:  # exact for it
            exact = await ids(other, vectors[7])
            assert exact[0] == "u00007"
        assert files(path) == built
        with caplog.at_level(logging.WARNING):
            async with SqliteBackend(path, ann()) as again:
                assert await ids(again, vectors[7]) == exact
        assert files(path) == built
        assert not [r for r in caplog.records if "rebuil" in r.getMessage()]

    asyncio.run(body())


def test_an_index_from_before_the_collection_stopped_being_logged_is_not_used(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ukr.db"

    async def body() -> None:
        vectors = await fill(path, 1000)
        probe = clustered(1, seed=31)
        async with SqliteBackend(path, ann()) as a, SqliteBackend(path, ann(5000)) as b, \
                SqliteBackend(path, ann()) as c:  # fmt: skip
            await ids(a, vectors[0])  # a serves it from memory
            await ids(b, vectors[0])  # b's threshold is higher: b searches exactly
            assert files(path)  # a query never drops the index
            assert await b.search_index("i").prepare_vector_search() == []  # an index run does
            assert files(path) == []
            await b.search_index("i").upsert(TU, [IndexRecord(id="u00005", text="t")], probe)
            await ids(c, vectors[0])  # logged again, from a fresh point
            assert (await ids(a, probe[0]))[0] == "u00005"
            assert "u00005" not in await ids(a, vectors[5])

    asyncio.run(body())


def test_bad_settings_name_the_field() -> None:
    with pytest.raises(ValidationError, match="dtype"):
        SqliteAnnConfig(dtype="f64")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="connectivity"):
        SqliteConfig.model_validate({"ann": {"connectivity": 1}})


def test_the_benchmark_script_runs_on_a_tiny_size(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_sqlite_ann.py"),
                    "--sizes", "1500", "--queries", "5", "--skip", "postgres",
                    "--work", str(tmp_path / "work"), "--json", str(out)],
                   check=True, env=env, capture_output=True, timeout=300)  # fmt: skip
    figures = json.loads(out.read_text())["1500"]
    assert figures["sqlite-exact"]["recall@10"] == 1.0
    assert figures["sqlite-ann"]["ef 128: recall@10"] >= 0.9
    assert figures["sqlite-ann"]["file_mib"] > 0
