"""Retrieval without an LLM: the `lazy` concept graph and `ppr` on MuSiQue, with the sweep.

HippoRAG's 100 MuSiQue questions over their 1,890 passages, the bundled MiniLM, no LLM.

1. Indexing time: ``ukr index`` with text units only (``indexing.methodologies: []``) and
   with the default `lazy` concept graph (target: lazy within 1.3x of naive).
2. Recall@2/5/10 for dense (``naive --mode vector``), hybrid (``naive``), ``ppr`` over the
   concept graph and ``lazy``, with a paired bootstrap (10,000 resamples) of ``ppr`` minus
   dense at @5 over the 100 questions.
3. The sweep the defaults were chosen from: query settings one at a time around the
   defaults (damping, seed sharpness, seed count, concept weight, fusion with the passage
   hits) and index settings (keyphrases per unit, document-frequency window, containment
   links), each graph variant rebuilt from keyphrases extracted once.
4. ``ppr`` latency p50/p95 (retrieval only) at 1,890 and, with ``--2wiki``, 6,119 passages.

5. ``--grid``: a joint grid over the settings the one-at-a-time sweep moved most.
7. ``--replay``: ``ppr`` over the entity graph built from GPT-3.5's recorded extraction
   (the replay server of ``bench_graph_index.py``, methodology ``hipporag``).
6. ``--novels``: a second question set built from ../shared/data/graphrag_bench (the
   GraphRAG-Bench novels; "Fact Retrieval" and "Complex Reasoning" questions whose answer
   has at most four words): answer-in-context of dense vs ``ppr`` at 10 text units, with a
   paired bootstrap; it checks that defaults chosen on MuSiQue hold on other text.

Usage:  python benchmarks/bench_lazy.py [--data DIR] [--json OUT] [--no-sweep] [--grid]
        [--novels] [--2wiki] [--workdir DIR] (keeps the indexes there between runs)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_index_query import write_corpus  # noqa: E402

from unified_kg_rag import RAGChain, build_app, evaluate, load_dataset  # noqa: E402
from unified_kg_rag.config.models import UkrConfig  # noqa: E402
from unified_kg_rag.domain.concepts.graph import build_concept_graph, keyphrases  # noqa: E402
from unified_kg_rag.domain.index.meta import (  # noqa: E402
    CONCEPT_GRAPH_KEY,
    INDEX_NAMESPACE,
    LAZY_BUILD_KEY,
    LAZY_NAMESPACE,
    encode_concept_graph,
)
from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402
from unified_kg_rag.ingestion.units import load_units, processed_unit_paths  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "multihop" / "hipporag"


def index(corpus: Path, project: Path, **env: str) -> float:
    if (project / ".ukr").exists():
        return float("nan")  # kept from an earlier --workdir run
    clean = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
    clean.update(env)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "unified_kg_rag.cli", "index", str(corpus), "-C", str(project),
         "--json"], env=clean, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"ukr index failed: {proc.stderr[-2000:]}")
    return time.perf_counter() - started


def bootstrap(diff: list[float], n: int = 10_000, seed: int = 7) -> tuple[float, float, float]:
    """Mean of paired differences and its 95% percentile interval."""
    rng = np.random.default_rng(seed)
    arr = np.asarray(diff)
    means = arr[rng.integers(0, len(arr), size=(n, len(arr)))].mean(axis=1)
    return float(arr.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


class Harness:
    """Evaluates strategies in-process over one indexed project."""

    def __init__(self, project: Path, dataset: Path) -> None:
        self.project = project
        self.items = load_dataset(dataset)
        self.config = UkrConfig()
        self.app = build_app(self.config, project)
        self.stores = self.app.index()

    async def run(self, strategy: str, *, mode: str | None = None,
                  **ppr: Any) -> dict[str, Any]:  # fmt: skip
        query = self.config.query
        if ppr:
            query = query.model_copy(update={"ppr": query.ppr.model_copy(update=ppr)})
        chain = RAGChain(self.stores, embedder=self.app.embedder, chat_model=None,
                         budget_tokenizer=self.app.budget_tokenizer, config=query)  # fmt: skip
        report = await evaluate(chain, self.items, retrieval_only=True, strategy=strategy,
                                search_mode=mode)  # fmt: skip
        per_q = [q.recall for q in report.questions]
        self.in_context = [1.0 if q.answer_in_context else 0.0 for q in report.questions]
        lat = [q.latency_ms for q in report.questions]
        return {
            "recall@2": report.recall_at_2,
            "recall@5": report.recall_at_5,
            "recall@10": report.recall_at_10,
            "per_q5": [r.get("@5", 0.0) for r in per_q],
            "p50_ms": statistics.median(lat),
            "p95_ms": float(np.percentile(lat, 95)),
        }

    async def restore_graph(self) -> None:
        """Put back the graph the index was built with (after a sweep swapped variants)."""
        if getattr(self, "_saved", None) is not None:
            raw, digest = self._saved
            await self.stores.records.put(LAZY_NAMESPACE, CONCEPT_GRAPH_KEY, raw)
            await self.stores.records.put(INDEX_NAMESPACE, LAZY_BUILD_KEY, digest)

    async def swap_graph(self, graph: Any, tag: str) -> None:
        """Store a concept-graph variant as the index's graph (a new digest: reloaded)."""
        if getattr(self, "_saved", None) is None:
            self._saved = (
                await self.stores.records.get(LAZY_NAMESPACE, CONCEPT_GRAPH_KEY),
                await self.stores.records.get(INDEX_NAMESPACE, LAZY_BUILD_KEY),
            )
        await self.stores.records.put(LAZY_NAMESPACE, CONCEPT_GRAPH_KEY,
                                      encode_concept_graph(graph))  # fmt: skip
        await self.stores.records.put(INDEX_NAMESPACE, LAZY_BUILD_KEY, f"sweep-{tag}")


