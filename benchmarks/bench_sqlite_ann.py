"""Vector search past 200,000 units: SQLite exact, SQLite + HNSW (usearch), PostgreSQL + pgvector.

For each size (``--sizes``, default 200,000 and 1,000,000 text units, 384-d like the bundled
model): seeded CLUSTERED synthetic vectors (a Gaussian mixture: ``n / 200`` centres drawn from
N(0, I), each vector a random centre plus N(0, sigma^2 I) noise, sigma 0.6, so a vector's
cosine to its centre is about 0.86; queries are new draws from the same mixture; uniform
random vectors would make every neighbour equally far and ANN meaningless). Ground truth is
exact cosine top-10 (numpy). Each variant runs in its own child process, so its peak RSS
(``ru_maxrss``) is its own:

- ``sqlite-exact``: the SQLite store with ``stores.sqlite.ann.enabled: false`` (today's
  behaviour: the collection's matrix in memory, one product per query);
- ``sqlite-ann``: the SQLite store with the HNSW index (defaults; ``exact_search_max_vectors``
  below the size): build time (first query: build from the rows + save), the reopen time of
  a new process (load + verify the file), p50/p95 query latency and recall@10 for a sweep of
  ``expansion_search``, the catch-up time after 1,000 new units, the file size;
- ``postgres``: PostgreSQL 16 + pgvector (pgserver) through the port: rows loaded with the
  HNSW index dropped, then ``CREATE INDEX ... USING hnsw`` (m 16, ef_construction 64, the
  store's defaults) with ``maintenance_work_mem`` large enough for an in-memory build;
  p50/p95 and recall for ``hnsw_ef_search`` 100 and 200 (the default); the index and table
  sizes; the server processes' peak RSS (sampled every 0.5 s).

Loading the rows (upserts in batches of 5,000 through the port) is timed but is not part of
"build". Usage:

    python benchmarks/bench_sqlite_ann.py [--sizes 200000,1000000] [--queries 200]
        [--skip postgres,sqlite-exact] [--json OUT] [--work DIR] [--reuse]

Needs the ``ann`` extra (usearch) and, for PostgreSQL, the ``postgres`` extra and pgserver.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.config.models import SqliteAnnConfig, SqliteConfig
from unified_kg_rag.domain.models import Collection, IndexRecord, SearchMode

DIM = 384
BATCH = 5_000
WARMUP = 10
SIGMA = 0.6
EF_SWEEP = (64, 128, 256)
PG_EF_SWEEP = (100, 200)
TU = Collection.TEXT_UNITS
Vectors = NDArray[np.float32]


def mixture(n: int, n_queries: int, seed: int = 7) -> tuple[Vectors, Vectors]:
    """Return ``(vectors [n, 384], queries [n_queries, 384])`` of one Gaussian mixture."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(10, n // 200), DIM), dtype=np.float32) / np.sqrt(DIM)

    def draw(count: int) -> Vectors:
        out = np.empty((count, DIM), dtype=np.float32)
        for lo in range(0, count, 100_000):
            size = min(100_000, count - lo)
            out[lo:lo + size] = centres[rng.integers(0, len(centres), size)]
            out[lo:lo + size] += SIGMA * rng.standard_normal((size, DIM), dtype=np.float32) \
                / np.float32(np.sqrt(DIM))
        return out

    return draw(n), draw(n_queries)


def recall(hits: list[list[str]], truth: list[list[str]]) -> float:
    return round(float(np.mean([len(set(h[:10]) & set(t)) / 10
                                for h, t in zip(hits, truth, strict=True)])), 4)  # fmt: skip


