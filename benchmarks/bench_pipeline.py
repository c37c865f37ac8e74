"""The retrieval pipeline's presets on the replay-built MuSiQue graph index, and its overhead.

1. **Presets against strategies.** On the index ``benchmarks/bench_strategies.py`` uses
   (MuSiQue's 1,890 passages, GPT-3.5's recorded extraction served by the replay model,
   methodologies ``graphrag`` and ``lightrag``), each pipeline of ``--pipelines`` (the presets
   ``minimal``, ``no_rerank``, ``standard`` of ``retrieval/pipeline_presets.py``, or a YAML
   pipeline definition file) and each strategy of ``--strategies`` (``naive``, ``ppr``) answer
   the 100 questions without an LLM. Per arm: recall@5 and @10 of the supporting passages
   (pipeline: among its results, in rank order, one entry per document as the evaluation
   runner counts a context's passages; strategy: among the passages of the packed context,
   as ``bench_strategies`` measures), and latency p50/p95 per query with query embeddings
   memoised: each arm runs twice through `MemoEmbedder` and the second run is timed
   (pipeline: the wall time of ``Pipeline.execute``; strategy: the retrieval steps of
   ``evaluate``). The paired bootstrap interval of each arm's recall minus ``naive``'s says
   whether a difference is more than noise. For a pipeline also: each stage's median
   duration, the candidates the scorer ranks (median), and the machinery's own time per
   query (wall time minus the stages' durations: the scorer, the sort, the bookkeeping).
   ``standard`` needs a reranker: ``--rerank-model DIR`` (a local cross-encoder directory,
   ``query.rerank.kind: cross_encoder``); without one the row says why it was not measured.
2. **Machinery overhead.** Pipelines of N = 1, 5, 10 stages that do no work (each returns
   its input; the first hands out 50 fixed candidates with four signals) and the
   `WeightedScorer` of ``no_rerank``: microseconds per query, the median of many runs; and
   the scorer alone over the 50 candidates.

Usage:  python benchmarks/bench_pipeline.py [--project DIR] [--data DIR] [--json OUT]
            [--pipelines minimal,no_rerank,standard,FILE.yaml] [--strategies naive,ppr]
            [--rerank-model DIR] [--overhead-runs N] [--skip-overhead] [--overhead-only]
        (without --project, or with a folder that holds no index yet, the index is built
        first, about 5 minutes on 2 cores; --project keeps it there for the next run)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_graph_index import DEFAULT_DATA  # noqa: E402
from benchmarks.bench_strategies import (  # noqa: E402
    MemoEmbedder,
    bootstrap,
    measure_strategy,
    musique_index,
)

from unified_kg_rag import RAGChain, build_app, load_dataset  # noqa: E402
from unified_kg_rag.bootstrap import App  # noqa: E402
from unified_kg_rag.config.models import UkrConfig  # noqa: E402
from unified_kg_rag.config.search import RerankConfig  # noqa: E402
from unified_kg_rag.domain.index.meta import (  # noqa: E402
    INDEX_NAMESPACE,
    METHODOLOGIES_KEY,
    parse_methodologies,
)
from unified_kg_rag.domain.ranking.signals import WeightedScorer  # noqa: E402
from unified_kg_rag.evaluation.dataset import EvalItem  # noqa: E402
from unified_kg_rag.evaluation.metrics import percentile, recall_at_k  # noqa: E402
from unified_kg_rag.evaluation.scoring import document_names  # noqa: E402
from unified_kg_rag.ingestion.centrality import ensure_entity_pagerank  # noqa: E402
from unified_kg_rag.retrieval.pipeline import (  # noqa: E402
    Candidate,
    NoCandidatesError,
    Pipeline,
    PipelineResult,
    PipelineRun,
    StageInput,
    StageOutput,
)
from unified_kg_rag.retrieval.pipeline_presets import (  # noqa: E402
    PRESETS,
    PipelineComponents,
    pipeline_from_spec,
    preset_pipeline,
)
from unified_kg_rag.util.errors import ConfigurationError  # noqa: E402

PIPELINES = ["minimal", "no_rerank", "standard"]
STRATEGIES = ["naive", "ppr"]
KS = (5, 10)
BASELINE = "naive"


# ----------------------------------------------------------------------------- recall


def result_documents(results: Sequence[PipelineResult]) -> list[set[str]]:
    """Return the distinct documents of a run's text-unit results, in rank order.

    Each document is the set of names a supporting passage may use for it (path, stem,
    title, id: `evaluation.scoring.document_names`, from the candidate's hydrated metadata);
    a second text unit of a document already listed is skipped, as the evaluation runner
    counts a context's passages. Results that are not text units are left out.
    """
    docs: list[set[str]] = []
    seen: set[str] = set()
    for result in results:
        candidate = result.candidate
        if candidate.kind != "text_unit":
            continue
        meta = candidate.metadata
        path, title, doc_id = (v if isinstance(v, str) else None
                               for v in (meta.get("path"), meta.get("title"),
                                         meta.get("document_id")))  # fmt: skip
        key = doc_id or candidate.id
        if key in seen:
            continue
        seen.add(key)
        docs.append(document_names(path, title, key))
    return docs


def load_pipeline(name: str, components: PipelineComponents) -> tuple[str, Pipeline]:
    """Return ``(label, pipeline)`` for a preset name or a YAML pipeline definition file.

    A name ending in ``.yaml``/``.yml`` is read as a definition (the shape in
    ``retrieval/pipeline_presets.py``); its label is the file's stem.

    Raises:
        ConfigurationError: an unknown preset, an unreadable or malformed file (naming it),
            or a pipeline needing a component this index or app lacks (``standard``: a
            reranker).
    """
    if name in PRESETS or not name.endswith((".yaml", ".yml")):
        return name, preset_pipeline(name, components)
    path = Path(name)
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"cannot read pipeline file {path}: {exc}") from None
    if not isinstance(spec, dict):
        raise ConfigurationError(f"pipeline file {path} does not hold a mapping")
    return path.stem, pipeline_from_spec(spec, components)


async def measure_pipeline(
    pipeline: Pipeline, items: Sequence[EvalItem], k: int = max(KS)
) -> dict[str, Any]:
    """Run ``pipeline`` over ``items`` twice (the first fills the embedding memo), time the second.

    Returns:
        ``recall@5``/``recall@10`` (means over the questions with supporting passages),
        ``per_q`` (k → each such question's recall, in order), ``retrieval_p50_ms`` /
        ``retrieval_p95_ms`` (wall time of ``execute``), ``stage_p50_ms`` (stage name →
        median duration), ``scored_p50`` (median candidates the scorer ranks),
        ``machinery_p50_us`` (median wall time minus the stages' durations, µs) and
        ``no_candidates`` (questions the pipeline found nothing for: recall 0).

    Raises:
        PipelineError: a stage failed (other than leaving no candidate).
    """
    for item in items:  # warm-up: embeds every question once
        await _results(pipeline, item.question, k)
    per_q: dict[int, list[float]] = {kk: [] for kk in KS}
    wall_ms: list[float] = []
    machinery_us: list[float] = []
    scored: list[int] = []
    stage_ms: dict[str, list[float]] = {}
    empty = 0
    for item in items:
        started = time.perf_counter()
        run = await _results(pipeline, item.question, k)
        elapsed = time.perf_counter() - started
        wall_ms.append(elapsed * 1000)
        if run is None:
            empty += 1
            results: list[PipelineResult] = []
        else:
            results = run.results
            machinery_us.append((elapsed - sum(t.duration_s for t in run.stages)) * 1e6)
            scored.append(run.stages[-1].candidates_out)
            for timing in run.stages:
                stage_ms.setdefault(timing.name, []).append(timing.duration_s * 1000)
        if item.supporting:
            docs = result_documents(results)
            for kk in KS:
                per_q[kk].append(recall_at_k(docs, item.supporting, kk))
    row: dict[str, Any] = {f"recall@{kk}": _mean(per_q[kk]) for kk in KS}
    row.update(
        retrieval_p50_ms=round(percentile(wall_ms, 50), 2),
        retrieval_p95_ms=round(percentile(wall_ms, 95), 2),
        stage_p50_ms={n: round(statistics.median(v), 2) for n, v in stage_ms.items()},
        scored_p50=statistics.median(scored) if scored else 0,
        machinery_p50_us=round(statistics.median(machinery_us), 1) if machinery_us else 0.0,
        no_candidates=empty,
        per_q=per_q,
    )
    return row


async def _results(pipeline: Pipeline, query: str, k: int) -> PipelineRun | None:
    """The run, or None when the pipeline left no candidate (counted as recall 0)."""
    try:
        return await pipeline.execute(query, k)
    except NoCandidatesError:
        return None


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


async def measure_arms(
    app: App, items: list[EvalItem], pipelines: Sequence[str], strategies: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """Measure every pipeline and strategy on ``app``'s default index over ``items``.

    Pipelines are built from the app's stores, a `MemoEmbedder` over its embedder and its
    reranker (None unless ``query.rerank`` names one); a pipeline that cannot be built here
    gets a row ``{"unmeasurable": reason}``. Strategies run through a `RAGChain` with the
    app's query configuration and the same memo. Each arm with per-question recall gains
    ``vs_naive@5``/``vs_naive@10``: ``[mean, low, high]`` of the paired bootstrap (95%) of its
    recall minus ``naive``'s, when ``naive`` is among the strategies.
    """
    memo = MemoEmbedder(app.embedder)
    stores = app.index()
    await ensure_entity_pagerank(stores)  # an index built before PageRank was stored
    components = replace(await app.pipeline_components(), embedder=memo)
    chain = RAGChain(stores, embedder=memo, chat_model=None,
                     budget_tokenizer=app.budget_tokenizer, config=app.config.query)  # fmt: skip
    rows: dict[str, dict[str, Any]] = {}
    for name in strategies:
        print(f"  running strategy {name} ...", file=sys.stderr, flush=True)
        rows[name] = await measure_strategy(chain, items, name)
    for name in pipelines:
        try:
            label, pipeline = load_pipeline(name, components)
        except ConfigurationError as exc:
            rows[Path(name).stem] = {"unmeasurable": str(exc)}
            continue
        print(f"  running pipeline {label} ...", file=sys.stderr, flush=True)
        rows[label] = await measure_pipeline(pipeline, items)
    base = rows.get(BASELINE)
    for name, row in rows.items():
        if base is None or name == BASELINE or "per_q" not in row:
            continue
        for kk in KS:
            diff = [a - b for a, b in zip(row["per_q"][kk], base["per_q"][kk], strict=True)]
            row[f"vs_naive@{kk}"] = list(bootstrap(diff)) if diff else None
    return rows


# ----------------------------------------------------------------------------- overhead


@dataclass
class PassStage:
    """A stage that does no work: returns its input (``seed``: handed out instead)."""

    name: str
    seed: list[Candidate] | None = None

    async def execute(self, stage_input: StageInput) -> StageOutput:
        """Return the candidates received (or the seed) and the context, untouched."""
        out = self.seed if self.seed is not None else stage_input.candidates
        return StageOutput(out, stage_input.context)


OVERHEAD_WEIGHTS = dict(PRESETS["no_rerank"]["scorer"]["weights"])
"""The scorer of the overhead runs: ``no_rerank``'s weights (four signals)."""


def fixed_candidates(n: int) -> list[Candidate]:
    """Return ``n`` candidates with the four signals of ``no_rerank``, values spread in 0..1."""
    return [Candidate(f"tu-{i:03d}", text=f"passage {i}",
                      signals={s: ((i * 7 + j * 13) % 50) / 49
                               for j, s in enumerate(OVERHEAD_WEIGHTS)})
            for i in range(n)]  # fmt: skip


async def machinery_overhead(
    stage_counts: Sequence[int] = (1, 5, 10), candidates: int = 50, runs: int = 2000,
    rounds: int = 20,
) -> dict[str, Any]:
    """Return the pipeline machinery's own cost per query, µs (median of ``runs`` runs each).

    The runs are interleaved: ``rounds`` rounds, each timing ``runs / rounds`` calls of every
    pipeline and of the scorer in turn, so a burst of load from elsewhere falls on all of
    them alike rather than on whichever ran at the time.

    Returns:
        ``stages`` (N → median µs of ``execute(k=10)`` through N no-work stages and the
        `WeightedScorer` over ``candidates`` candidates), ``per_stage_us`` (the slope between
        the smallest and largest N), ``scorer_us`` (the scorer alone over the candidates,
        no pipeline) and the settings.
    """
    seed = fixed_candidates(candidates)
    scorer = WeightedScorer(OVERHEAD_WEIGHTS)
    pipelines: dict[int, Pipeline] = {}
    for n in stage_counts:
        stages = [PassStage("s0", seed), *(PassStage(f"s{i}") for i in range(1, n))]
        pipelines[n] = Pipeline(stages, scorer)
        run = await pipelines[n].execute("overhead", 10)
        if len(run.results) != min(10, candidates) or len(run.stages) != n:
            raise RuntimeError(f"the {n}-stage overhead pipeline did not pass its candidates")

    async def score_all() -> None:
        for c in seed:
            scorer.score(c.signals)

    calls: dict[Any, Callable[[], Awaitable[Any]]] = {
        n: (lambda p=p: p.execute("overhead", 10)) for n, p in pipelines.items()}
    calls["scorer"] = score_all
    times: dict[Any, list[int]] = {key: [] for key in calls}
    per_round = max(1, runs // rounds)
    for _ in range(rounds):
        for key, call in calls.items():
            for _ in range(per_round):
                started = time.perf_counter_ns()
                await call()
                times[key].append(time.perf_counter_ns() - started)
    median_us = {key: round(statistics.median(t) / 1000, 2) for key, t in times.items()}
    out: dict[str, Any] = {"candidates": candidates, "runs": per_round * rounds,
                           "stages": {n: median_us[n] for n in stage_counts},
                           "scorer_us": median_us["scorer"]}  # fmt: skip
    low, high = min(stage_counts), max(stage_counts)
    if high > low:
        out["per_stage_us"] = round((median_us[high] - median_us[low]) / (high - low), 2)
    return out


# ----------------------------------------------------------------------------- report


def report(rows: dict[str, dict[str, Any]]) -> None:
    """Print one line per arm, then each pipeline's stages."""
    w = max([10, *(len(name) for name in rows)])
    print(f"  {'arm':<{w}} {'@5':>6} {'@10':>6} {'p50 ms':>7} {'p95 ms':>7}   "
          "vs naive @5 / @10 (95% CI)")  # fmt: skip
    for name, r in rows.items():
        if "unmeasurable" in r:
            print(f"  {name:<{w}} not measured: {r['unmeasurable']}")
            continue
        line = (f"  {name:<{w}} {r['recall@5']:.3f}  {r['recall@10']:.3f}  "
                f"{r['retrieval_p50_ms']:>6.1f}  {r['retrieval_p95_ms']:>6.1f}")  # fmt: skip
        if r.get("vs_naive@5") is not None:
            cis = [r[f"vs_naive@{k}"] for k in KS]
            line += "   " + " / ".join(f"{m:+.3f} ({lo:+.3f}..{hi:+.3f})" for m, lo, hi in cis)
        print(line)
    for name, r in rows.items():
        if "stage_p50_ms" in r:
            stages = ", ".join(f"{s} {ms:.1f}" for s, ms in r["stage_p50_ms"].items())
            print(f"  {name:<{w}} stages p50 ms: {stages}; scored {r['scored_p50']:.0f} "
                  f"candidates; machinery {r['machinery_p50_us']:.0f} µs; "
                  f"no candidates {r['no_candidates']}")  # fmt: skip


def report_overhead(o: dict[str, Any]) -> None:
    """Print the machinery's cost per query."""
    print(f"== pipeline machinery, {o['candidates']} candidates, k=10, median of {o['runs']} runs")
    for n, us in o["stages"].items():
        print(f"  {n:>2} no-work stage(s) + WeightedScorer: {us:8.1f} µs per query")
    if "per_stage_us" in o:
        print(f"  per extra stage: {o['per_stage_us']:.2f} µs")
    print(f"  WeightedScorer alone over the candidates: {o['scorer_us']:.1f} µs")


async def run_bench(project: Path, dataset: Path, args: argparse.Namespace) -> dict[str, Any]:
    config = UkrConfig()
    if args.rerank_model is not None:
        config = config.model_copy(update={"query": config.query.model_copy(update={
            "rerank": RerankConfig(kind="cross_encoder", model_path=str(args.rerank_model))})})
    items = load_dataset(dataset)
    async with build_app(config, project) as app:
        return await measure_arms(app, items, _names(args.pipelines), _names(args.strategies))


GRAPH_METHODOLOGIES = ["graphrag", "hipporag", "lightrag"]
"""The index's methodologies: ``bench_strategies``' two and ``hipporag``, which ``ppr`` needs
(it builds nothing ``lightrag`` does not: an index lacking it is re-shaped, no model call)."""


async def held_methodologies(project: Path) -> tuple[str, ...]:
    """Return the methodologies the project's default index holds."""
    async with build_app(UkrConfig(), project) as app:
        raw = await app.index().records.get(INDEX_NAMESPACE, METHODOLOGIES_KEY)
    return parse_methodologies(raw)


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=None,
                        help="an index built by bench_strategies/this script (built there "
                        "first when the folder holds none, kept for later runs)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--pipelines", default=",".join(PIPELINES),
                        help="presets and YAML pipeline files, comma-separated")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--rerank-model", type=Path, default=None,
                        help="a local cross-encoder directory for `standard`'s rerank stage")
    parser.add_argument("--overhead-runs", type=int, default=2000)
    parser.add_argument("--skip-overhead", action="store_true")
    parser.add_argument("--overhead-only", action="store_true")
    args = parser.parse_args()
    out: dict[str, Any] = {}
    if not args.overhead_only:
        with tempfile.TemporaryDirectory() as tmp_name:
            again = args.project is not None and (args.project / ".ukr").exists() and not \
                set(GRAPH_METHODOLOGIES) <= set(asyncio.run(held_methodologies(args.project)))
            project, dataset = musique_index(args.data, args.project, Path(tmp_name),
                                             methodologies=GRAPH_METHODOLOGIES, again=again)
            rows = asyncio.run(run_bench(project, dataset, args))
        print("== MuSiQue, 100 questions, no LLM at query time (replay-built graph index)")
        report(rows)
        out["arms"] = {k: {m: v for m, v in r.items() if m != "per_q"} for k, r in rows.items()}
    if not args.skip_overhead:
        overhead = asyncio.run(machinery_overhead(runs=args.overhead_runs))
        report_overhead(overhead)
        out["overhead"] = overhead
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
