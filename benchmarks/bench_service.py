"""The HTTP service under load on the MuSiQue index (prints figures; issue 17).

The index is LLM-free (``naive`` and ``ppr`` served over the ``lazy`` concept graph): MuSiQue's
passages less 200 held out, one passage a file. Every run works on a copy of that index, so
the uploads of one run never reach the next. ``ukr serve`` runs as a subprocess on a free
127.0.0.1 port; the clients are httpx (async) in this process.

Figures:

1. *Overhead*: the same questions asked in-process (`RAGChain.ainvoke` on a warm `App`) and
   over HTTP (``POST /v1/query``) by one client: the p50 of each, and what the HTTP path adds
   to each request, its latency less the chain's own time in the server
   (``timings_ms.total``), p50 and p95 (the two p50s differ by more than that when the
   questions' own times vary).
2. *Concurrency*: throughput (queries/s) and latency p50/p95/p99 at 1, 4 and 16 concurrent
   clients, for ``naive`` and ``ppr``.
3. *During indexing*: the 200 held-out passages uploaded as one index job while 4 clients
   ask questions until it ends: latency, the count of 5xx replies (target 0), then the
   documents and text units afterwards (every upload once, no unit lost or twice, every
   record's units in the search index) and ``PRAGMA integrity_check`` of every SQLite file.
4. *Memory*: the server's RSS after start, after the load, after the job.
5. *Soak* (``--soak-s``, default 600): mixed queries from 4 clients and an upload of 5 small
   new documents every 30 s; RSS sampled every 10 s and printed every minute; the last
   sample against the first after a third of the soak, the warm-up (target: within 10 %).

Usage:  python benchmarks/bench_service.py [--base DIR] [--data DIR] [--soak-s 600]
        (--base keeps the built index for later runs; building it takes about a minute on 2
        cores)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_graph_index import DEFAULT_DATA  # noqa: E402

from unified_kg_rag import build_app, load_config  # noqa: E402
from unified_kg_rag.domain.models import Collection  # noqa: E402
from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402

HELD_OUT = 200
STRATEGIES = ("naive", "ppr")


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0-1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mib(pid: int) -> float:
    """Resident set size of ``pid`` and its children, MiB (from /proc)."""
    total = 0.0
    for p in [pid, *_children(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            pass
    return total


def _children(pid: int) -> list[int]:
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    return [int(k) for k in kids]


def prepare(data: Path, tmp: Path) -> tuple[Path, Path, list[str]]:
    """The corpus folder (less the held-out files), the held-out folder, and questions."""
    prepare_hipporag(data / "musique_train.json", data / "musique_train_corpus.json",
                     tmp / "musique", force=True)  # fmt: skip
    corpus = tmp / "musique" / "corpus"
    held = tmp / "held"
    held.mkdir()
    for path in sorted(p for p in corpus.rglob("*") if p.is_file())[-HELD_OUT:]:
        path.rename(held / path.name)
    rows = (tmp / "musique" / "dataset.jsonl").read_text().splitlines()
    questions = [json.loads(row)["question"] for row in rows]
    return corpus, held, questions


async def build_base(corpus: Path, base: Path) -> None:
    async with build_app(load_config(base), base) as app:
        report = await app.index_pipeline().run([corpus])
        assert not report.failed, report.failed


async def in_process(project: Path, questions: list[str]) -> dict[str, list[float]]:
    """Per strategy, the latency (ms) of each question asked through a warm chain."""
    from unified_kg_rag.retrieval.chain import RAGInput

    out: dict[str, list[float]] = {}
    async with build_app(load_config(project), project) as app:
        chain = app.chain()
        for strategy in STRATEGIES:
            await chain.ainvoke(RAGInput(question=questions[0], strategy=strategy))
            times = []
            for q in questions:
                t0 = time.perf_counter()
                await chain.ainvoke(RAGInput(question=q, strategy=strategy))
                times.append((time.perf_counter() - t0) * 1000)
            out[strategy] = times
    return out


def _in_process_sync(project: Path, questions: list[str]) -> dict[str, list[float]]:
    return asyncio.run(in_process(project, questions))


def in_child(project: Path, questions: list[str]) -> dict[str, list[float]]:
    """`in_process` in a child process, so no model thread of it is left in this client."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_in_process_sync, project, questions).result()


