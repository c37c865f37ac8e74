"""Graph items' embedding time: the old write order against `item_vectors`' (same texts, A/B).

Reads the entity, relationship and report texts of an existing index's SQLite search index
(read only; e.g. the replay-built MuSiQue index of ``benchmarks/bench_strategies.py``) and
embeds them with the bundled model two ways, interleaved, ``--repeat`` times:

* ``before``: as `GraphWriter` did until issue 23: the records in build order, 512 per
  `embed_documents` call (each call sorted by length on its own), every record embedded;
* ``after``: as `ingestion.graph.item_vectors` does: each unique text once, sorted by length
  over the whole collection, 512 per call.

Prints per collection: texts, unique texts, tokens (special tokens included), padded tokens
of the model batches either way, and the median wall and CPU seconds of each way with the
speed-up. Timings on a loaded machine vary; the CPU seconds (this process, all threads) vary
less than the wall seconds.

Usage:  python benchmarks/bench_graph_embeddings.py --project DIR [--repeat 3] [--limit N]
        [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from unified_kg_rag.adapters.embeddings.local import LocalEmbedder  # noqa: E402
from unified_kg_rag.config.models import EmbeddingsConfig  # noqa: E402

COLLECTIONS = ("entities", "relationships", "reports")
CHUNK = 512


def read_texts(project: Path, limit: int | None) -> dict[str, list[str]]:
    """Return each graph collection's texts from ``project``'s index, in id order."""
    db = project / ".ukr" / "ukr.db"
    if not db.is_file():
        sys.exit(f"{db}: no index there")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out: dict[str, list[str]] = {}
        for col in COLLECTIONS:
            rows = con.execute(
                "SELECT text FROM search_records WHERE collection = ? ORDER BY id", (col,)
            ).fetchall()
            out[col] = [t for (t,) in rows][:limit]
        return out
    finally:
        con.close()


def padded_tokens(lengths: list[int], batches: list[list[int]]) -> int:
    """Return the tokens the model reads when each batch pads to its longest member."""
    return sum(max(lengths[i] for i in b) * len(b) for b in batches if b)


def batches_before(texts: list[str], batch: int) -> list[list[int]]:
    out = []
    for first in range(0, len(texts), CHUNK):
        idx = sorted(range(first, min(first + CHUNK, len(texts))),
                     key=lambda k: len(texts[k]), reverse=True)  # fmt: skip
        out += [idx[i : i + batch] for i in range(0, len(idx), batch)]
    return out


def after_texts(texts: list[str]) -> list[str]:
    return sorted(set(texts), key=len, reverse=True)


async def embed_before(emb: LocalEmbedder, texts: list[str]) -> None:
    for first in range(0, len(texts), CHUNK):
        await emb.embed_documents(texts[first : first + CHUNK])


async def embed_after(emb: LocalEmbedder, texts: list[str]) -> None:
    todo = after_texts(texts)
    for first in range(0, len(todo), CHUNK):
        await emb.embed_documents(todo[first : first + CHUNK])


def timed(fn: Callable[[LocalEmbedder, list[str]], Any], emb: LocalEmbedder,
          texts: list[str]) -> tuple[float, float]:  # fmt: skip
    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(fn(emb, texts))
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="texts per collection")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    texts = read_texts(args.project, args.limit)
    config = EmbeddingsConfig()
    emb = LocalEmbedder(config)
    model = emb._load()
    rows: dict[str, Any] = {}
    print(f"{'collection':<14}{'texts':>7}{'unique':>8}{'tokens':>9}{'padded':>9}"
          f"{'padded':>9}   {'before s':>9}{'after s':>9}{'x wall':>7}   "
          f"{'cpu bef':>8}{'cpu aft':>8}{'x cpu':>7}")  # fmt: skip
    print(f"{'':<38}{'before':>9}{'after':>9}")
    for col, items in texts.items():
        if not items:
            continue
        lengths = [len(ids) for ids in model.tokenizer(items, truncation=False)["input_ids"]]
        unique = after_texts(items)
        ulen = [len(ids) for ids in model.tokenizer(unique, truncation=False)["input_ids"]]
        b = config.batch_size
        pad_before = padded_tokens(lengths, batches_before(items, b))
        pad_after = padded_tokens(ulen, [list(range(i, min(i + b, len(unique))))
                                         for i in range(0, len(unique), b)])  # fmt: skip
        runs: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
        for _ in range(args.repeat):  # interleaved A/B
            runs["before"].append(timed(embed_before, emb, items))
            runs["after"].append(timed(embed_after, emb, items))
        med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
               for k, v in runs.items()}  # fmt: skip
        rows[col] = {
            "texts": len(items), "unique": len(unique), "tokens": sum(lengths),
            "padded_before": pad_before, "padded_after": pad_after,
            "wall_s": {k: [round(w, 2) for w, _ in v] for k, v in runs.items()},
            "cpu_s": {k: [round(c, 2) for _, c in v] for k, v in runs.items()},
            "speedup_wall": med["before"][0] / med["after"][0],
            "speedup_cpu": med["before"][1] / med["after"][1],
        }  # fmt: skip
        r = rows[col]
        print(f"{col:<14}{r['texts']:>7}{r['unique']:>8}{r['tokens']:>9}{pad_before:>9}"
              f"{pad_after:>9}   {med['before'][0]:>9.2f}{med['after'][0]:>9.2f}"
              f"{r['speedup_wall']:>7.2f}   {med['before'][1]:>8.2f}{med['after'][1]:>8.2f}"
              f"{r['speedup_cpu']:>7.2f}", flush=True)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
