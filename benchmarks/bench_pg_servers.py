"""Queries/s of one against two ``ukr serve`` processes on one PostgreSQL database (issue 23).

An LLM-free index (the bundled local embedding model, the ``lazy`` concept graph) of the
first ``--docs`` MuSiQue passages, one passage a file, is built once into a private PostgreSQL
(``pgserver``, or ``--url``). The answers are written by a fake OpenAI-compatible model in its
own process that replies at once (``--answer model``, the default: the figure is what the
service and the stores cost) or quoted without a model (``--answer extractive``: embedding the
packed sources' sentences, about 0.6 s of CPU a query, dominates). Two servers, each with its
own project directory (as on two machines), run as subprocesses on free 127.0.0.1 ports.
Then, for each client count (``--clients``), ``--requests`` questions are asked by that many
concurrent httpx clients in this process (``POST /v1/query``, strategy ``--strategy``,
default ``naive``), first all to server A (1 server), then client *i* to server *i* mod 2
(2 servers: what a round-robin load balancer does). Both servers run in both settings (B
idles in the first); the settings alternate within each of ``--rounds`` rounds, so load from
other work on the machine falls on both alike.

Figures per setting: queries/s (median over rounds), latency p50/p95 (all rounds pooled, ms),
the CPU milliseconds per query of the servers, PostgreSQL's processes and the fake model
(from /proc) and of the clients (``time.process_time``), which say where the cores went.

Usage:  python benchmarks/bench_pg_servers.py [--docs 300] [--clients 4,8,16]
        [--requests 200] [--rounds 3] [--answer model|extractive] [--json out.json]
        [--url postgresql://...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._pg import drop_catalog, start_postgres, ukr  # noqa: E402
from benchmarks.bench_graph_index import DEFAULT_DATA  # noqa: E402
from benchmarks.bench_service import free_port, pct  # noqa: E402

from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402

CONFIG = "stores: {kind: postgres}\nindexing: {methodologies: [lazy]}\n"
MODEL = "llm: {kind: openai, openai: {base_url: '%s', api_key: k, model: fake}}\n"
FAKE_MODEL = ("import sys, time; sys.path.insert(0, sys.argv[1]); "
              "from tests.support.openai_server import FakeOpenAIServer; "
              "s = FakeOpenAIServer().start(); print(s.base_url, flush=True); time.sleep(1e9)")
"""A fake OpenAI-compatible chat server (it echoes the prompt at once), in its own process."""
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pids: list[int]) -> float:
    """User + system CPU seconds of ``pids`` (and their children already reaped), from /proc."""
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15]) / _TICK  # utime stime cutime cstime
    return total


def postgres_pids() -> list[int]:
    """The processes of PostgreSQL servers on this machine (pgserver's, by command name)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() in ("postgres", "postmaster"):
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


class Server:
    """``ukr serve`` of ``project`` on a free port (a subprocess)."""

    def __init__(self, project: Path, env: dict[str, str]) -> None:
        self.url = f"http://127.0.0.1:{(port := free_port())}"
        self.log = (project / "serve.log").open("w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "unified_kg_rag.cli", "serve", "-C", str(project),
             "--port", str(port)], stdout=self.log, stderr=subprocess.STDOUT, env=env)  # fmt: skip

    def wait(self) -> None:
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the server did not start; see {self.log.name}")
            time.sleep(0.2)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.log.close()


async def run_load(urls: list[str], questions: list[str], strategy: str, clients: int,
                   requests: int) -> dict[str, Any]:  # fmt: skip
    """``clients`` workers asking ``requests`` questions in all; worker i asks urls[i % n]."""
    latencies: list[float] = []
    failures: list[str] = []
    kinds: Counter[str] = Counter()  # the replies' answer_kind (the model's, or extractive)
    todo = iter(range(requests))

    async def worker(i: int) -> None:
        async with httpx.AsyncClient(base_url=urls[i % len(urls)], timeout=120) as client:
            for n in todo:
                t0 = time.perf_counter()
                reply = await client.post("/v1/query", json={
                    "question": questions[n % len(questions)], "strategy": strategy})
                latencies.append((time.perf_counter() - t0) * 1000)
                if reply.status_code != 200:
                    failures.append(f"{reply.status_code} {reply.text[:200]}")
                else:
                    kinds[str(reply.json().get("answer_kind"))] += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker(i) for i in range(clients)))
    wall = time.perf_counter() - started
    return {"wall_s": wall, "latencies_ms": latencies, "failures": failures,
            "answer_kinds": dict(kinds)}


SIDES = ("servers", "postgres", "client", "model")
"""Where CPU time is counted: the ukr servers, PostgreSQL, the clients, the fake model."""


def measure(servers: list[Server], n: int, questions: list[str], strategy: str, clients: int,
            requests: int, model_pid: int | None) -> dict[str, Any]:  # fmt: skip
    """One run of the load on the first ``n`` servers, with the CPU each side spent."""
    server_pids, pg, model = [s.proc.pid for s in servers], postgres_pids(), [model_pid or 0]

    def sample() -> tuple[float, ...]:
        return cpu_s(server_pids), cpu_s(pg), time.process_time(), cpu_s(model)

    before = sample()
    run = asyncio.run(run_load([s.url for s in servers[:n]], questions, strategy, clients,
                               requests))  # fmt: skip
    after = sample()
    run.update(servers=n, clients=clients, qps=requests / run["wall_s"],
               cpu_per_query_ms={side: (b - a) * 1000 / requests for side, a, b in
                                 zip(SIDES, before, after, strict=True)})  # fmt: skip
    return run