class Server:
    """``ukr serve`` in a subprocess on a free port."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (project / "serve.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "unified_kg_rag.cli", "serve", "-C", str(project),
             "--port", str(self.port)],
            stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **env},
        )  # fmt: skip
        deadline = time.monotonic() + 180
        while True:
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start; see {project / 'serve.log'}")
            time.sleep(0.2)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.log.close()


ERRORS: list[str] = []
"""The first few bodies of replies that were not 200 (printed at the end)."""


async def ask(client: httpx.AsyncClient, question: str, strategy: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    try:
        reply = await client.post("/v1/query", json={"question": question, "strategy": strategy})
    except httpx.HTTPError as error:  # counted as status 0
        ERRORS.append(f"{type(error).__name__}: {error}")
        return (time.perf_counter() - t0) * 1000, 0
    if reply.status_code != 200 and len(ERRORS) < 10:
        ERRORS.append(f"{reply.status_code} {reply.text[:300]}")
    return (time.perf_counter() - t0) * 1000, reply.status_code


async def load(url: str, questions: list[str], strategy: str | None, clients: int,
               count: int | None = None, until: asyncio.Event | None = None,
               ) -> tuple[list[float], Counter[int], float]:  # fmt: skip
    """``clients`` workers asking ``count`` questions in all (or until ``until`` is set).

    Returns the latencies (ms), the statuses and the wall time (s). ``strategy`` None
    alternates naive and ppr.
    """
    latencies: list[float] = []
    statuses: Counter[int] = Counter()
    next_q = 0

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal next_q
        while (count is None or next_q < count) and not (until and until.is_set()):
            i = next_q
            next_q += 1
            chosen = strategy or STRATEGIES[i % 2]
            ms, status = await ask(client, questions[i % len(questions)], chosen)
            latencies.append(ms)
            statuses[status] += 1

    t0 = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        await asyncio.gather(*(worker(client) for _ in range(clients)))
    return latencies, statuses, time.perf_counter() - t0


async def upload(client: httpx.AsyncClient, paths: list[Path]) -> dict[str, Any]:
    files = [("files", (p.name, p.read_bytes(), "text/plain")) for p in paths]
    reply = await client.post("/v1/documents", files=files)
    assert reply.status_code == 202, reply.text
    job: dict[str, Any] = reply.json()
    return job


async def wait_job(client: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    while True:
        job: dict[str, Any] = (await client.get(f"/v1/jobs/{job_id}")).json()
        if job["state"] not in ("queued", "running"):
            return job
        await asyncio.sleep(0.5)


async def during_indexing(url: str, questions: list[str], held: list[Path]) -> dict[str, Any]:
    done = asyncio.Event()

    async def index_job() -> tuple[dict[str, Any], float]:
        async with httpx.AsyncClient(base_url=url, timeout=300) as client:
            t0 = time.perf_counter()
            job = await upload(client, held)
            final = await wait_job(client, job["id"])
            done.set()
            return final, time.perf_counter() - t0

    (final, job_s), (lat, statuses, wall) = await asyncio.gather(
        index_job(), load(url, questions, None, 4, until=done))
    return {"job": final, "job_s": job_s, "latencies": lat, "statuses": statuses, "wall": wall}


async def check_stores(project: Path, expected_docs: int) -> dict[str, Any]:
    """Documents, units and their agreement between registry and search index."""
    async with build_app(load_config(project), project) as app:
        stores = app.index()
        records = await stores.registry.list_records()
        unit_ids = [u for r in records for u in r.text_unit_ids]
        indexed = set(await stores.search.ids(Collection.TEXT_UNITS))
    paths = Counter((r.source_scope, r.path) for r in records)
    integrity = {}
    for db in sorted((project / ".ukr").rglob("*")):
        if db.suffix in (".sqlite", ".db", ".sqlite3") and db.is_file():
            with sqlite3.connect(db) as conn:
                integrity[db.name] = conn.execute("PRAGMA integrity_check").fetchone()[0]
    return {
        "documents": len(records), "expected": expected_docs,
        "statuses": Counter(str(r.status) for r in records),
        "units": len(unit_ids), "distinct_units": len(set(unit_ids)),
        "units_missing_from_index": len(set(unit_ids) - indexed),
        "index_units_without_record": len(indexed - set(unit_ids)),
        "paths_twice": sum(1 for n in paths.values() if n > 1),
        "integrity": integrity,
    }  # fmt: skip


async def soak(url: str, pid: int, questions: list[str], seconds: float, folder: Path
               ) -> list[tuple[float, float]]:  # fmt: skip
    """Mixed queries and uploads for ``seconds``; (elapsed s, RSS MiB) every 10 s."""
    stop = asyncio.Event()
    samples: list[tuple[float, float]] = []
    t0 = time.monotonic()

    async def sampler() -> None:
        while not stop.is_set():
            samples.append((time.monotonic() - t0, rss_mib(pid)))
            await asyncio.sleep(10)

    async def uploader() -> None:
        n = 0
        rng = random.Random(7)
        async with httpx.AsyncClient(base_url=url, timeout=300) as client:
            while not stop.is_set():
                paths = []
                for _ in range(5):
                    n += 1
                    words = rng.sample(questions, 3)
                    path = folder / f"soak-{n:05d}.txt"
                    path.write_text(f"Soak note {n}. " + " ".join(words))
                    paths.append(path)
                job = await upload(client, paths)
                await wait_job(client, job["id"])
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=30)

    async def timer() -> None:
        await asyncio.sleep(seconds)
        stop.set()

    await asyncio.gather(sampler(), uploader(), timer(),
                         load(url, questions, None, 4, until=stop))  # fmt: skip
    samples.append((time.monotonic() - t0, rss_mib(pid)))
    return samples


def line(name: str, lat: list[float], wall: float | None = None) -> str:
    head = f"  {name:<22} n={len(lat):>4}  p50 {pct(lat, .5):7.1f}  p95 {pct(lat, .95):7.1f}"
    head += f"  p99 {pct(lat, .99):7.1f} ms"
    return head + (f"  {len(lat) / wall:6.1f} q/s" if wall else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, default=None,
                        help="where the base index is built (kept for later runs)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--questions", type=int, default=60)
    parser.add_argument("--soak-s", type=float, default=600.0, help="0 skips the soak")
    parser.add_argument("--parts", default="1,2,3,5",
                        help="which figures: 1 overhead, 2 concurrency, 3 during a job, 5 soak")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        corpus, held_dir, questions = prepare(args.data, tmp)
        questions = questions[: args.questions]
        base = args.base or tmp / "base"
        if not (base / ".ukr").exists():
            t0 = time.perf_counter()
            asyncio.run(build_base(corpus, base))
            print(f"== base index built in {time.perf_counter() - t0:.0f} s")
        project = tmp / "run"
        shutil.copytree(base, project)
        base_docs = len([p for p in corpus.rglob("*") if p.is_file()])

        parts = set(args.parts.split(","))
        inproc = in_child(project, questions) if "1" in parts else {}
        env = {"UKR_SERVICE__MAX_UPLOAD_FILES": str(HELD_OUT),
               "UKR_SERVICE__ACCESS_LOG": "false"}  # fmt: skip
        server = Server(project, env)
        try:
            pid = server.proc.pid
            rss = {"start": rss_mib(pid)}
            print(f"== MuSiQue, {base_docs} passages, LLM-free index; {len(questions)} questions")
            print("== 1. HTTP overhead at 1 client (ms)")
            for strategy in STRATEGIES if "1" in parts else ():
                asyncio.run(load(server.url, questions[:2], strategy, 1, count=2))  # warm
                http, added = asyncio.run(sequential(server.url, questions, strategy))
                print(f"  {strategy:<6} in-process p50 {pct(inproc[strategy], .5):7.1f}"
                      f"  HTTP p50 {pct(http, .5):7.1f}  HTTP path beyond the chain's own "
                      f"time: p50 {pct(added, .5):5.1f}  p95 {pct(added, .95):5.1f}")  # fmt: skip
            print("== 2. concurrent clients")
            for strategy in STRATEGIES if "2" in parts else ():
                for clients in (1, 4, 16):
                    lat, statuses, wall = asyncio.run(
                        load(server.url, questions, strategy, clients,
                             count=max(len(questions), 4 * clients)))  # fmt: skip
                    bad = {s: n for s, n in statuses.items() if s != 200}
                    print(line(f"{strategy} x{clients}", lat, wall) + f"  non-200 {bad}")
            rss["after load"] = rss_mib(pid)
            if "3" in parts:
                print(f"== 3. during an index job of {HELD_OUT} uploaded documents")
                held = sorted(held_dir.iterdir())
                out = asyncio.run(during_indexing(server.url, questions, held))
                fives = sum(n for s, n in out["statuses"].items() if s >= 500)
                print(line("queries during job", out["latencies"], out["wall"]) +
                      f"  statuses {dict(out['statuses'])}  5xx {fives}")  # fmt: skip
                job = out["job"]
                print(f"  job {job['state']} in {out['job_s']:.1f} s")
                rss["after job"] = rss_mib(pid)
                check = asyncio.run(check_stores(project, base_docs + HELD_OUT))
                print(f"  stores after the job: {json.dumps(check, default=dict)}")
            if args.soak_s > 0 and "5" in parts:
                print(f"== 5. soak, {args.soak_s:.0f} s")
                soak_dir = tmp / "soak"
                soak_dir.mkdir()
                samples = asyncio.run(soak(server.url, pid, questions, args.soak_s, soak_dir))
                series = ", ".join(f"{t:.0f}s {r:.0f}" for t, r in samples[::6])
                print(f"  RSS (MiB) every minute: {series}")
                warm = [r for t, r in samples if t >= args.soak_s / 3] or [r for _, r in samples]
                print(f"  RSS after a third of the soak {warm[0]:.0f} MiB, last {warm[-1]:.0f}"
                      f" MiB, max {max(warm):.0f} MiB, change "
                      f"{100 * (warm[-1] / warm[0] - 1):+.1f} %")  # fmt: skip
                rss["after soak"] = samples[-1][1]
        finally:
            server.stop()
        print("== 4. server RSS (MiB): " + ", ".join(f"{k} {v:.0f}" for k, v in rss.items()))
        for error in ERRORS:
            print(f"  not 200: {error}")


async def sequential(url: str, questions: list[str], strategy: str
                     ) -> tuple[list[float], list[float]]:  # fmt: skip
    """Each question asked in turn by one client over one connection.

    Returns the latencies (ms) and, per request, the latency less the chain's own time in
    the server (``timings_ms.total``): what the HTTP path adds.
    """
    times, added = [], []
    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        for q in questions:
            t0 = time.perf_counter()
            reply = await client.post("/v1/query", json={"question": q, "strategy": strategy})
            ms = (time.perf_counter() - t0) * 1000
            assert reply.status_code == 200, reply.text
            times.append(ms)
            added.append(ms - reply.json()["timings_ms"]["total"])
    return times, added


if __name__ == "__main__":
    main()
