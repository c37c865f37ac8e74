"""Distributed indexing on Ray (``indexing.cluster``): speed-up with 1, 2 and 4 workers.

Two workloads, each a Ray run per worker count against a local run (no cluster) in one
process, on a one-node Ray cluster started here on 127.0.0.1 (``ray start --head``,
``--num-cpus`` = this machine's cores):

(a) latency-bound: an LLM graph build (graphrag + lightrag) of a MuSiQue subset against the
    HippoRAG replay model (``tests/support/replay_server.py``) answering each call after
    ``--latency`` seconds (0.3 by default). A Ray run with ``w`` workers has
    ``cluster_worker_calls`` (4) calls in flight per worker, so ``4w`` in all; its local
    twin gets the same total (``llm.max_concurrency = graph.unit_concurrency = 4w``). The
    figure is the extraction stage's seconds and the whole run's.
(b) embedding-bound: an LLM-free ``ukr index`` (text units only: ``indexing.methodologies:
    []``) of MuSiQue passages: the bundled embedder in ``w`` actors (each its own model copy
    and ``cores / w`` CPUs) against the local embedder in this process (torch on all cores).

Every run writes a fresh project (no response cache shared). Timings on a shared machine
vary: run the script twice and compare ratios.

Usage:  python benchmarks/bench_ray_index.py [--passages 48] [--embed-passages 400]
        [--latency 0.3] [--workers 1 2 4] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_index_query import write_corpus  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer  # noqa: E402
from tests.support.ray_cluster import AUTH_ENV, LocalRayCluster  # noqa: E402
from tests.support.replay_server import ReplayModel  # noqa: E402

from unified_kg_rag.bootstrap import build_app  # noqa: E402
from unified_kg_rag.config.models import UkrConfig  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "multihop" / "hipporag"
OPENIE = "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"
CALLS_PER_WORKER = 4


def _config(server: FakeOpenAIServer | None, cluster: str | None, *, workers: int,
            concurrency: int) -> UkrConfig:  # fmt: skip
    llm: dict[str, Any] = {"kind": "none"}
    methodologies: list[str] | None = []
    if server is not None:
        methodologies = None  # graphrag + lightrag with an LLM
        llm = {"kind": "openai", "max_concurrency": concurrency,
               "openai": {"base_url": server.base_url, "api_key": "replay", "model": "replay"}}
    return UkrConfig(
        llm=llm, graph={"unit_concurrency": concurrency}, parsing={"source_scope": "musique"},
        indexing={"cluster": cluster, "cluster_workers": workers, "methodologies": methodologies,
                  "cluster_worker_calls": CALLS_PER_WORKER},
    )  # fmt: skip


async def _run(config: UkrConfig, project: Path, corpus: Path) -> dict[str, float]:
    started = time.perf_counter()
    async with build_app(config, project) as app:
        report = await app.index_pipeline().run([corpus])
    out = {"wall_s": round(time.perf_counter() - started, 1),
           "embedding_s": round(report.embedding_s, 1)}  # fmt: skip
    if report.graph is not None and "extract" in report.graph.stages:
        out["extract_s"] = round(report.graph.stages["extract"].seconds, 1)
        out["entities"] = report.graph.entities
    return out


def latency_bound(args: argparse.Namespace, tmp: Path, cluster: LocalRayCluster) -> list[dict]:
    passages = json.loads((args.data / "musique_train_corpus.json").read_text())
    write_corpus(passages[: args.passages], tmp / "llm-corpus")
    model = ReplayModel(args.data / OPENIE, latency_s=args.latency)
    rows = []
    with FakeOpenAIServer(reply=model) as server:
        for w in args.workers:
            total = CALLS_PER_WORKER * w
            before = len(server.requests)
            local = asyncio.run(_run(_config(server, None, workers=w, concurrency=total),
                                     tmp / f"llm-local-{w}", tmp / "llm-corpus"))  # fmt: skip
            calls = len(server.requests) - before
            ray = asyncio.run(_run(
                _config(server, cluster.gcs_address, workers=w, concurrency=max(64, total)),
                tmp / f"llm-ray-{w}", tmp / "llm-corpus"))  # fmt: skip
            rows.append({"workers": w, "llm_concurrency": total, "calls": calls,
                         "local": local, "ray": ray})  # fmt: skip
            print(f"  (a) w={w} calls in flight {total:>2}  model calls {calls}  extract: local "
                  f"{local['extract_s']:>6.1f} s  ray {ray['extract_s']:>6.1f} s   whole run: "
                  f"local {local['wall_s']:>6.1f} s  ray {ray['wall_s']:>6.1f} s", flush=True)
    return rows


def embedding_bound(args: argparse.Namespace, tmp: Path, cluster: LocalRayCluster) -> dict:
    passages = json.loads((args.data / "musique_train_corpus.json").read_text())
    write_corpus(passages[: args.embed_passages], tmp / "emb-corpus")
    local = asyncio.run(_run(_config(None, None, workers=1, concurrency=4),
                             tmp / "emb-local", tmp / "emb-corpus"))  # fmt: skip
    print(f"  (b) local (torch, {os.cpu_count()} cores): embedding {local['embedding_s']} s, "
          f"whole run {local['wall_s']} s", flush=True)
    rows = []
    for w in args.workers:
        ray = asyncio.run(_run(_config(None, cluster.gcs_address, workers=w, concurrency=4),
                               tmp / f"emb-ray-{w}", tmp / "emb-corpus"))  # fmt: skip
        rows.append({"workers": w, "ray": ray})
        print(f"  (b) w={w}: embedding {ray['embedding_s']} s (speed-up "
              f"{local['embedding_s'] / ray['embedding_s']:.2f}x), whole run {ray['wall_s']} s "
              f"({local['wall_s'] / ray['wall_s']:.2f}x)", flush=True)
    return {"local": local, "ray": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--passages", type=int, default=48)
    parser.add_argument("--embed-passages", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--skip", choices=["llm", "embedding"], default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    os.environ.update(AUTH_ENV)
    out: dict[str, Any] = {"cores": os.cpu_count(), "latency_s": args.latency}
    print(f"== Ray indexing on one machine ({os.cpu_count()} cores), replay latency "
          f"{args.latency} s", flush=True)
    with tempfile.TemporaryDirectory() as name, LocalRayCluster(cpus=os.cpu_count() or 1) as c:
        if args.skip != "llm":
            out["latency_bound"] = latency_bound(args, Path(name), c)
        if args.skip != "embedding":
            out["embedding_bound"] = embedding_bound(args, Path(name), c)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