def records(lo: int, hi: int) -> list[IndexRecord]:
    return [IndexRecord(id=f"tu{i:07d}", text=f"unit {i}", fields={"doc": i // 8})
            for i in range(lo, hi)]  # fmt: skip


async def load(index: Any, vectors: Vectors) -> float:
    """Upsert every vector through the port; return seconds."""
    started = time.perf_counter()
    for lo in range(0, len(vectors), BATCH):
        hi = min(len(vectors), lo + BATCH)
        await index.upsert(TU, records(lo, hi), vectors[lo:hi])
    return round(time.perf_counter() - started, 1)


async def timed_queries(index: Any, queries: Vectors) -> tuple[dict[str, float], list[list[str]]]:
    """Run every query (the first `WARMUP` untimed); return latency figures and hit ids."""
    times, hits = [], []
    for i, q in enumerate(queries):
        started = time.perf_counter()
        found = await index.search(TU, query_vector=q, mode=SearchMode.VECTOR, k=10)
        if i >= WARMUP:
            times.append((time.perf_counter() - started) * 1000)
            hits.append([h.id for h in found])
    return {"p50_ms": round(float(np.percentile(times, 50)), 2),
            "p95_ms": round(float(np.percentile(times, 95)), 2)}, hits  # fmt: skip


def peak_rss_mib() -> float:
    """This process's peak RSS (``VmHWM``: unlike ``ru_maxrss`` it restarts at exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024, 1)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


# ------------------------------------------------------------------ variants (child processes)


async def sqlite_exact(work: Path) -> dict[str, Any]:
    queries, truth = np.load(work / "queries.npy"), json.loads((work / "truth.json").read_text())
    config = SqliteConfig(ann=SqliteAnnConfig(enabled=False))
    async with SqliteBackend(work / "db" / "ukr.db", config) as backend:
        index = backend.search_index("bench")
        started = time.perf_counter()
        await index.search(TU, query_vector=queries[0], mode=SearchMode.VECTOR, k=10)
        first = round(time.perf_counter() - started, 2)
        latency, hits = await timed_queries(index, queries)
    return {"first_query_s (matrix load)": first, **latency,
            "recall@10": recall(hits, truth), "peak_rss_mib": peak_rss_mib()}  # fmt: skip


def ann_config(**values: Any) -> SqliteConfig:
    """The ANN defaults, with ``exact_search_max_vectors`` 0 so that any size is served by it."""
    return SqliteConfig(ann=SqliteAnnConfig(exact_search_max_vectors=0, **values))


async def sqlite_ann(work: Path) -> dict[str, Any]:
    queries, truth = np.load(work / "queries.npy"), json.loads((work / "truth.json").read_text())
    db = work / "db" / "ukr.db"
    out: dict[str, Any] = {}
    async with SqliteBackend(db, ann_config()) as backend:
        index = backend.search_index("bench")
        started = time.perf_counter()
        await index.search(TU, query_vector=queries[0], mode=SearchMode.VECTOR, k=10)
        out["build_s (first query: build from rows + save)"] = round(
            time.perf_counter() - started, 1)  # fmt: skip
        out["peak_rss_mib (build)"] = peak_rss_mib()
    files = list((db.parent / "ann").glob("*.usearch"))
    out["file_mib"] = round(sum(f.stat().st_size for f in files) / 2**20, 1)
    for ef in EF_SWEEP:
        config = ann_config(expansion_search=ef)
        async with SqliteBackend(db, config) as backend:
            index = backend.search_index("bench")
            started = time.perf_counter()
            await index.search(TU, query_vector=queries[0], mode=SearchMode.VECTOR, k=10)
            out[f"ef {ef}: reopen_s (load + verify file)"] = round(
                time.perf_counter() - started, 2)  # fmt: skip
            latency, hits = await timed_queries(index, queries)
            out[f"ef {ef}: p50_ms"], out[f"ef {ef}: p95_ms"] = latency["p50_ms"], latency["p95_ms"]
            out[f"ef {ef}: recall@10"] = recall(hits, truth)
    out["peak_rss_mib (queries)"] = peak_rss_mib()
    async with SqliteBackend(db, ann_config()) as backend:
        index = backend.search_index("bench")
        await index.search(TU, query_vector=queries[0], mode=SearchMode.VECTOR, k=10)
        extra, _ = mixture(1_000, 0, seed=99)
        n = int(json.loads((work / "meta.json").read_text())["n"])
        await index.upsert(TU, records(n, n + 1_000), extra)
        started = time.perf_counter()
        await index.search(TU, query_vector=queries[1], mode=SearchMode.VECTOR, k=10)
        out["catch_up_1000_new_units_s"] = round(time.perf_counter() - started, 2)
        await index.delete(TU, [r.id for r in records(n, n + 1_000)])
    return out


def _pg_rss(stop: threading.Event, peak: list[float]) -> None:
    import psutil

    while not stop.wait(0.5):
        total = 0.0
        for proc in psutil.process_iter(["name", "memory_info"]):
            if proc.info["name"] and "postgres" in proc.info["name"]:
                total += proc.info["memory_info"].rss / 2**20
        peak[0] = max(peak[0], total)


async def postgres(work: Path) -> dict[str, Any]:
    import psycopg
    from _pg import index_schema, start_postgres
    from psycopg import sql

    from unified_kg_rag.adapters.postgres.backend import PostgresBackend
    from unified_kg_rag.config.models import PostgresConfig

    vectors, queries = np.load(work / "vectors.npy", mmap_mode="r"), np.load(work / "queries.npy")
    truth = json.loads((work / "truth.json").read_text())
    url, server = start_postgres(work / "pgdata")
    out: dict[str, Any] = {}
    config = PostgresConfig(schema_name="bench", exact_search_max_vectors=0)
    async with PostgresBackend(url, config) as backend:
        index = backend.search_index("bench")
        await index.bind_embedding("synthetic-384", DIM)
        schema = index_schema(url, "bench", "bench")
        name = sql.Identifier(schema, "search_records_hnsw_text_units")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP INDEX {}").format(name))
        out["load_s (rows, no HNSW)"] = await load(index, np.asarray(vectors))
    memory = "8GB" if len(vectors) > 300_000 else "2GB"
    stop, peak = threading.Event(), [0.0]
    sampler = threading.Thread(target=_pg_rss, args=(stop, peak), daemon=True)
    sampler.start()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(memory)))
        conn.execute("SET max_parallel_maintenance_workers = 2")
        conn.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(schema, "search_records")))
        started = time.perf_counter()
        conn.execute(sql.SQL(
            "CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = {}, ef_construction = {}) WHERE collection = 'text_units'"
        ).format(sql.Identifier("search_records_hnsw_text_units"),
                 sql.Identifier(schema, "search_records"), sql.Literal(config.hnsw_m),
                 sql.Literal(config.hnsw_ef_construction)))  # fmt: skip
        out[f"build_s (CREATE INDEX, maintenance_work_mem {memory})"] = round(
            time.perf_counter() - started, 1)  # fmt: skip
        sizes = conn.execute(
            "SELECT pg_relation_size(%s::regclass), pg_total_relation_size(%s::regclass)",
            (f"{schema}.search_records_hnsw_text_units", f"{schema}.search_records")).fetchone()
        out["hnsw_index_mib"] = round(sizes[0] / 2**20, 1)  # type: ignore[index]
        out["table_total_mib"] = round(sizes[1] / 2**20, 1)  # type: ignore[index]
    stop.set()
    out["server_peak_rss_mib (sampled, build)"] = round(peak[0], 1)
    for ef in PG_EF_SWEEP:
        cfg = PostgresConfig(schema_name="bench", exact_search_max_vectors=0, hnsw_ef_search=ef)
        async with PostgresBackend(url, cfg) as backend:
            latency, hits = await timed_queries(backend.search_index("bench"), queries)
            out[f"ef_search {ef}: p50_ms"] = latency["p50_ms"]
            out[f"ef_search {ef}: p95_ms"] = latency["p95_ms"]
            out[f"ef_search {ef}: recall@10"] = recall(hits, truth)
    out["client_peak_rss_mib"] = peak_rss_mib()
    server.cleanup()
    return out


VARIANTS = {"sqlite-exact": sqlite_exact, "sqlite-ann": sqlite_ann, "postgres": postgres}


def child(variant: str, work: Path) -> dict[str, Any]:
    """Run one variant in a child process; return its figures (printed as they come)."""
    result = work / f"{variant}.json"
    result.unlink(missing_ok=True)
    env = os.environ | {"PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    started = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--worker", variant, "--work", str(work)],
                   check=True, env=env)  # fmt: skip
    figures = json.loads(result.read_text())
    figures["wall_s"] = round(time.perf_counter() - started, 1)
    print(f"  {variant}: {json.dumps(figures)}", flush=True)
    return figures


async def prepare(work: Path, n: int, n_queries: int) -> dict[str, Any]:
    """Write the vectors, queries, ground truth and the SQLite rows for one size."""
    started = time.perf_counter()
    vectors, queries = mixture(n, n_queries + WARMUP)
    np.save(work / "vectors.npy", vectors)
    np.save(work / "queries.npy", queries)
    from bench_postgres import exact_top10  # the same brute-force truth as bench_postgres

    truth = [sorted(ids) for ids in exact_top10(vectors, queries[WARMUP:])]
    (work / "truth.json").write_text(json.dumps(truth))
    (work / "meta.json").write_text(json.dumps({"n": n}))
    data: dict[str, Any] = {"text_units": n, "dim": DIM, "clusters": max(10, n // 200),
                            "sigma": SIGMA, "timed_queries": n_queries,
                            "generate_s": round(time.perf_counter() - started, 1)}  # fmt: skip
    config = SqliteConfig(ann=SqliteAnnConfig(enabled=False))
    async with SqliteBackend(work / "db" / "ukr.db", config) as backend:
        index = backend.search_index("bench")
        await index.bind_embedding("synthetic-384", DIM)
        data["sqlite_load_s (rows)"] = await load(index, vectors)
    db = work / "db"
    data["sqlite_db_mib"] = round(sum(f.stat().st_size for f in db.glob("ukr.db*")) / 2**20, 1)
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200000,1000000")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per setting")
    parser.add_argument("--skip", default="", help="variants to skip: " + ",".join(VARIANTS))
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--work", type=Path, default=None, help="scratch folder (kept)")
    parser.add_argument("--reuse", action="store_true",
                        help="reuse the data and rows prepared in --work by an earlier run")
    parser.add_argument("--worker", choices=list(VARIANTS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        figures = asyncio.run(VARIANTS[args.worker](args.work))
        (args.work / f"{args.worker}.json").write_text(json.dumps(figures))
        return
    skip = {s for s in args.skip.split(",") if s}
    results: dict[str, Any] = {"cpus": os.cpu_count(), "load_average_start": os.getloadavg()[0]}
    base = args.work or Path(tempfile.mkdtemp(prefix="ukr-bench-ann-"))
    for n in (int(s) for s in args.sizes.split(",")):
        work = base / f"n{n}"
        work.mkdir(parents=True, exist_ok=True)
        prepared = work / "data.json"
        if args.reuse and prepared.exists():
            data = json.loads(prepared.read_text())
        else:
            print(f"{n:,} units: generating and loading ...", flush=True)
            data = asyncio.run(prepare(work, n, args.queries))
            prepared.write_text(json.dumps(data))
        size: dict[str, Any] = {"data": data}
        print(f"  data: {json.dumps(size['data'])}", flush=True)
        for variant in VARIANTS:
            if variant not in skip:
                size[variant] = child(variant, work)
        results[str(n)] = size
        if args.json:
            args.json.write_text(json.dumps(results, indent=2) + "\n")
    results["load_average_end"] = os.getloadavg()[0]
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, numpy {np.__version__}, "
          f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
