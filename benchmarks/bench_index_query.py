"""Indexing throughput, peak memory and retrieval latency on real corpora (prints figures).

Corpora (from ../shared/data/multihop/hipporag, read in place, never copied into the repo):
- MuSiQue train corpus, 1,890 passages (with its 100 questions)
- 2WikiMultihopQA corpus, 6,119 passages (no questions: the MuSiQue questions are used as
  latency probes)

For each corpus: the passages are written as one Markdown file each into a temporary folder
(``ukr eval prepare``'s layout), ``ukr index`` runs end to end in a child process (model load
included; wall time and peak RSS measured), then retrieval latency (``RAGChain.retrieve``:
query embedding + hybrid search + packing, no answer step) is measured in-process over the
questions after one warm-up query.

Usage:  python benchmarks/bench_index_query.py [--data DIR] [--json OUT.json] [--only musique]
Targets (2 cores): MuSiQue indexed in under 90 s end to end; retrieval p50 under 50 ms at
6,119 passages.
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
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "multihop" / "hipporag"


def write_corpus(passages: list[dict[str, str]], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i, p in enumerate(passages):
        title = p.get("title", "").strip()
        body = f"# {title}\n\n{p['text'].strip()}\n" if title else p["text"].strip() + "\n"
        (folder / f"{i:05d}.md").write_text(body, encoding="utf-8")


def index_corpus(corpus: Path, project: Path) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "unified_kg_rag.cli", "index", str(corpus), "-C", str(project),
         "--json"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"ukr index failed ({proc.returncode}): {proc.stderr.strip()}")
    report = json.loads(proc.stdout)
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    units = report["text_units_written"]
    return {
        "documents": report["documents_found"],
        "text_units": units,
        "wall_s": round(wall, 1),
        "pipeline_s": report["elapsed_s"],
        "passages_per_s": round(report["documents_found"] / wall, 1),
        "peak_rss_mib": round(peak_mib),
    }


async def retrieval_latency(project: Path, questions: list[str]) -> dict[str, float]:
    from unified_kg_rag.bootstrap import build_app
    from unified_kg_rag.config.load import load_config
    from unified_kg_rag.retrieval.chain import RAGChain

    config = load_config(project)
    async with build_app(config, project) as app:
        chain = RAGChain(
            app.index(),
            embedder=app.embedder,
            chat_model=None,
            budget_tokenizer=app.budget_tokenizer,
            config=config.query,
        )
        await chain.retrieve(questions[0])  # warm-up: model load, vector cache
        out: dict[str, float] = {}
        for mode in ("hybrid", "vector", "lexical"):
            times = []
            for q in questions:
                t0 = time.perf_counter()
                await chain.retrieve(q, search_mode=mode)
                times.append((time.perf_counter() - t0) * 1000)
            out[f"{mode}_p50_ms"] = round(float(np.percentile(times, 50)), 1)
            out[f"{mode}_p95_ms"] = round(float(np.percentile(times, 95)), 1)
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--only", choices=["musique", "2wiki"], default=None)
    args = parser.parse_args()
    if not args.data.is_dir():
        sys.exit(f"data folder not found: {args.data}")
    questions = [q["question"] for q in json.loads((args.data / "musique_train.json").read_text())]
    corpora = {
        "musique": args.data / "musique_train_corpus.json",
        "2wiki": args.data / "2wikimultihopqa_corpus.json",
    }
    results: dict[str, dict[str, float]] = {}
    for name, path in corpora.items():
        if args.only and name != args.only:
            continue
        passages = json.loads(path.read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory(prefix=f"ukr-bench-{name}-") as tmp:
            corpus, project = Path(tmp) / "corpus", Path(tmp) / "project"
            write_corpus(passages, corpus)
            figures = index_corpus(corpus, project)
            figures.update(asyncio.run(retrieval_latency(project, questions)))
        results[name] = figures
        print(f"\n== {name}: {len(passages)} passages")
        for key, value in figures.items():
            print(f"  {key:<18} {value}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\npython {sys.version.split()[0]}, {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
