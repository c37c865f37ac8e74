"""The PageRank precompute on the replay-built MuSiQue graph: time, graph size, value summary.

The graph is the LLM entity graph ``ukr index`` builds from all 1,890 MuSiQue passages with
GPT-3.5-turbo-1106's recorded extraction (HippoRAG's OpenIE file) served by the replay model
(``tests/support/replay_server.py``), as in ``benchmarks/bench_graph_index.py``. With
``--project DIR`` holding such an index (``bench_strategies.py --project DIR`` keeps one), its
database is copied (SQLite backup API) to a private folder first: nothing is written to it.
Without, the index is built first (about 5 minutes on 2 cores).

Reported, median of ``--repeats`` (5) runs each:

- ``global_pagerank`` + ``unit_pagerank`` (`domain.ranking.centrality`: scipy sparse power
  iteration, damping 0.85, tolerance 1e-10), what an index run computes;
- networkx's ``pagerank`` over the same weighted undirected graph (the reference; its values
  are compared);
- ``store_entity_pagerank`` once on the copy: digest, computation and the RecordStore write
  (one key per entity and per text unit), then once more on the unchanged graph (skipped).

Usage:  python benchmarks/bench_pagerank.py [--project DIR] [--data DIR] [--repeats 5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_graph_index import DEFAULT_DATA, OPENIE, run_index  # noqa: E402
from benchmarks.bench_index_query import write_corpus  # noqa: E402

from unified_kg_rag import build_app  # noqa: E402
from unified_kg_rag.config.models import UkrConfig  # noqa: E402
from unified_kg_rag.domain.index.meta import INDEX_NAMESPACE  # noqa: E402
from unified_kg_rag.domain.ranking.centrality import global_pagerank, unit_pagerank  # noqa: E402
from unified_kg_rag.ingestion.centrality import store_entity_pagerank  # noqa: E402
from unified_kg_rag.ingestion.graph.write import MANIFEST_KEY, GraphItems  # noqa: E402


def copy_index(project: Path, into: Path) -> Path:
    """Copy ``project``'s SQLite index into ``into`` with the backup API (a consistent copy)."""
    (into / ".ukr").mkdir(parents=True)
    source = sqlite3.connect(f"file:{project / '.ukr' / 'ukr.db'}?mode=ro", uri=True)
    target = sqlite3.connect(into / ".ukr" / "ukr.db")
    with target:
        source.backup(target)
    source.close()
    target.close()
    return into


def _median_s(job: Any, repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = job()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


async def measure(project: Path, repeats: int) -> dict[str, Any]:
    import networkx as nx

    async with build_app(UkrConfig(), project) as app:
        stores = app.index()
        manifest = json.loads(await stores.records.get(INDEX_NAMESPACE, MANIFEST_KEY) or "{}")
        if not manifest.get("entities"):
            sys.exit(f"{project} holds no entity graph")
        entities = await stores.graph.get_entities(manifest["entities"])
        relationships = await stores.graph.get_relationships(manifest["relationships"])
        nodes = [e.id for e in entities]
        edges = [(r.source_id, r.target_id, r.weight) for r in relationships]
        lineage = [(e.id, e.text_unit_ids) for e in entities]

        def ours() -> tuple[Any, dict[str, float]]:
            result = global_pagerank(nodes, edges)
            return result, unit_pagerank(result.values, lineage)

        ours_s, (result, units) = _median_s(ours, repeats)
        graph = nx.Graph()
        graph.add_nodes_from(nodes)
        for s, t, w in edges:
            if s != t:
                old = graph.get_edge_data(s, t, {"weight": 0.0})["weight"]
                graph.add_edge(s, t, weight=old + w)
        nx_s, reference = _median_s(
            lambda: nx.pagerank(graph, alpha=0.85, weight="weight", tol=1e-10), repeats)
        started = time.perf_counter()
        meta = await store_entity_pagerank(stores, GraphItems(entities, relationships))
        store_s = time.perf_counter() - started
        started = time.perf_counter()
        await store_entity_pagerank(stores, GraphItems(entities, relationships))
        unchanged_s = time.perf_counter() - started
    values = sorted(result.values.values())
    names = {e.id: e.name for e in entities}
    top = sorted(result.values.items(), key=lambda kv: -kv[1])[:5]
    return {
        "entities": len(entities), "relationships": len(relationships),
        "nodes": result.nodes, "edges": result.edges, "text_units": len(units),
        "iterations": result.iterations, "converged": result.converged,
        "pagerank_s": round(ours_s, 4), "networkx_s": round(nx_s, 4),
        "max_abs_diff_vs_networkx": max(abs(reference[n] - v) for n, v in result.values.items()),
        "store_s": round(store_s, 3), "unchanged_s": round(unchanged_s, 3),
        "stored_nodes": meta.nodes,
        "summary": {
            "min": values[0], "median": statistics.median(values), "max": values[-1],
            "sum": sum(values), "max_over_uniform": values[-1] * len(values),
            "unit_median_normalised": statistics.median(units.values()) / values[-1],
            "top5": [(names[n], round(v / values[-1], 4)) for n, v in top],
        },
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        if args.project is not None and (args.project / ".ukr" / "ukr.db").exists():
            project = copy_index(args.project, tmp / "copy")
        else:
            from tests.support.openai_server import FakeOpenAIServer
            from tests.support.replay_server import ReplayModel

            passages = json.loads((args.data / "musique_train_corpus.json").read_text())
            write_corpus(passages, tmp / "corpus")
            project = args.project or tmp / "p"
            with FakeOpenAIServer(reply=ReplayModel(args.data / OPENIE)) as server:
                built = run_index(tmp / "corpus", project, server)
            print(f"== index built in {built['wall_s']} s")
            if args.project is not None:
                project = copy_index(args.project, tmp / "copy")
        out = asyncio.run(measure(project, args.repeats))
    s = out["summary"]
    print("== PageRank of the replay-built MuSiQue entity graph (1,890 passages)")
    print(f"  graph: {out['nodes']} nodes, {out['edges']} undirected edges "
          f"({out['relationships']} relationships), {out['text_units']} text units valued")
    print(f"  global_pagerank + unit_pagerank: {out['pagerank_s'] * 1000:.1f} ms median of "
          f"{args.repeats} ({out['iterations']} iterations, converged {out['converged']})")
    print(f"  networkx pagerank:               {out['networkx_s'] * 1000:.1f} ms median "
          f"(max |difference| {out['max_abs_diff_vs_networkx']:.2e})")
    print(f"  store_entity_pagerank (digest, compute, write): {out['store_s']:.3f} s; "
          f"unchanged graph: {out['unchanged_s']:.3f} s")
    print(f"  values: min {s['min']:.3e}  median {s['median']:.3e}  max {s['max']:.3e}  "
          f"sum {s['sum']:.6f}  max x nodes {s['max_over_uniform']:.1f}")
    print(f"  a text unit's normalised value, median: {s['unit_median_normalised']:.4f}")
    print(f"  top 5 (normalised): {s['top5']}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
