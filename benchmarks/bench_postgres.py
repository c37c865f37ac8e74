"""PostgreSQL + pgvector against the SQLite store: indexing, latency and recall (prints figures).

Part 1, real corpora (../shared/data/multihop/hipporag, read in place): MuSiQue (1,890
passages, 100 questions) and 2Wiki (6,119 passages; the MuSiQue questions as latency probes).
Each corpus is indexed end to end by ``ukr index`` in a child process on each backend (wall
time, the child's peak RSS; the PostgreSQL server's own memory is not included), retrieval
latency is measured in-process as in bench_index_query.py (``RAGChain.retrieve``: query
embedding + search + packing) for hybrid, vector and lexical search, and on MuSiQue
``ukr eval --retrieval-only`` gives recall@2/5/10 per backend and mode. PostgreSQL runs twice
on the same index: BM25 (the default) and ``lexical_ranking: ts_rank_cd``.

Part 2, synthetic scale (``--scale N`` text units, default 200,000) through the port API:
texts of 60-120 words from a Zipf vocabulary of 30,000 synthetic words, seeded 384-d float32
vectors, upserted in batches of 2,000 (what a user gets: the HNSW index exists before the
first insert). Queries (200 timed after 10 warm-up): query text = 3-5 words of a random stored
text, either any words ("zipf" set: their frequent words match most texts) or words outside
the 100 most frequent ranks ("tail" set: as stopword removal would leave); query vectors from
the same distribution as the stored ones. kNN recall@10 is against exact cosine search
(numpy); ``hnsw_ef_search`` is swept. Vectors: standard normal (the hardest case for HNSW),
or with ``--skip gaussian`` embedding-like low-rank vectors (rank 32 plus noise), then
clustered (centre + noise), PostgreSQL only (SQLite is exact). Also measured: loading
without the HNSW index and building it afterwards.

Usage:  python benchmarks/bench_postgres.py [--data DIR] [--only musique|2wiki|scale]
            [--scale N] [--queries N] [--url URL] [--json OUT] [--explain]
            [--skip bulk,clustered,sqlite]
Needs the ``postgres`` extra and, without ``--url``, the ``pgserver`` package (a private
server under a temporary folder). With ``--url``, the benchmark creates catalog schemas named
``bench_*`` on that database and drops them at the end. Targets (2 cores): hybrid p50 under
50 ms at 200,000 text units; HNSW recall@10 at least 0.95.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from _pg import (
    SyntheticCorpus,
    capture_plans,
    catalog_size_mib,
    drop_catalog,
    environment,
    index_schema,
    server_settings,
    start_postgres,
    ukr,
    vacuum_analyze,
)
from bench_index_query import DEFAULT_DATA, retrieval_latency, write_corpus
from numpy.typing import NDArray

from unified_kg_rag.adapters.postgres.backend import PostgresBackend
from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.config.models import PostgresConfig, QueryConfig
from unified_kg_rag.domain.models import Collection, IndexRecord, SearchMode
from unified_kg_rag.ports import SearchIndex

CORPORA = {"musique": "musique_train_corpus.json", "2wiki": "2wikimultihopqa_corpus.json"}


# ------------------------------------------------------------------ helpers


def sqlite_size_mib(project: Path) -> float:
    files = list((project / ".ukr").glob("ukr.db*"))
    return round(sum(f.stat().st_size for f in files) / 2**20, 1)


def show(title: str, figures: dict[str, Any]) -> None:
    print(f"\n== {title}", flush=True)
    for key, value in figures.items():
        print(f"  {key:<34} {value}", flush=True)


# ------------------------------------------------------------------ part 1: real corpora


def run_corpus(
    name: str, data: Path, url: str, questions: list[str], tag: str
) -> dict[str, dict[str, Any]]:
    catalog = f"bench_{name}_{tag}"
    pg_env = {"UKR_STORES__KIND": "postgres", "UKR_STORES__POSTGRES__URL": url,
              "UKR_STORES__POSTGRES__SCHEMA_NAME": catalog}  # fmt: skip
    envs = {
        "sqlite": {},
        "postgres_bm25": pg_env,
        "postgres_ts_rank_cd": pg_env | {"UKR_STORES__POSTGRES__LEXICAL_RANKING": "ts_rank_cd"},
    }
    results: dict[str, dict[str, Any]] = {b: {} for b in envs}
    with tempfile.TemporaryDirectory(prefix=f"ukr-bench-pg-{name}-") as tmp:
        root = Path(tmp)
        dataset: Path | None = None
        if name == "musique":
            ukr(["eval", "prepare", "hipporag", str(data / "musique_train.json"),
                 str(data / CORPORA[name]), "--out", str(root / "prep"), "--json"], {})  # fmt: skip
            corpus, dataset = root / "prep" / "corpus", root / "prep" / "dataset.jsonl"
        else:
            corpus = root / "corpus"
            write_corpus(json.loads((data / CORPORA[name]).read_text(encoding="utf-8")), corpus)
        projects = {"sqlite": root / "p-sqlite", "postgres_bm25": root / "p-postgres",
                    "postgres_ts_rank_cd": root / "p-postgres"}  # fmt: skip
        for backend in ("sqlite", "postgres_bm25"):
            out, wall, rss = ukr(["index", str(corpus), "-C", str(projects[backend]), "--json"],
                                 envs[backend])  # fmt: skip
            report = json.loads(out)
            results[backend].update({
                "documents": report["documents_found"],
                "text_units": report["text_units_written"],
                "index_wall_s": round(wall, 1),
                "index_pipeline_s": report["elapsed_s"],
                "index_peak_rss_mib": round(rss),
            })  # fmt: skip
        results["sqlite"]["store_size_mib"] = sqlite_size_mib(projects["sqlite"])
        results["postgres_bm25"]["store_size_mib"] = catalog_size_mib(url, catalog)
        for backend, env in envs.items():
            with environment(env):
                results[backend].update(asyncio.run(retrieval_latency(projects[backend],
                                                                      questions)))
            if dataset is None:
                continue
            for mode in ("hybrid", "vector", "lexical"):
                out, _, _ = ukr(["eval", str(dataset), "-C", str(projects[backend]),
                                 "--retrieval-only", "--json", "-q", "--mode", mode], env)
                rep = json.loads(out)
                results[backend][f"eval_{mode}_recall@2/5/10"] = " / ".join(
                    f"{rep[f'recall@{k}']:.3f}" for k in (2, 5, 10))
                results[backend][f"eval_{mode}_answer_in_context"] = round(
                    rep["answer_in_context"], 3)  # fmt: skip
    drop_catalog(url, catalog)
    return results


# ------------------------------------------------------------------ part 2: synthetic scale

DIM = 384
BATCH = 2_000
WARMUP = 10
EF_SWEEP = (40, 100, 200, 400)
_Q = QueryConfig()
SEARCH = {"k": 10, "candidate_k": _Q.candidate_k, "lexical_weight": _Q.lexical_weight,
          "vector_weight": _Q.vector_weight, "rrf_k": _Q.rrf_k}  # fmt: skip
Vectors = NDArray[np.float32]


def p50_p95(times: list[float]) -> str:
    return f"{np.percentile(times, 50):.1f} / {np.percentile(times, 95):.1f}"


def exact_top10(vectors: Vectors, queries: Vectors) -> list[set[str]]:
    """Return the ids of the 10 nearest stored vectors (cosine) of each query, by brute force."""
    normed = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    q = queries / np.linalg.norm(queries, axis=1, keepdims=True)
    out: list[set[str]] = []
    for lo in range(0, len(q), 50):
        scores = q[lo:lo + 50] @ normed.T
        top = np.argpartition(-scores, 10, axis=1)[:, :10]
        out += [{f"tu{i:07d}" for i in row} for row in top]
    return out


def gaussian(n: int, n_queries: int) -> tuple[Vectors, Vectors]:
    rng = np.random.default_rng(1)
    return (rng.standard_normal((n, DIM), dtype=np.float32),
            rng.standard_normal((n_queries, DIM), dtype=np.float32))  # fmt: skip


def lowrank(n: int, n_queries: int, rank: int = 32) -> tuple[Vectors, Vectors]:
    """Embedding-like vectors: a random rank-``rank`` map of N(0, I) codes plus 10 % noise.

    Sentence-embedding models put text on a low-dimensional manifold (intrinsic dimension in
    the tens for 384-d MiniLM); isotropic 384-d noise (`gaussian`) has none, so it is HNSW's
    worst case rather than a user's.
    """
    rng = np.random.default_rng(3)
    basis = rng.standard_normal((rank, DIM), dtype=np.float32)

    def draw(count: int) -> Vectors:
        out = np.empty((count, DIM), dtype=np.float32)
        for lo in range(0, count, 50_000):
            size = min(50_000, count - lo)
            codes = rng.standard_normal((size, rank), dtype=np.float32)
            noise = rng.standard_normal((size, DIM), dtype=np.float32)
            out[lo:lo + size] = codes @ basis + 0.1 * np.sqrt(rank) * noise
        return out

    return draw(n), draw(n_queries)


def clustered(n: int, n_queries: int, clusters: int) -> tuple[Vectors, Vectors]:
    """Centres ~ N(0, I); each vector = a random centre + N(0, I) noise (as much as the centre)."""
    rng = np.random.default_rng(2)
    centres = rng.standard_normal((clusters, DIM), dtype=np.float32)
    vectors = centres[rng.integers(0, clusters, n)]
    for lo in range(0, n, 50_000):
        size = min(50_000, n - lo)
        vectors[lo:lo + size] += rng.standard_normal((size, DIM), dtype=np.float32)
    queries = centres[rng.integers(0, clusters, n_queries)]
    queries += rng.standard_normal(queries.shape, dtype=np.float32)
    return vectors, queries


async def load(index: SearchIndex, corpus: SyntheticCorpus, vectors: Vectors) -> dict[str, Any]:
    """Upsert every text unit in batches of `BATCH`; return throughput figures."""
    n, times = len(corpus), []
    for lo in range(0, n, BATCH):
        hi = min(n, lo + BATCH)
        records = [IndexRecord(id=f"tu{i:07d}", text=corpus.text(i),
                               fields={"document_id": f"doc{i // 8:06d}", "chunk": i % 8})
                   for i in range(lo, hi)]  # fmt: skip
        started = time.perf_counter()
        await index.upsert(Collection.TEXT_UNITS, records, vectors[lo:hi])
        times.append(time.perf_counter() - started)
        if len(times) % max(1, (n // BATCH) // 10) == 0:
            print(f"    {hi:>7}/{n} loaded, {BATCH / times[-1]:.0f}/s now", flush=True)
    tenth = max(1, len(times) // 10)
    return {
        "insert_total_s": round(sum(times), 1),
        "insert_units_per_s": round(n / sum(times)),
        "insert_first_10pct_units_per_s": round(tenth * BATCH / sum(times[:tenth])),
        "insert_last_10pct_units_per_s": round(tenth * BATCH / sum(times[-tenth:])),
    }


async def measure(
    index: SearchIndex, mode: str, texts: list[str], vectors: Vectors
) -> tuple[str, list[list[str]]]:
    """Run every query (the first `WARMUP` untimed); return ``("p50 / p95" ms, hit ids)``."""
    times, hits = [], []
    for i, text in enumerate(texts):
        started = time.perf_counter()
        found = await index.search(
            Collection.TEXT_UNITS, mode=SearchMode(mode),
            query_text=None if mode == "vector" else text,
            query_vector=None if mode == "lexical" else vectors[i], **SEARCH,  # type: ignore[arg-type]
        )  # fmt: skip
        if i >= WARMUP:
            times.append((time.perf_counter() - started) * 1000)
            hits.append([h.id for h in found])
    return p50_p95(times), hits


def recall(hits: list[list[str]], truth: list[set[str]]) -> float:
    found = [len(set(h[:10]) & t) / 10 for h, t in zip(hits, truth, strict=True)]
    return round(float(np.mean(found)), 3)


async def pg_variant(
    url: str, catalog: str, corpus: SyntheticCorpus, vectors: Vectors, qv: Vectors,
    truth: list[set[str]], texts: dict[str, list[str]], *, explain: bool,
) -> dict[str, Any]:
    """Load through the port (HNSW in place), then lexical/hybrid timings and the ef sweep.

    ``texts`` empty: vector figures only (the clustered variant).
    """
    out: dict[str, Any] = {}
    async with PostgresBackend(url, PostgresConfig(schema_name=catalog)) as backend:
        index = backend.search_index("scale")
        await index.bind_embedding("synthetic-384", DIM)
        out.update(await load(index, corpus, vectors))
        out["vacuum_analyze_s"] = vacuum_analyze(url, index_schema(url, catalog, "scale"))
        out["size_mib"] = catalog_size_mib(url, catalog)
        for name, queries in texts.items():
            for mode in ("lexical", "hybrid"):
                out[f"{mode}_{name}_p50/p95_ms (bm25, ef 100)"] = (
                    await measure(index, mode, queries, qv))[0]  # fmt: skip
        if explain and texts:
            with capture_plans() as plans:
                for queries in texts.values():
                    await index.search(Collection.TEXT_UNITS, mode=SearchMode.LEXICAL,
                                       query_text=queries[WARMUP], k=10)  # fmt: skip
                await index.search(Collection.TEXT_UNITS, mode=SearchMode.VECTOR,
                                   query_vector=qv[WARMUP], k=10)  # fmt: skip
            names = [*(f"lexical_{n}" for n in texts), "vector"]
            out["plans"] = dict(zip(names, plans, strict=False))
    if texts:
        config = PostgresConfig(schema_name=catalog, lexical_ranking="ts_rank_cd")
        async with PostgresBackend(url, config) as backend:
            for name, queries in texts.items():
                out[f"lexical_{name}_p50/p95_ms (ts_rank_cd)"] = (
                    await measure(backend.search_index("scale"), "lexical", queries, qv))[0]
    for ef in EF_SWEEP:
        async with PostgresBackend(url, PostgresConfig(schema_name=catalog,
                                                       hnsw_ef_search=ef)) as backend:
            index = backend.search_index("scale")
            latency, hits = await measure(index, "vector", [""] * len(qv), qv)
            out[f"ef_search {ef}: vector p50/p95_ms"] = latency
            out[f"ef_search {ef}: recall@10"] = recall(hits, truth)
            if "tail" in texts:
                out[f"ef_search {ef}: hybrid_tail p50/p95_ms"] = (
                    await measure(index, "hybrid", texts["tail"], qv))[0]  # fmt: skip
    return out


async def pg_bulk(
    url: str, catalog: str, corpus: SyntheticCorpus, vectors: Vectors
) -> dict[str, Any]:
    """Load with the HNSW index dropped, then build it (server default, then 1 GB memory)."""
    import psycopg
    from psycopg import sql

    config = PostgresConfig(schema_name=catalog)
    out: dict[str, Any] = {}
    async with PostgresBackend(url, config) as backend:
        index = backend.search_index("scale")
        await index.bind_embedding("synthetic-384", DIM)
        schema = index_schema(url, catalog, "scale")
        name = sql.Identifier(schema, "search_records_hnsw_text_units")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP INDEX {}").format(name))
        out.update({f"no_hnsw_{k}": v for k, v in (await load(index, corpus, vectors)).items()})
    create = sql.SQL(
        "CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops) "
        "WITH (m = {}, ef_construction = {}) WHERE collection = 'text_units'"
    ).format(sql.Identifier("search_records_hnsw_text_units"),
             sql.Identifier(schema, "search_records"), sql.Literal(config.hnsw_m),
             sql.Literal(config.hnsw_ef_construction))  # fmt: skip
    for memory in (None, "1GB"):
        with psycopg.connect(url, autocommit=True) as conn:
            notices: list[str] = []

            def keep(diag: Any, seen: list[str] = notices) -> None:
                seen.append(str(diag.message_primary))

            conn.add_notice_handler(keep)
            if memory:
                conn.execute(sql.SQL("SET maintenance_work_mem = {}").format(sql.Literal(memory)))
            used = conn.execute("SHOW maintenance_work_mem").fetchone()[0]  # type: ignore[index]
            started = time.perf_counter()
            conn.execute(create)
            out[f"hnsw_build_s (maintenance_work_mem {used})"] = round(
                time.perf_counter() - started, 1)  # fmt: skip
            if notices:
                out[f"hnsw_build_notices ({used})"] = "; ".join(notices)
            conn.execute(sql.SQL("DROP INDEX {}").format(name))
    return out


async def sqlite_variant(
    path: Path, corpus: SyntheticCorpus, vectors: Vectors, qv: Vectors,
    truth: list[set[str]], texts: dict[str, list[str]],
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    async with SqliteBackend(path) as backend:
        index = backend.search_index("scale")
        await index.bind_embedding("synthetic-384", DIM)
        out.update(await load(index, corpus, vectors))
        out["size_mib"] = round(sum(f.stat().st_size for f in path.parent.glob(path.name + "*"))
                                / 2**20, 1)  # fmt: skip
        started = time.perf_counter()
        await index.search(Collection.TEXT_UNITS, mode=SearchMode.VECTOR, query_vector=qv[0])
        out["first_vector_query_s (cache build)"] = round(time.perf_counter() - started, 2)
        latency, hits = await measure(index, "vector", [""] * len(qv), qv)
        out["exact: vector p50/p95_ms"], out["exact: recall@10"] = latency, recall(hits, truth)
        for name, queries in texts.items():
            for mode in ("lexical", "hybrid"):
                out[f"{mode}_{name}_p50/p95_ms"] = (await measure(index, mode, queries, qv))[0]
    return out


async def run_scale(
    url: str, n: int, tmp: Path, *, queries: int, tag: str, skip: set[str], explain: bool
) -> dict[str, Any]:
    total = queries + WARMUP
    started = time.perf_counter()
    corpus = SyntheticCorpus.generate(n)
    word_sets = {"zipf": corpus.queries(total, seed=11),
                 "tail": corpus.queries(total, seed=12, min_rank=100)}  # fmt: skip
    texts = {k: [" ".join(corpus.vocab[w] for w in q) for q in v] for k, v in word_sets.items()}
    results: dict[str, Any] = {"data": {
        "text_units": n, "mean_words_per_text": round(float(np.mean(np.diff(corpus.offsets))), 1),
        "timed_queries": queries,
        "examples": {k: v[WARMUP] for k, v in texts.items()},
        **{f"{k}_query_matches_texts_mean/median_pct": " / ".join(
            f"{100 * f(m) / n:.1f}" for f in (np.mean, np.median))
           for k, m in ((k, corpus.matched_texts(v[WARMUP:])) for k, v in word_sets.items())},
        "generate_s": round(time.perf_counter() - started, 1),
    }}  # fmt: skip
    show(f"scale: synthetic data ({n:,} text units)", results["data"])
    kind = "lowrank" if "gaussian" in skip else "gaussian"
    vectors, qv = lowrank(n, total) if kind == "lowrank" else gaussian(n, total)
    truth = exact_top10(vectors, qv[WARMUP:])
    catalog = f"bench_scale_{tag}"
    print(f"  postgres, {kind} vectors: loading ...", flush=True)
    fig = await pg_variant(url, catalog, corpus, vectors, qv, truth, texts, explain=explain)
    drop_catalog(url, catalog)
    plans = fig.pop("plans", {})
    results[f"postgres_{kind}"] = fig
    show(f"scale: postgres, {kind} vectors", fig)
    for name, plan in plans.items():
        print(f"\n-- EXPLAIN (ANALYZE, BUFFERS) {name} query:\n{plan}")
    results["postgres_plans"] = plans
    if "sqlite" not in skip:
        print(f"  sqlite, {kind} vectors: loading ...", flush=True)
        results["sqlite"] = await sqlite_variant(tmp / "scale" / "ukr.db", corpus, vectors, qv,
                                                 truth, texts)  # fmt: skip
        show("scale: sqlite (exact kNN)", results["sqlite"])
    if "bulk" not in skip:
        print(f"  postgres, {kind} vectors, load without HNSW then build ...", flush=True)
        results["postgres_bulk"] = await pg_bulk(url, f"bench_bulk_{tag}", corpus, vectors)
        drop_catalog(url, f"bench_bulk_{tag}")
        show("scale: postgres, load without the HNSW index, then CREATE INDEX",
             results["postgres_bulk"])
    del vectors, qv, truth
    if "clustered" not in skip:
        clusters = max(10, n // 200)
        vectors, qv = clustered(n, total, clusters)
        truth = exact_top10(vectors, qv[WARMUP:])
        print(f"  postgres, clustered vectors ({clusters} clusters): loading ...", flush=True)
        fig = await pg_variant(url, f"bench_clu_{tag}", corpus, vectors, qv, truth, {},
                               explain=False)  # fmt: skip
        drop_catalog(url, f"bench_clu_{tag}")
        fig["clusters"] = clusters
        results["postgres_clustered"] = fig
        show(f"scale: postgres, clustered vectors ({clusters} centres + N(0, I) noise)", fig)
    return results


# ------------------------------------------------------------------ main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--only", choices=["musique", "2wiki", "scale"], default=None)
    parser.add_argument("--scale", type=int, default=200_000, help="synthetic text units")
    parser.add_argument("--queries", type=int, default=200, help="timed queries per setting")
    parser.add_argument("--url", default=None, help="use this server instead of pgserver")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--explain", action="store_true", help="print EXPLAIN ANALYZE plans")
    parser.add_argument("--skip", default="", help="scale parts to skip: bulk,clustered,sqlite; "
                        "gaussian (use embedding-like low-rank vectors instead)")
    args = parser.parse_args()
    skip = {s for s in args.skip.split(",") if s}
    started = time.perf_counter()
    tag = uuid.uuid4().hex[:6]
    with tempfile.TemporaryDirectory(prefix="ukr-bench-pg-") as tmp:
        url, server = args.url, None
        if url is None:
            url, server = start_postgres(Path(tmp) / "pgdata")
        results: dict[str, Any] = {"server": server_settings(url)}
        show("server", results["server"])
        if args.only != "scale":
            if not args.data.is_dir():
                sys.exit(f"data folder not found: {args.data}")
            questions = [q["question"] for q in
                         json.loads((args.data / "musique_train.json").read_text())]  # fmt: skip
            for name in CORPORA:
                if args.only and name != args.only:
                    continue
                corpus_started = time.perf_counter()
                figures = run_corpus(name, args.data, url, questions, tag)
                for backend, values in figures.items():
                    show(f"{name}: {backend}", values)
                print(f"  ({name} part took {time.perf_counter() - corpus_started:.0f} s)")
                results[name] = figures
        if args.only in (None, "scale"):
            results["scale"] = asyncio.run(run_scale(
                url, args.scale, Path(tmp), queries=args.queries, tag=tag, skip=skip,
                explain=args.explain))  # fmt: skip
        if server is not None:
            server.cleanup()  # stop it before its folder goes
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, default=str) + "\n")
    print(f"\npython {sys.version.split()[0]}, {os.cpu_count()} CPUs, numpy {np.__version__}, "
          f"load average {os.getloadavg()[0]:.2f}, total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
