"""Every query strategy on the replay-built MuSiQue graph index: recall, context size, latency.

The index is the one ``benchmarks/bench_graph_index.py`` builds: MuSiQue's 1,890 passages with
GPT-3.5-turbo-1106's recorded extraction (HippoRAG's OpenIE file) served by the replay model
through a real OpenAI-compatible server on 127.0.0.1, methodologies ``graphrag`` and
``lightrag``. Queries run without an LLM, as the LightRAG and GraphRAG anchors of issue 6 did
("keywords from the question without an LLM"): query entities are the indexed names the
question contains, keywords are the question.

Per strategy, over the 100 questions: recall@2/@5/@10 of the supporting passages among the
passages of the packed context (in context order), recall anywhere in the context, context
tokens per query, and retrieval latency p50/p95 without model time: each strategy runs twice
through an embedder that memoizes query embeddings, and the second run is timed, so every
query embedding (question, query entities, keywords) is served from memory. The paired
bootstrap interval of each strategy's recall@5 and @10 minus ``naive``'s says whether a
difference is more than noise.

Usage:  python benchmarks/bench_strategies.py [--project DIR] [--data DIR] [--json OUT]
        (without --project the index is built first, about 5 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_graph_index import DEFAULT_DATA, OPENIE, run_index  # noqa: E402

from unified_kg_rag import RAGChain, build_app, evaluate, load_dataset  # noqa: E402
from unified_kg_rag.config.models import UkrConfig  # noqa: E402
from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402

STRATEGIES = ["naive", "simple", "hybrid", "mix", "local", "global", "drift"]


def bootstrap(diff: list[float], n: int = 10_000, seed: int = 7) -> tuple[float, float, float]:
    arr = np.asarray(diff)
    rng = np.random.default_rng(seed)
    means = rng.choice(arr, size=(n, arr.size), replace=True).mean(axis=1)
    return float(arr.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


class MemoEmbedder:
    """Wraps an embedder; repeated query texts are served from memory (no model time)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.memo: dict[str, Any] = {}

    @property
    def model_id(self) -> str:
        return str(self.inner.model_id)

    @property
    def dimension(self) -> int:
        return int(self.inner.dimension)

    async def embed_documents(self, texts: Any) -> Any:
        return await self.inner.embed_documents(texts)

    async def embed_query(self, text: str) -> Any:
        if text not in self.memo:
            self.memo[text] = await self.inner.embed_query(text)
        return self.memo[text]


async def measure(project: Path, dataset: Path, strategies: list[str],
                  overrides: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    items = load_dataset(dataset)
    config = UkrConfig()
    query = config.query.model_copy(update=overrides)
    out: dict[str, Any] = {}
    async with build_app(config, project) as app:
        chain = RAGChain(app.index(), embedder=MemoEmbedder(app.embedder), chat_model=None,
                         budget_tokenizer=app.budget_tokenizer, config=query)  # fmt: skip
        for name in strategies:
            print(f"  running {name} ...", file=sys.stderr, flush=True)
            await evaluate(chain, items, retrieval_only=True, strategy=name)  # fills the memo
            r = await evaluate(chain, items, retrieval_only=True, strategy=name)
            out[name] = {
                "recall@2": r.recall_at_2, "recall@5": r.recall_at_5,
                "recall@10": r.recall_at_10, "recall_in_context": r.recall_in_context,
                "context_tokens": r.context_tokens_mean,
                "retrieval_p50_ms": r.retrieval_ms_p50, "retrieval_p95_ms": r.retrieval_ms_p95,
                "per_q": {k: [q.recall.get(f"@{k}", 0.0) for q in r.questions if q.recall]
                          for k in (5, 10)},
            }  # fmt: skip
    return out


def report(rows: dict[str, Any]) -> None:
    print(f"  {'strategy':<8} {'@2':>6} {'@5':>6} {'@10':>6} {'in ctx':>7} {'tokens':>7} "
          f"{'p50 ms':>7} {'p95 ms':>7}   vs naive @5 / @10 (95% CI)")  # fmt: skip
    base = rows.get("naive")
    for name, r in rows.items():
        line = (f"  {name:<8} {r['recall@2']:.3f}  {r['recall@5']:.3f}  {r['recall@10']:.3f}  "
                f"{r['recall_in_context']:.3f}  {r['context_tokens']:>6.0f}  "
                f"{r['retrieval_p50_ms']:>6.1f}  {r['retrieval_p95_ms']:>6.1f}")  # fmt: skip
        if base is not None and name != "naive":
            parts = []
            for k in (5, 10):
                m, lo, hi = bootstrap([a - b for a, b in zip(r["per_q"][k], base["per_q"][k],
                                                             strict=True)])  # fmt: skip
                parts.append(f"{m:+.3f} ({lo:+.3f}..{hi:+.3f})")
                r[f"vs_naive@{k}"] = [m, lo, hi]
            line += "   " + " / ".join(parts)
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=None,
                        help="an index already built by this script or bench_graph_index")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--set", action="append", default=[],
                        help="query override as JSON key=value, e.g. --set top_k=10")
    args = parser.parse_args()
    overrides = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        prepare_hipporag(args.data / "musique_train.json",
                         args.data / "musique_train_corpus.json", tmp / "musique", force=True)
        project = args.project
        if project is None:
            from tests.support.openai_server import FakeOpenAIServer
            from tests.support.replay_server import ReplayModel

            project = tmp / "p"
            with FakeOpenAIServer(reply=ReplayModel(args.data / OPENIE)) as server:
                built = run_index(tmp / "musique" / "corpus", project, server)
            print(f"== index built in {built['wall_s']} s")
        rows = asyncio.run(measure(project, tmp / "musique" / "dataset.jsonl",
                                   args.strategies.split(","), overrides))  # fmt: skip
    print("== MuSiQue, 100 questions, no LLM at query time (replay-built graph index)")
    report(rows)
    if args.json:
        args.json.write_text(json.dumps({k: {m: v for m, v in r.items() if m != "per_q"}
                                         for k, r in rows.items()}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
