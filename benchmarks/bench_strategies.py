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

For the strategies that put community reports in the context (``local``, ``drift``), which
the passage recall does not count: *own reports*, the share of seed entities (the entities
the question selected) whose own community report (that of the deepest community holding
them that has a report) is in the context; *queries*, the share of questions whose context
holds the own report of at least one of them; *related*, the share of the context's reports
whose community holds a seed or an entity of the context.

Usage:  python benchmarks/bench_strategies.py [--project DIR] [--data DIR] [--json OUT]
        (without --project, or with a folder that holds no index yet, the index is built
        first, about 5 minutes on 2 cores; --project keeps it there for the next run)
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
from unified_kg_rag.config.models import QueryConfig, UkrConfig  # noqa: E402
from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402

STRATEGIES = ["naive", "simple", "hybrid", "mix", "local", "global", "drift"]
REPORT_STRATEGIES = ("local", "drift")
"""Strategies whose community reports are measured (`report_coverage`)."""


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


async def report_coverage(
    chain: Any, graph: Any, items: list[Any], strategy: str
) -> dict[str, float]:
    """Return how often the seed entities' own community reports are in the context.

    The own report of an entity is the report of the deepest community holding it that has a
    report. Returns ``own_reports`` (over seeds that have one), ``own_report_queries`` (share
    of questions whose context holds the own report of at least one seed, over questions with
    such a seed), ``related_reports`` (share of the context's reports whose community holds a
    seed or an entity of the context) and ``reports_in_context`` (mean per question).
    """
    communities = await graph.get_communities()
    reported = {r.community_id for r in await graph.get_reports([c.id for c in communities])}
    own: dict[str, Any] = {}
    for c in communities:
        if c.id in reported:
            for m in c.member_ids:
                if m not in own or c.level > own[m].level:
                    own[m] = c
    members = {c.id: set(c.member_ids) for c in communities}
    seeds_n = seeds_hit = queries_n = queries_hit = reports_n = related_n = 0
    for item in items:
        out = await chain.retrieve(item.question, strategy=strategy, top_k=10)
        in_ctx = [s.id for s in out.sources if s.kind == "report"]
        entities = {s.id for s in out.sources if s.kind == "entity"}
        seeds = [e for e in out.metadata.get("seed_entities", []) if e in own]
        hits = sum(own[e].id in in_ctx for e in seeds)
        seeds_n, seeds_hit = seeds_n + len(seeds), seeds_hit + hits
        queries_n, queries_hit = queries_n + bool(seeds), queries_hit + bool(hits)
        held = entities | set(out.metadata.get("seed_entities", []))
        reports_n += len(in_ctx)
        related_n += sum(bool(members.get(c, set()) & held) for c in in_ctx)
    return {
        "own_reports": seeds_hit / max(seeds_n, 1),
        "own_report_queries": queries_hit / max(queries_n, 1),
        "related_reports": related_n / max(reports_n, 1),
        "reports_in_context": reports_n / max(len(items), 1),
    }


async def measure_strategy(chain: Any, items: list[Any], name: str) -> dict[str, Any]:
    """Run strategy ``name`` over ``items`` twice (the first fills the embedding memo), time
    the second: recall@2/5/10, recall in context, context tokens, retrieval p50/p95 (ms) and
    ``per_q`` (recall@5 and @10 of each question with supporting passages, in order)."""
    await evaluate(chain, items, retrieval_only=True, strategy=name)  # fills the memo
    r = await evaluate(chain, items, retrieval_only=True, strategy=name)
    return {
        "recall@2": r.recall_at_2, "recall@5": r.recall_at_5,
        "recall@10": r.recall_at_10, "recall_in_context": r.recall_in_context,
        "context_tokens": r.context_tokens_mean,
        "retrieval_p50_ms": r.retrieval_ms_p50, "retrieval_p95_ms": r.retrieval_ms_p95,
        "per_q": {k: [q.recall.get(f"@{k}", 0.0) for q in r.questions if q.recall]
                  for k in (5, 10)},
    }  # fmt: skip


def musique_index(
    data: Path, project: Path | None, tmp: Path, *, methodologies: list[str] | None = None,
    again: bool = False,
) -> tuple[Path, Path]:
    """Prepare MuSiQue-100 under ``tmp`` and return ``(project, dataset.jsonl)``.

    The index is built first (about 5 minutes on 2 cores) when ``project`` is None (then in
    ``tmp``) or holds no index yet (then kept there for later runs), or when ``again``
    (an existing index is brought up to date: with ``methodologies`` it lacks, only the
    graph is re-shaped from the stored extraction). ``methodologies``: the index's
    (``indexing.methodologies``; None: the default, ``graphrag`` and ``lightrag``)."""
    prepare_hipporag(data / "musique_train.json", data / "musique_train_corpus.json",
                     tmp / "musique", force=True)  # fmt: skip
    if again or project is None or not (project / ".ukr").exists():
        from tests.support.openai_server import FakeOpenAIServer
        from tests.support.replay_server import ReplayModel

        project = project or tmp / "p"
        env = {"UKR_INDEXING__METHODOLOGIES": json.dumps(methodologies)} if methodologies \
            else {}  # fmt: skip
        with FakeOpenAIServer(reply=ReplayModel(data / OPENIE)) as server:
            built = run_index(tmp / "musique" / "corpus", project, server, **env)
        print(f"== index built in {built['wall_s']} s")
    return project, tmp / "musique" / "dataset.jsonl"


async def measure(project: Path, dataset: Path, strategies: list[str],
                  overrides: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    items = load_dataset(dataset)
    config = UkrConfig()
    fields = config.query.model_dump()
    for key, value in overrides.items():  # dotted keys reach into sections
        *path, last = key.split(".")
        section = fields
        for part in path:
            section = section[part]
        section[last] = value
    query = QueryConfig.model_validate(fields)
    out: dict[str, Any] = {}
    async with build_app(config, project) as app:
        chain = RAGChain(app.index(), embedder=MemoEmbedder(app.embedder), chat_model=None,
                         budget_tokenizer=app.budget_tokenizer, config=query)  # fmt: skip
        for name in strategies:
            print(f"  running {name} ...", file=sys.stderr, flush=True)
            out[name] = await measure_strategy(chain, items, name)
            if name in REPORT_STRATEGIES:
                out[name]["reports"] = await report_coverage(chain, app.index().graph, items,
                                                             name)  # fmt: skip
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
    covered = {name: r["reports"] for name, r in rows.items() if "reports" in r}
    if covered:
        print(f"  {'reports':<8} {'own':>6} {'queries':>8} {'related':>8} {'per q':>6}")
        for name, c in covered.items():
            print(f"  {name:<8} {c['own_reports']:.3f}  {c['own_report_queries']:>7.3f}  "
                  f"{c['related_reports']:>7.3f}  {c['reports_in_context']:>5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=None,
                        help="an index built by this script (built there first when the "
                        "folder holds none, kept for later runs)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--set", action="append", default=[],
                        help="query override as JSON key=value, e.g. --set top_k=10 or "
                        "--set local_search.report_selection='\"similarity\"'")
    args = parser.parse_args()
    overrides = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    with tempfile.TemporaryDirectory() as tmp_name:
        project, dataset = musique_index(args.data, args.project, Path(tmp_name))
        rows = asyncio.run(measure(project, dataset, args.strategies.split(","), overrides))
    print("== MuSiQue, 100 questions, no LLM at query time (replay-built graph index)")
    report(rows)
    if args.json:
        args.json.write_text(json.dumps({k: {m: v for m, v in r.items() if m != "per_q"}
                                         for k, r in rows.items()}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
