"""`local`'s report selections side by side: retrieval latency, interleaved question by question.

``query.local_search.report_selection`` ``membership`` (the default) reads every community
of the index to rank the reports of the expanded entities' communities; ``similarity`` only
searches the reports. Latency figures of separate benchmark runs on a shared machine differ by
more than that cost, so here each question runs under both selections one after the other
(in alternating order), after a warm-up pass that fills the query-embedding memo, and the
retrieval latency (rewrite to packing, no model time) is compared per selection: p50, p95,
and the median of the per-question difference. The report figures of each selection are
`bench_strategies.report_coverage`'s.

Usage:  python benchmarks/bench_local_reports.py --project DIR [--data DIR] [--rounds N]
        (DIR: an index built by ``benchmarks/bench_strategies.py --project DIR``)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_graph_index import DEFAULT_DATA  # noqa: E402
from benchmarks.bench_strategies import MemoEmbedder, report_coverage  # noqa: E402

from unified_kg_rag import RAGChain, build_app, load_dataset  # noqa: E402
from unified_kg_rag.config.models import UkrConfig  # noqa: E402
from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402

SELECTIONS = ("similarity", "membership")


def _chain(app: Any, embedder: MemoEmbedder, selection: str) -> RAGChain:
    query = app.config.query
    query = query.model_copy(update={"local_search": query.local_search.model_copy(
        update={"report_selection": selection})})  # fmt: skip
    return RAGChain(app.index(), embedder=embedder, chat_model=None,
                    budget_tokenizer=app.budget_tokenizer, config=query)  # fmt: skip


async def measure(project: Path, dataset: Path, rounds: int) -> dict[str, Any]:
    items = load_dataset(dataset)
    async with build_app(UkrConfig(), project) as app:
        embedder = MemoEmbedder(app.embedder)
        chains = {s: _chain(app, embedder, s) for s in SELECTIONS}
        times: dict[str, list[float]] = {s: [] for s in SELECTIONS}
        for item in items:  # warm-up: every query embedding into the memo
            await chains["similarity"].retrieve(item.question, strategy="local", top_k=10)
        for r in range(rounds):
            for i, item in enumerate(items):
                order = SELECTIONS if (i + r) % 2 == 0 else SELECTIONS[::-1]
                for s in order:
                    out = await chains[s].retrieve(item.question, strategy="local", top_k=10)
                    times[s].append(sum(out.timings_ms.get(k, 0.0) for k in (
                        "rewrite", "route", "retrieve", "fuse", "pack")))  # fmt: skip
        rows: dict[str, Any] = {}
        for s in SELECTIONS:
            t = np.asarray(times[s])
            rows[s] = {"p50_ms": float(np.percentile(t, 50)), "p95_ms": float(np.percentile(t, 95)),
                       "reports": await report_coverage(chains[s], app.index().graph, items,
                                                        "local")}  # fmt: skip
        diff = np.asarray(times["membership"]) - np.asarray(times["similarity"])
        rows["membership"]["median_extra_ms"] = float(np.median(diff))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        prepare_hipporag(args.data / "musique_train.json",
                         args.data / "musique_train_corpus.json", tmp / "musique", force=True)
        rows = asyncio.run(measure(args.project, tmp / "musique" / "dataset.jsonl",
                                   args.rounds))  # fmt: skip
    print(f"== local on MuSiQue, 100 questions x {args.rounds} rounds, selections interleaved")
    print(f"  {'selection':<11} {'p50 ms':>7} {'p95 ms':>7} {'own':>6} {'queries':>8} "
          f"{'related':>8}")  # fmt: skip
    for s, r in rows.items():
        c = r["reports"]
        print(f"  {s:<11} {r['p50_ms']:>7.1f} {r['p95_ms']:>7.1f} {c['own_reports']:>6.3f} "
              f"{c['own_report_queries']:>8.3f} {c['related_reports']:>8.3f}")  # fmt: skip
    print(f"  membership minus similarity, median per question: "
          f"{rows['membership']['median_extra_ms']:+.1f} ms")


if __name__ == "__main__":
    main()
