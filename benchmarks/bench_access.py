"""What recording access counts costs a query (prints figures).

Indexes the demo corpus (``examples/computing-history``, LLM-free ``lazy`` methodology,
the bundled embedder) into a temporary project, or uses ``--project DIR``; warms the model;
then runs the same questions through `RAGChain.ainvoke` (strategy ``naive``, extractive
answer) alternately with recording off and on (``query.access.record``, the app's
`AccessRecorder`), so both see the same caches and machine load. Prints each side's
per-query latency (median, mean, p90, ms), the difference of the medians, and the counts
written once the app closed (which must equal the sources returned with recording on).
First it prints what recording costs on the query's path itself (queueing the ids of ten
sources), which does not depend on the machine's load as the end-to-end figures do.

Usage:  python benchmarks/bench_access.py [--project DIR] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

QUESTIONS = [
    "What numbers did Ada Lovelace's Note G compute?",
    "Who designed Colossus, and where was it used?",
    "What was the Manchester Baby?",
    "What did Alan Turing propose in 1936?",
    "Why was the Difference Engine never finished?",
]
CORPUS = Path(__file__).resolve().parent.parent / "examples" / "computing-history"


async def measure(project: Path, runs: int, index_first: bool) -> dict[str, object]:
    from unified_kg_rag.bootstrap import build_app
    from unified_kg_rag.config.models import UkrConfig
    from unified_kg_rag.domain.models import Collection

    config = UkrConfig.model_validate({
        "indexing": {"methodologies": ["lazy"]},
        "query": {"strategy": "naive", "access": {"record": True}},
    })  # fmt: skip
    async with build_app(config, project) as app:
        if index_first:
            await app.index_pipeline().run([CORPUS])
        off = app.chain(query=config.query.model_copy(update={
            "access": config.query.access.model_copy(update={"record": False})}))
        on = app.chain()
        await off.ainvoke(QUESTIONS[0])  # loads the model
        times: dict[str, list[float]] = {"off": [], "on": []}
        returned = 0
        for i in range(runs):
            question = QUESTIONS[i % len(QUESTIONS)]
            for side, chain in (("off", off), ("on", on)) if i % 2 else (("on", on),
                                                                          ("off", off)):
                t0 = time.perf_counter()
                out = await chain.ainvoke(question)
                times[side].append((time.perf_counter() - t0) * 1000.0)
                if side == "on":
                    returned += len(out.sources)
        t0 = time.perf_counter()
    closed_ms = (time.perf_counter() - t0) * 1000.0
    async with build_app(config, project) as app:
        log = app.backend.access_log(app.index().name)
        written = (await log.totals()).get(Collection.TEXT_UNITS.value, 0)
        await log.reset()
    return {"times": times, "returned": returned, "written": written, "close_ms": closed_ms}


def enqueue_cost_us(calls: int = 20_000, sources: int = 10) -> float:
    """Microseconds one query spends recording: `AccessRecorder.record_sources` of its sources.

    No event loop runs, so nothing is written: this is exactly the work on the query's path.
    """
    from unified_kg_rag.domain.models import Source
    from unified_kg_rag.retrieval.access import AccessRecorder

    class NoLog:
        async def increment(self, collection: object, counts: object) -> None: ...
        async def counts(self, collection: object, ids: object) -> dict[str, int]: return {}
        async def totals(self) -> dict[str, int]: return {}
        async def reset(self) -> int: return 0

    recorder = AccessRecorder(NoLog(), max_pending=10**9)
    batch = [Source(n=i + 1, kind="text_unit", id=f"{i:064x}", text="t") for i in range(sources)]
    t0 = time.perf_counter()
    for _ in range(calls):
        recorder.record_sources(batch)
    return (time.perf_counter() - t0) / calls * 1e6


def _row(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (f"{name:<14} median {statistics.median(values):7.2f}  mean "
            f"{statistics.fmean(values):7.2f}  p90 {p90:7.2f}  (n={len(values)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    print(f"recording on the query's path (record_sources, 10 sources): "
          f"{enqueue_cost_us():.1f} us per query")
    if args.project is None:
        with tempfile.TemporaryDirectory() as tmp:
            result = asyncio.run(measure(Path(tmp), args.runs, index_first=True))
    else:
        result = asyncio.run(measure(args.project, args.runs, index_first=False))
    times = result["times"]
    assert isinstance(times, dict)
    print("query latency, ms (RAGChain.ainvoke, naive, extractive):")
    print(_row("recording off", times["off"]))
    print(_row("recording on", times["on"]))
    delta = statistics.median(times["on"]) - statistics.median(times["off"])
    print(f"median difference (on - off): {delta:+.2f} ms")
    print(f"sources returned with recording on: {result['returned']}; "
          f"counts written: {result['written']}; app close (final write) "
          f"{result['close_ms']:.1f} ms")
    if result["returned"] != result["written"]:
        sys.exit("counts written differ from the sources returned")


if __name__ == "__main__":
    main()