def summarize(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (servers, clients): median queries/s, pooled p50/p95, median CPU per query."""
    rows = []
    for key in sorted({(r["servers"], r["clients"]) for r in runs}, key=lambda k: (k[1], k[0])):
        group = [r for r in runs if (r["servers"], r["clients"]) == key]
        pooled = [x for r in group for x in r["latencies_ms"]]
        rows.append({
            "servers": key[0], "clients": key[1], "rounds": len(group),
            "qps": round(statistics.median(r["qps"] for r in group), 2),
            "qps_each_round": [round(r["qps"], 2) for r in group],
            "p50_ms": round(pct(pooled, 0.5), 1), "p95_ms": round(pct(pooled, 0.95), 1),
            "cpu_ms_per_query": {side: round(statistics.median(
                r["cpu_per_query_ms"][side] for r in group), 1)
                for side in SIDES},
            "failures": sum(len(r["failures"]) for r in group),
            "answer_kinds": dict(sum((Counter(r["answer_kinds"]) for r in group), Counter())),
        })  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--docs", type=int, default=300, help="MuSiQue passages indexed")
    parser.add_argument("--clients", default="4,8,16", help="concurrent clients, comma-separated")
    parser.add_argument("--requests", type=int, default=200, help="questions per run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--strategy", default="naive")
    parser.add_argument("--answer", choices=("model", "extractive"), default="model",
                        help="model: a fake OpenAI-compatible model answers at once (the "
                        "figure is the service's and the stores' cost); extractive: no model, "
                        "the server quotes sentences (about 0.6 s of CPU a query)")
    parser.add_argument("--url", help="a PostgreSQL URL (default: a private pgserver)")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    clients = [int(c) for c in args.clients.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="bench-pg-servers-"))
    handle = None
    try:
        url = args.url
        if url is None:
            url, handle = start_postgres(tmp / "pgdata")
        catalog = f"bench_pgserve_{uuid.uuid4().hex[:8]}"
        env = {"UKR_STORES__POSTGRES__URL": url, "UKR_STORES__POSTGRES__SCHEMA_NAME": catalog}
        prepare_hipporag(args.data / "musique_train.json",
                         args.data / "musique_train_corpus.json", tmp / "musique", force=True)
        corpus = tmp / "corpus"
        corpus.mkdir()
        for path in sorted(p for p in (tmp / "musique" / "corpus").rglob("*") if p.is_file()
                           )[: args.docs]:  # fmt: skip
            shutil.copy(path, corpus / path.name)
        rows = (tmp / "musique" / "dataset.jsonl").read_text().splitlines()
        questions = [json.loads(row)["question"] for row in rows]
        projects = [tmp / "a", tmp / "b"]
        for project in projects:
            project.mkdir()
            (project / "ukr.yaml").write_text(CONFIG)
        _, index_s, _ = ukr(["index", str(corpus), "-C", str(projects[0])], env)
        model = None
        if args.answer == "model":
            model = subprocess.Popen([sys.executable, "-c", FAKE_MODEL, str(ROOT)],
                                     stdout=subprocess.PIPE, text=True)  # fmt: skip
            assert model.stdout is not None
            base_url = model.stdout.readline().strip()
            for project in projects:
                (project / "ukr.yaml").write_text(CONFIG + MODEL % base_url)
        print(f"indexed {args.docs} passages into PostgreSQL in {index_s:.1f} s")
        child_env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")} | env
        servers = [Server(p, child_env) for p in projects]
        try:
            for server in servers:
                server.wait()
                for q in questions[:8]:  # warm: model, connection pool, first plans
                    httpx.post(f"{server.url}/v1/query", timeout=120,
                               json={"question": q, "strategy": args.strategy})  # fmt: skip
            runs = []
            for r in range(args.rounds):
                for c in clients:
                    for n in (1, 2) if r % 2 == 0 else (2, 1):
                        run = measure(servers, n, questions, args.strategy, c, args.requests,
                                      model.pid if model is not None else None)
                        print(f"round {r + 1}: {n} server(s), {c:2} clients: "
                              f"{run['qps']:.1f} q/s", flush=True)  # fmt: skip
                        runs.append(run)
        finally:
            for server in servers:
                server.stop()
            if model is not None:
                model.terminate()
        table = summarize(runs)
        print(f"\n{args.strategy} ({args.answer} answers), {args.docs} passages, "
              f"{args.requests} questions a run, median of {args.rounds} rounds;\n"
              "CPU ms per query: servers / PostgreSQL / client / fake model")
        print(f"{'clients':>7} {'servers':>7} {'q/s':>7} {'x1':>5} {'p50 ms':>8} {'p95 ms':>8} "
              f"{'cpu ms/q':>24} {'fail':>4}")  # fmt: skip
        for row in table:
            one = next(t["qps"] for t in table if t["clients"] == row["clients"]
                       and t["servers"] == 1)  # fmt: skip
            cpu = row["cpu_ms_per_query"]
            print(f"{row['clients']:>7} {row['servers']:>7} {row['qps']:>7.1f} "
                  f"{row['qps'] / one:>5.2f} {row['p50_ms']:>8.0f} {row['p95_ms']:>8.0f} "
                  f"{cpu['servers']:>6.0f} /{cpu['postgres']:>4.0f} /{cpu['client']:>4.0f} "
                  f"/{cpu['model']:>4.0f} "
                  f"{row['failures']:>4}")  # fmt: skip
        print("answer kinds:", dict(sum((Counter(r["answer_kinds"]) for r in table),
                                        Counter())))  # fmt: skip
        figures = {"docs": args.docs, "requests": args.requests, "rounds": args.rounds,
                   "strategy": args.strategy, "answer": args.answer, "cores": os.cpu_count(),
                   "load_average": os.getloadavg(), "index_s": round(index_s, 1),
                   "table": table}  # fmt: skip
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n")
        if args.url:
            drop_catalog(url, catalog)
    finally:
        del handle
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