def _row(name: str, r: dict[str, Any]) -> str:
    return (f"  {name:<44} {r['recall@2']:.3f} {r['recall@5']:.3f} {r['recall@10']:.3f}"
            f"   p50 {r['p50_ms']:.0f} ms")  # fmt: skip


async def main_async(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    prepare_hipporag(args.data / "musique_train.json", args.data / "musique_train_corpus.json",
                     tmp / "musique", force=True)  # fmt: skip
    corpus, dataset = tmp / "musique" / "corpus", tmp / "musique" / "dataset.jsonl"
    t_naive = index(corpus, tmp / "naive", UKR_INDEXING__METHODOLOGIES="[]")
    t_lazy = index(corpus, tmp / "lazy")
    out["index_s"] = {"naive": round(t_naive, 1), "lazy": round(t_lazy, 1),
                      "ratio": round(t_lazy / t_naive, 2)}  # fmt: skip
    print(f"== indexing 1,890 passages: naive {t_naive:.1f} s, lazy {t_lazy:.1f} s "
          f"(x{t_lazy / t_naive:.2f})")  # fmt: skip

    h = Harness(tmp / "lazy", dataset)
    rows: dict[str, dict[str, Any]] = {}
    rows["dense (naive --mode vector)"] = await h.run("naive", mode="vector")
    rows["hybrid (naive)"] = await h.run("naive")
    rows["ppr over the concept graph"] = await h.run("ppr")
    rows["lazy"] = await h.run("lazy")
    print("== MuSiQue, 100 questions, no LLM          recall@2 @5    @10")
    for name, r in rows.items():
        print(_row(name, r))
    dense = rows["dense (naive --mode vector)"]["per_q5"]
    for name in ("ppr over the concept graph", "lazy", "hybrid (naive)"):
        mean, lo, hi = bootstrap([a - b for a, b in zip(rows[name]["per_q5"], dense,
                                                         strict=True)])  # fmt: skip
        print(f"  {name} - dense @5: {mean:+.3f} (95% CI {lo:+.3f} to {hi:+.3f})")
        rows[name]["vs_dense_at5"] = [mean, lo, hi]
    out["recall"] = {k: {m: v for m, v in r.items() if m != "per_q5"} for k, r in rows.items()}

    if not args.no_sweep:
        out["sweep"] = await sweep(h)
    if args.grid:
        out["grid"] = await grid(h)
    await h.restore_graph()
    await h.app.aclose()
    if args.novels:
        out["novels"] = await novels(tmp)
    if args.replay:
        out["replay"] = await replay(args, tmp, dataset, rows["dense (naive --mode vector)"])

    if args.twowiki:
        passages = json.loads((args.data / "2wikimultihopqa_corpus.json").read_text())
        write_corpus(passages, tmp / "2wiki")
        t = index(tmp / "2wiki", tmp / "2wiki_p")
        items = load_dataset(dataset)
        h2 = Harness(tmp / "2wiki_p", dataset)
        chain = RAGChain(h2.stores, embedder=h2.app.embedder, chat_model=None,
                         budget_tokenizer=h2.app.budget_tokenizer, config=h2.config.query)
        lat = []
        for item in items:
            started = time.perf_counter()
            await chain.retrieve(item.question, strategy="ppr")
            lat.append((time.perf_counter() - started) * 1000)
        await h2.app.aclose()
        out["2wiki"] = {"index_s": round(t, 1), "ppr_p50_ms": statistics.median(lat),
                        "ppr_p95_ms": float(np.percentile(lat, 95))}  # fmt: skip
        print(f"== 2Wiki 6,119 passages: lazy index {t:.1f} s; ppr p50 "
              f"{out['2wiki']['ppr_p50_ms']:.0f} ms, p95 {out['2wiki']['ppr_p95_ms']:.0f} ms")
    return out


async def sweep(h: Harness) -> dict[str, Any]:
    results: dict[str, Any] = {}
    print("== sweep: query settings (concept graph, default index settings)")
    grid: list[tuple[str, dict[str, Any]]] = [
        (f"damping {d}", {"damping": d}) for d in (0.3, 0.5, 0.7, 0.85)
    ] + [
        (f"sharpness {s}", {"passage_seed_sharpness": s}) for s in (0.0, 5.0, 10.0, 20.0, 40.0)
    ] + [
        (f"passage seeds {k}", {"passage_seed_top_k": k}) for k in (5, 10, 20, 30, 50)
    ] + [
        (f"concept weight {w}", {"concept_weight": w}) for w in (0.0, 0.1, 0.3, 1.0, 3.0)
    ] + [
        (f"fusion with passage hits {w}", {"fusion_weight": w}) for w in (0.0, 0.5, 1.0)
    ]
    for name, settings in grid:
        r = await h.run("ppr", **settings)
        results[name] = {k: v for k, v in r.items() if k != "per_q5"}
        print(_row(name, r))

    print("== sweep: index settings (keyphrases extracted once, graph rebuilt per variant)")
    units = await load_units(h.stores, await processed_unit_paths(h.stores))
    started = time.perf_counter()
    phrases = [keyphrases(u.text, top=30) for u in units]
    print(f"  (YAKE for {len(units)} units: {time.perf_counter() - started:.1f} s)")
    triples = [(u.id, u.text, u.title) for u in units]
    variants: list[tuple[str, dict[str, Any]]] = [
        (f"keyphrases per unit {k}", {"keyphrases_per_unit": k}) for k in (5, 10, 15, 30)
    ] + [
        (f"max_df {m}", {"max_df": m}) for m in (10, 30, 100, 0.1)
    ] + [
        (f"min_df {m}", {"min_df": m}) for m in (1, 2, 3)
    ] + [
        ("no containment links", {"link_by_containment": False}),
        ("no titles", {"include_titles": False}),
    ]
    for i, (name, settings) in enumerate(variants):
        k = settings.get("keyphrases_per_unit", 15)
        params = {"max_df": 30, "min_df": 2, "link_by_containment": True,
                  "include_titles": True, **settings}  # fmt: skip
        params.pop("keyphrases_per_unit", None)
        graph = build_concept_graph(triples, keyphrases_per_unit=k,
                                    unit_keyphrases=[p[:k] for p in phrases], **params)
        await h.swap_graph(graph, str(i))
        r = await h.run("ppr")
        results[name] = {k2: v for k2, v in r.items() if k2 != "per_q5"}
        results[name]["concepts"] = len(graph.concepts)
        print(_row(f"{name} ({len(graph.concepts)} concepts)", r))
    return results


async def grid(h: Harness) -> dict[str, Any]:
    """Joint grid over keyphrases per unit, damping, seed sharpness and concept weight."""
    print("== grid (recall@2 @5 @10)")
    units = await load_units(h.stores, await processed_unit_paths(h.stores))
    phrases = [keyphrases(u.text, top=15) for u in units]
    triples = [(u.id, u.text, u.title) for u in units]
    results: dict[str, Any] = {}
    for k in (5, 10, 15):
        graph = build_concept_graph(triples, keyphrases_per_unit=k,
                                    unit_keyphrases=[p[:k] for p in phrases])
        await h.swap_graph(graph, f"grid-{k}")
        for damping in (0.5, 0.7, 0.85):
            for sharp in (20.0, 30.0):
                for weight in (0.3, 1.0):
                    r = await h.run("ppr", damping=damping, passage_seed_sharpness=sharp,
                                    concept_weight=weight)  # fmt: skip
                    name = f"k{k} d{damping} s{sharp:g} w{weight:g}"
                    results[name] = {m: v for m, v in r.items() if m != "per_q5"}
                    print(_row(name, r))
    return results


async def replay(args: argparse.Namespace, tmp: Path, dataset: Path,
                 dense: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """``ppr`` over the graph built from GPT-3.5's recorded extraction (HippoRAG's own)."""
    from tests.support.openai_server import FakeOpenAIServer
    from tests.support.replay_server import ReplayModel

    openie = args.data / "openie_musique_train_results_ner_gpt-3.5-turbo-1106_1890.json"
    with FakeOpenAIServer(reply=ReplayModel(openie)) as server:
        t = index(tmp / "musique" / "corpus", tmp / "replay_p",
                  UKR_LLM__KIND="openai", UKR_LLM__OPENAI__BASE_URL=server.base_url,
                  UKR_LLM__OPENAI__API_KEY="replay", UKR_LLM__MAX_CONCURRENCY="16",
                  UKR_GRAPH__UNIT_CONCURRENCY="16",
                  UKR_INDEXING__METHODOLOGIES='["hipporag"]')  # fmt: skip
    h = Harness(tmp / "replay_p", dataset)
    results: dict[str, Any] = {}
    print(f"== ppr over the replayed GPT-3.5 entity graph (index {t:.0f} s)")
    grid: list[tuple[str, dict[str, Any]]] = [
        ("defaults", {"graph": "entities"}),
        ("HippoRAG 2's seeding (min-max passages, weight 0.05)",
         {"graph": "entities", "entity_passage_sharpness": 0.0, "passage_node_weight": 0.05}),
        ("fusion with passage hits 1.0", {"graph": "entities", "fusion_weight": 1.0}),
        ("passage weight 0.5", {"graph": "entities", "passage_node_weight": 0.5}),
        ("passage weight 1.0", {"graph": "entities", "passage_node_weight": 1.0}),
        ("sharpness 30, passage weight 1.0",
         {"graph": "entities", "entity_passage_sharpness": 30.0, "passage_node_weight": 1.0}),
        ("facts 10, link_top_k 10", {"graph": "entities", "fact_top_k": 10, "link_top_k": 10}),
        ("max_entities 500", {"graph": "entities", "max_entities": 500}),
        ("damping 0.7", {"graph": "entities", "damping": 0.7}),
    ]
    for name, settings in grid:
        r = await h.run("ppr", **settings)
        mean, lo, hi = bootstrap([a - b for a, b in zip(r["per_q5"], dense["per_q5"],
                                                         strict=True)])  # fmt: skip
        results[name] = {**{m: v for m, v in r.items() if m != "per_q5"},
                         "vs_dense_at5": [mean, lo, hi]}  # fmt: skip
        print(_row(name, r) + f"   vs dense @5 {mean:+.3f} ({lo:+.3f} to {hi:+.3f})")
    await h.app.aclose()
    return results


async def novels(tmp: Path) -> dict[str, Any]:
    """Answer-in-context of dense vs ppr on GraphRAG-Bench novel questions (held out)."""
    bench = ROOT.parent / "shared" / "data" / "graphrag_bench"
    corpus = tmp / "novels"
    corpus.mkdir(exist_ok=True)
    for novel in json.loads((bench / "novel.json").read_text()):
        (corpus / f"{novel['corpus_name']}.txt").write_text(novel["context"], encoding="utf-8")
    questions = [
        q for q in json.loads((bench / "novel_questions.json").read_text())
        if q["question_type"] in ("Fact Retrieval", "Complex Reasoning")
        and len(q["answer"].split()) <= 4
    ]
    dataset = tmp / "novels.jsonl"
    dataset.write_text("".join(
        json.dumps({"id": q["id"], "question": q["question"], "answers": [q["answer"]],
                    "supporting": []}) + "\n" for q in questions
    ))  # fmt: skip
    t = index(corpus, tmp / "novels_p")
    h = Harness(tmp / "novels_p", dataset)
    await h.run("naive", mode="vector")
    dense = list(h.in_context)
    await h.run("naive")
    hybrid = list(h.in_context)
    await h.run("ppr")
    ppr = list(h.in_context)
    await h.app.aclose()
    mean, lo, hi = bootstrap([a - b for a, b in zip(ppr, dense, strict=True)])
    print(f"== GraphRAG-Bench novels, {len(questions)} short-answer questions "
          f"(lazy index {t:.0f} s): answer in the 10 retrieved units: dense "
          f"{np.mean(dense):.3f}, hybrid {np.mean(hybrid):.3f}, ppr {np.mean(ppr):.3f}; "
          f"ppr - dense {mean:+.3f} (95% CI {lo:+.3f} to {hi:+.3f})")
    return {"questions": len(questions), "dense": float(np.mean(dense)),
            "hybrid": float(np.mean(hybrid)), "ppr": float(np.mean(ppr)),
            "ppr_vs_dense": [mean, lo, hi]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--no-sweep", action="store_true")
    parser.add_argument("--2wiki", dest="twowiki", action="store_true")
    parser.add_argument("--grid", action="store_true")
    parser.add_argument("--novels", action="store_true")
    parser.add_argument("--replay", action="store_true")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    if args.workdir is not None:
        args.workdir.mkdir(parents=True, exist_ok=True)
        out = asyncio.run(main_async(args, args.workdir))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = asyncio.run(main_async(args, Path(tmp)))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
