"""Grounding on the replayed GPT-3.5 MuSiQue extraction: what it drops, and retrieval recall.

The index is the one ``benchmarks/bench_graph_index.py`` builds: MuSiQue's 1,890 passages
with GPT-3.5-turbo-1106's recorded extraction (HippoRAG's OpenIE file) served by the replay
model (``tests/support/replay_server.py``) through a real OpenAI-compatible server on
127.0.0.1, methodologies ``graphrag``, ``lightrag`` and ``hipporag`` (``ppr`` needs the last; it
builds nothing ``lightrag`` does not). The replay's spans: an entity's span
is its name when the name occurs verbatim in the passage, else empty; a relationship's span is
always empty. So this measures the *empty-span fallback* as much as the span check: an entity
without a span is grounded when its name is (normalised, fuzzy at
``grounding_min_similarity``), a triple when both its endpoint names are.

One project is indexed once per ``graph.extraction.grounding`` mode (``off`` first, then the
others): every build after the first reuses the stored extraction records (the script checks
that no extraction call is made) and only re-shapes, resolves and writes the graph. After
each build the 100 MuSiQue questions run retrieval only (no LLM at query time, as in
``bench_strategies.py``) with ``local`` and ``ppr`` (its entity graph), top 10; recall@2/@5/@10
by supporting passage as ``ukr eval run --retrieval-only`` scores it, and the paired bootstrap
interval (``evaluation.statistics.paired_bootstrap``, 10,000 resamples, seed 0) of each mode
minus ``off``.

Usage:  python benchmarks/bench_grounding.py [--data DIR] [--json OUT] [--modes off,drop,weight]
            [--strategies local,ppr] [--min-similarity 90]
        (one full build, about 5 minutes on 2 cores, then one re-shaping build per mode)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_graph_index import DEFAULT_DATA, OPENIE, run_index  # noqa: E402
from benchmarks.bench_strategies import MemoEmbedder  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer  # noqa: E402
from tests.support.replay_server import ReplayModel  # noqa: E402

from unified_kg_rag import RAGChain, build_app, evaluate, load_dataset  # noqa: E402
from unified_kg_rag.config.models import UkrConfig  # noqa: E402
from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402
from unified_kg_rag.evaluation.statistics import paired_bootstrap  # noqa: E402

KS = (2, 5, 10)


async def measure(project: Path, dataset: Path, strategies: list[str]) -> dict[str, Any]:
    """Recall@2/5/10 (mean and per question) of each strategy, retrieval only, top 10."""
    items = load_dataset(dataset)
    config = UkrConfig()
    out: dict[str, Any] = {}
    async with build_app(config, project) as app:
        chain = RAGChain(app.index(), embedder=MemoEmbedder(app.embedder), chat_model=None,
                         budget_tokenizer=app.budget_tokenizer, config=config.query)  # fmt: skip
        for name in strategies:
            r = await evaluate(chain, items, retrieval_only=True, strategy=name, top_k=10)
            out[name] = {
                **{f"recall@{k}": getattr(r, f"recall_at_{k}") for k in KS},
                "per_q": {k: [q.recall.get(f"@{k}", 0.0) for q in r.questions if q.recall]
                          for k in KS},
            }
    return out


def _shaping_line(mode: str, graph: dict[str, Any], calls: int) -> str:
    s = graph["shaping"]
    return (f"  {mode:<7} entities {graph['entities']:>6}  relationships "
            f"{graph['relationships']:>6}  ungrounded entities dropped "
            f"{s['ungrounded_entities_dropped']:>5} / weighted "
            f"{s['ungrounded_entities_weighted']:>5}"
            f"  triples dropped {s['ungrounded_relationships_dropped']:>5} / weighted "
            f"{s['ungrounded_relationships_weighted']:>5}  checked by name "
            f"{s['checked_by_name']:>6}  extraction calls {calls}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--modes", default="off,drop,weight")
    parser.add_argument("--strategies", default="local,ppr")
    parser.add_argument("--min-similarity", type=float, default=90.0)
    args = parser.parse_args()
    modes, strategies = args.modes.split(","), args.strategies.split(",")
    if modes[0] != "off":
        sys.exit("--modes must start with off (the baseline)")
    builds: dict[str, Any] = {}
    recall: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        prepare_hipporag(args.data / "musique_train.json",
                         args.data / "musique_train_corpus.json", tmp / "musique", force=True)
        model = ReplayModel(args.data / OPENIE)
        with FakeOpenAIServer(reply=model) as server:
            for mode in modes:
                before = model.calls["extraction"]
                print(f"  indexing with grounding {mode} ...", file=sys.stderr, flush=True)
                built = run_index(
                    tmp / "musique" / "corpus", tmp / "p", server,
                    UKR_GRAPH__EXTRACTION__GROUNDING=mode,
                    UKR_GRAPH__EXTRACTION__GROUNDING_MIN_SIMILARITY=str(args.min_similarity),
                    UKR_INDEXING__METHODOLOGIES='["graphrag", "lightrag", "hipporag"]',
                )
                builds[mode] = {"graph": built["graph"], "wall_s": built["wall_s"],
                                "extraction_calls": model.calls["extraction"] - before}
                print(f"  measuring {mode} ...", file=sys.stderr, flush=True)
                recall[mode] = asyncio.run(
                    measure(tmp / "p", tmp / "musique" / "dataset.jsonl", strategies)
                )
                if args.json:  # what is measured so far survives a later failure
                    args.json.write_text(json.dumps({"builds": builds, "recall": recall}))
    print(f"== MuSiQue, 1,890 passages, replayed GPT-3.5 extraction; grounding_min_similarity "
          f"{args.min_similarity:g}")
    for mode, b in builds.items():
        print(_shaping_line(mode, b["graph"], b["extraction_calls"]) + f"  ({b['wall_s']} s)")
    print("== 100 questions, retrieval only, top 10: recall (paired 95% CI of mode - off)")
    out: dict[str, Any] = {"builds": builds, "recall": {}}
    for name in strategies:
        for mode in modes:
            r = recall[mode][name]
            cells = []
            row: dict[str, Any] = {f"recall@{k}": r[f"recall@{k}"] for k in KS}
            for k in KS:
                cell = f"@{k} {r[f'recall@{k}']:.3f}"
                if mode != "off":
                    iv = paired_bootstrap(r["per_q"][k], recall["off"][name]["per_q"][k])
                    cell += f" ({iv.estimate:+.3f}, {iv.low:+.3f}..{iv.high:+.3f})"
                    row[f"diff@{k}"] = [iv.estimate, iv.low, iv.high]
                cells.append(cell)
            print(f"  {name:<6} {mode:<7} " + "  ".join(cells))
            out["recall"].setdefault(name, {})[mode] = row
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
