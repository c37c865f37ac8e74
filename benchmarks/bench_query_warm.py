"""Latency of a query in a process that keeps the model loaded (prints figures).

What the README's "after that" figure measures: `RAGChain.ainvoke` (retrieval with the default
strategy, packing and the extractive answer: no LLM), in one process, after one warm-up query
has loaded the embedding model. A cold ``ukr query`` process also pays its imports and the
model load; time that as a whole process (``/usr/bin/time ukr query ...``).

Usage:  python benchmarks/bench_query_warm.py --project DIR [--runs N]
        (DIR: a project whose default index holds the demo corpus, e.g. after
        ``ukr index examples/computing-history -C DIR``)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

QUESTIONS = [
    "What numbers did Ada Lovelace's Note G compute?",
    "Who designed Colossus, and where was it used?",
    "What was the Manchester Baby?",
    "What did Alan Turing propose in 1936?",
    "Why was the Difference Engine never finished?",
]


async def measure(project: Path, runs: int) -> dict[str, list[float]]:
    from unified_kg_rag import RAGChain, build_app, load_config

    config = load_config(project)
    async with build_app(config, project) as app:
        chain = RAGChain(app.index(), embedder=app.embedder, chat_model=app.chat_model,
                         budget_tokenizer=app.budget_tokenizer, config=config.query,
                         reranker=app.reranker)  # fmt: skip
        await chain.ainvoke(QUESTIONS[0])  # loads the model
        times: dict[str, list[float]] = {"query": [], "retrieval": [], "answer": []}
        for i in range(runs):
            t0 = time.perf_counter()
            out = await chain.ainvoke(QUESTIONS[i % len(QUESTIONS)])
            times["query"].append((time.perf_counter() - t0) * 1000.0)
            steps = out.timings_ms
            times["retrieval"].append(sum(steps.get(k, 0.0) for k in _RETRIEVAL_STEPS))
            times["answer"].append(steps.get("answer", 0.0))
        return times


_RETRIEVAL_STEPS = ("rewrite", "route", "retrieve", "fuse", "pack")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    measured = asyncio.run(measure(args.project, args.runs))
    print(f"warm queries (ainvoke, default strategy, extractive answer), {args.runs} runs:")
    for name, values in measured.items():
        times = sorted(values)
        p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
        print(f"  {name:<10} p50 {statistics.median(times):7.0f} ms   p95 {p95:7.0f} ms   "
              f"min {times[0]:7.0f} ms")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
