"""Issue 20's figures: the `raptor` summary tree and the `tree` strategy, LLM-free.

Runs the user's commands (``ukr eval prepare``, ``ukr index``, ``ukr eval run``) as
subprocesses, over indexes built with ``indexing.methodologies: [lazy, raptor]`` (a
``ukr.yaml`` in each project; summaries are extractive: no LLM is configured), and prints:

- **musique**: HippoRAG's 100 MuSiQue questions over their 1,890 passages (prepared as
  ``bench_eval.py`` does); recall by supporting passage.
- **novels**: GraphRAG-Bench's ten novels with the global questions too: ``--types "Fact
  Retrieval,Complex Reasoning,Contextual Summarize" --located-only``; recall by located
  evidence, and a per-category table (Contextual Summarize are the "global" questions).

Arms ``naive,ppr,tree`` (and ``iterative``, whose base is ``query.iterative.base``, when
the strategy exists). Each set is run once with ``naive`` as the baseline, then re-scored
with ``--from-results`` against ``ppr`` (no retrieval again; a copy of the run whose
manifest names ``ppr``: ``--from-results`` takes no ``--baseline``): every arm's difference from
both, with 95% paired bootstrap intervals. Metrics: recall@2/5/10, MRR, answer-in-context,
context tokens, p50 retrieval latency. On MuSiQue `tree` fills about four times naive's
context, so ``naive,tree`` also run at ``query.top_k`` ``--top-k`` (naive's context near
tree's; `tree`'s passages are ``query.tree.text_top_k``, unchanged). The index report's
``summary_tree`` gives the tree's build time and its summary nodes per level (kept from the
first build in ``WORKDIR/SET-index.json``).

``--delta`` measures summary reuse after a ~1% change of the MuSiQue corpus (10 passages
removed, 9 of 2WikiMultihopQA's added) for each ``--dims`` (``graph.raptor.reduction_dims``):
a copy of the MuSiQue project is rebuilt with those dims, then the changed copy of the
corpus is indexed into it (``parsing.source_scope`` keeps the ids of a moved corpus's
documents); ``summaries_reused`` / ``summaries_written`` of that second run, and `tree`'s
recall on the changed index (the removed passages' questions lose their support: compare the dims
with one another, not with the main table).

Usage:  python benchmarks/bench_tree.py [--workdir DIR] [--sets musique,novels]
        [--arms naive,ppr,tree] [--delta] [--dims 10,32,64] [--json OUT]
        (keeps prepared data and indexes in --workdir between runs)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
HAS_ITERATIVE = (ROOT / "src" / "unified_kg_rag" / "config" / "iterative.py").exists()
ARMS = "naive,ppr,tree" + (",iterative" if HAS_ITERATIVE else "")
SHOWN = ("recall@2", "recall@5", "recall@10", "recall_in_context", "mrr", "answer_in_context",
         "cost/context_tokens")
DELTA_SHOWN = ("recall@5", "recall@10", "recall_in_context", "mrr", "answer_in_context",
               "cost/context_tokens", "cost/retrieval_ms")
CATEGORY_SHOWN = ("recall@5", "recall@10", "mrr")
YAML = "indexing:\n  methodologies: [lazy, raptor]\nparsing:\n  source_scope: {scope}\n"
COMMANDS: list[dict[str, Any]] = []


def ukr(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "unified_kg_rag.cli", *args], env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    COMMANDS.append({"command": "ukr " + " ".join(args), "rc": proc.returncode,
                     "wall_s": round(time.perf_counter() - t0, 1)})  # fmt: skip
    if check and proc.returncode not in (0, 3):
        sys.exit(f"ukr {' '.join(args[:3])} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc


def prepare(work: Path, name: str) -> tuple[Path, Path]:
    """Return (corpus folder, dataset) of a set, preparing it once."""
    out = work / name
    if not (out / "dataset.jsonl").exists():
        if name == "musique":
            hp = DATA / "multihop" / "hipporag"
            ukr("eval", "prepare", "hipporag", str(hp / "musique_train.json"),
                str(hp / "musique_train_corpus.json"), "--out", str(out), "--force")
        else:
            gb = DATA / "graphrag_bench"
            ukr("eval", "prepare", "graphrag-bench", str(gb / "novel.json"),
                str(gb / "novel_questions.json"), "--out", str(out), "--types",
                "Fact Retrieval,Complex Reasoning,Contextual Summarize", "--located-only",
                "--force")  # fmt: skip
    return out / "corpus", out / "dataset.jsonl"


def index(corpus: Path, project: Path, saved: Path | None) -> dict[str, Any]:
    """Index ``corpus`` (lazy + raptor) and return the report; a saved first build wins."""
    if saved is not None and saved.exists():
        return dict(json.loads(saved.read_text()))
    project.mkdir(parents=True, exist_ok=True)
    if not (project / "ukr.yaml").exists():
        (project / "ukr.yaml").write_text(YAML.format(scope=corpus.parent.name))
    t0 = time.perf_counter()
    report = dict(json.loads(ukr("index", str(corpus), "-C", str(project), "--json").stdout))
    report["bench_wall_s"] = round(time.perf_counter() - t0, 1)
    if saved is not None:
        saved.write_text(json.dumps(report, indent=2))
    return report


def tree_line(name: str, report: dict[str, Any]) -> str:
    st = report.get("summary_tree") or {}
    levels = ", ".join(f"L{k}: {v}" for k, v in sorted(st.get("nodes_per_level", {}).items()))
    return (f"== {name}: summary tree (raptor) over {st.get('text_units', 0)} text units: "
            f"{levels}; written {st.get('summaries_written', 0)}, reused "
            f"{st.get('summaries_reused', 0)}, {st.get('seconds', 0):.1f} s "
            f"(whole `ukr index` {report.get('bench_wall_s', float('nan')):.0f} s)")  # fmt: skip


def evaluate(dataset: Path, project: Path, arms: str, run_dir: Path,
             config: Path | None = None) -> tuple[dict[str, Any], float]:  # fmt: skip
    """Run (or resume) the comparison of ``arms``, the first being the baseline."""
    t0 = time.perf_counter()
    extra = ["--config", str(config)] if config is not None else []
    proc = ukr("eval", "run", str(dataset), "-C", str(project), "--strategies", arms,
               "--retrieval-only", "--out", str(run_dir), "--json", "-q", *extra)  # fmt: skip
    return json.loads(proc.stdout), time.perf_counter() - t0


def rescore(project: Path, run_dir: Path, baseline: str) -> dict[str, Any]:
    """Re-score a copy of ``run_dir`` against ``baseline`` (no retrieval again).

    ``--from-results`` re-scores a run "as it ran" and takes no ``--baseline``, so the copy's
    ``manifest.json`` names the other baseline (every arm's rows are in the run).
    """
    copy = run_dir.with_name(f"{run_dir.name}-vs-{baseline}")
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(run_dir, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest.update(baseline=baseline, run_id=copy.name)
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2))
    proc = ukr("eval", "run", "--from-results", str(copy), "-C", str(project), "--json", "-q")
    return dict(json.loads(proc.stdout))


def _cell(metric: str, value: float) -> str:
    return f"{value:.0f}" if metric.startswith("cost/") else f"{value:.3f}"


def show_means(name: str, comp: dict[str, Any], wall: float) -> None:
    n = max(a["questions"] for a in comp["arms"])
    print(f"== {name}: {n} questions, `ukr eval run` wall time {wall:.0f} s")
    short = {"cost/context_tokens": "ctx tokens", "answer_in_context": "ans-in-ctx",
             "recall_in_context": "rec-in-ctx"}
    heads = [short.get(m, m) for m in SHOWN]
    print(f"  {'arm':<12}" + "".join(f"{h:>11}" for h in heads) + f"{'p50 ms':>9}")
    for a in comp["arms"]:
        cells = [("n/a" if (s := a["metrics"].get(m)) is None else _cell(m, s["mean"]))
                 for m in SHOWN]  # fmt: skip
        fail = f"  ({a['failed']} failed: {a['errors'][:1]})" if a["failed"] else ""
        print(f"  {a['arm']:<12}" + "".join(f"{c:>11}" for c in cells)
              + f"{a['cost']['retrieval_ms_p50']:>9.1f}{fail}")  # fmt: skip


def show_deltas(comp: dict[str, Any]) -> None:
    print(f"  difference from {comp['baseline']} (95% paired bootstrap CI):")
    for d in comp["deltas"]:
        if d["metric"] in DELTA_SHOWN:
            mark = {True: "better", False: "worse", None: ""}[d["better"]]
            print(f"    {d['arm']:<12} {d['metric']:<20} {_cell(d['metric'], d['estimate']):>7} "
                  f"({_cell(d['metric'], d['low'])} to {_cell(d['metric'], d['high'])}) {mark}")


def show_categories(comp: dict[str, Any]) -> None:
    if len(comp.get("categories") or {}) < 2:
        return
    base = comp["baseline"]
    print(f"  per category: means, and difference from {base} (95% paired bootstrap CI):")
    for cat, n in sorted(comp["categories"].items()):
        means = comp["category_means"][cat]
        print(f"    {cat} ({n}) means:")
        for arm, row in means.items():
            print(f"      {arm:<12} " + " ".join(
                f"{m}={row[m]:.3f}" for m in CATEGORY_SHOWN if m in row))  # fmt: skip
        for d in comp["by_category"]:
            if d["category"] == cat and d["metric"] in CATEGORY_SHOWN:
                mark = {True: "better", False: "worse", None: ""}[d["better"]]
                print(f"      {d['arm']:<12} {d['metric']:<10} {d['estimate']:+.3f} "
                      f"({d['low']:+.3f} to {d['high']:+.3f}) {mark}")


def context_evidence(run_dir: Path, dataset: Path, arms: list[str]) -> dict[str, Any]:
    """Evidence recall over the whole context (passages *and* summaries), by category.

    The run's recall counts text units only; an extractive summary quotes its children's
    sentences, so evidence it holds is in `tree`'s context too. Per category (and ``all``):
    each arm's mean, and `tree`'s paired bootstrap difference from every other arm.
    """
    from unified_kg_rag.evaluation.metrics import evidence_hits
    from unified_kg_rag.evaluation.statistics import paired_bootstrap

    items = [json.loads(line) for line in dataset.read_text().splitlines() if line.strip()]
    rows = {(r["question_id"], r["arm"]): r for r in map(json.loads, (
        run_dir / "results.jsonl").read_text().splitlines())}  # fmt: skip
    per: dict[str, dict[str, list[float]]] = {}
    for it in items:
        if not it.get("evidence") or any((it["id"], a) not in rows for a in arms):
            continue
        for cat in ("all", it.get("category") or "-"):
            for arm in arms:
                texts = [s["text"] for s in rows[(it["id"], arm)]["sources"]]
                hits, n = evidence_hits(texts, it["evidence"])
                found = set().union(*hits) if hits else set()
                per.setdefault(cat, {}).setdefault(arm, []).append(len(found) / n if n else 0.0)
    out: dict[str, Any] = {}
    for cat, by_arm in per.items():
        out[cat] = {"n": len(by_arm[arms[0]]),
                    "means": {a: sum(v) / len(v) for a, v in by_arm.items()}, "tree_minus": {}}
        for other in (a for a in arms if a != "tree" and "tree" in by_arm):
            iv = paired_bootstrap(by_arm["tree"], by_arm[other])
            out[cat]["tree_minus"][other] = {"estimate": iv.estimate, "low": iv.low,
                                             "high": iv.high}  # fmt: skip
    print("  evidence recall over the whole context (passages and summaries):")
    for cat, row in sorted(out.items()):
        means = " ".join(f"{a}={m:.3f}" for a, m in row["means"].items())
        diffs = "; ".join(f"tree-{o} {d['estimate']:+.3f} ({d['low']:+.3f} to {d['high']:+.3f})"
                          for o, d in row["tree_minus"].items())  # fmt: skip
        print(f"    {cat} ({row['n']}): {means}\n      {diffs}")
    return out


def run_set(work: Path, name: str, arms: str, top_k: int) -> dict[str, Any]:
    corpus, dataset = prepare(work, name)
    project = work / f"{name}-p"
    report = index(corpus, project, work / f"{name}-index.json")
    print(tree_line(name, report))
    run_dir = work / f"{name}-run"
    comp, wall = evaluate(dataset, project, arms, run_dir)
    show_means(name, comp, wall)
    show_deltas(comp)
    show_categories(comp)
    by_ppr = rescore(project, run_dir, "ppr")
    show_deltas(by_ppr)
    show_categories(by_ppr)
    out = {"index_report": report, "summary_tree": report.get("summary_tree"),
           "eval_wall_s": round(wall, 1), "vs_naive": comp, "vs_ppr": by_ppr}  # fmt: skip
    if name == "novels":
        out["context_evidence"] = context_evidence(run_dir, dataset, arms.split(","))
    if top_k:
        # `tree` fills ~4x naive's context on MuSiQue: naive at a larger query.top_k, same run
        config = work / f"{name}-top_k{top_k}.yaml"
        config.write_text((project / "ukr.yaml").read_text() + f"query:\n  top_k: {top_k}\n")
        big, big_wall = evaluate(dataset, project, "naive,tree", work / f"{name}-run-k{top_k}",
                                 config)  # fmt: skip
        show_means(f"{name} at query.top_k {top_k} (naive's budget near tree's)", big, big_wall)
        show_deltas(big)
        out[f"top_k_{top_k}"] = big
    return out


def delta_corpus(corpus: Path, out: Path, removed: int = 10, added: int = 9) -> list[str]:
    """Copy ``corpus`` to ``out`` less ``removed`` passages, plus ``added`` from 2Wiki."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(corpus, out)
    files = sorted(out.iterdir())
    step = len(files) // removed
    gone = [files[i * step + step // 2] for i in range(removed)]
    for f in gone:
        f.unlink()
    wiki = json.loads((DATA / "multihop" / "hipporag" / "2wikimultihopqa_corpus.json").read_text())
    for i, p in enumerate(wiki[:added]):
        (out / f"wiki_{i:02d}.md").write_text(f"# {p['title']}\n\n{p['text']}\n")
    return [f.name for f in gone]


def run_delta(work: Path, dims: list[int]) -> dict[str, Any]:
    corpus, dataset = prepare(work, "musique")
    changed = work / "musique-delta-corpus"
    gone = delta_corpus(corpus, changed)
    out: dict[str, Any] = {"removed": gone, "added": 9, "by_dims": {}}
    print(f"== summary reuse after a 1% delta of MuSiQue ({len(gone)} removed, 9 added)")
    for d in dims:
        project = work / f"delta-{d}-p"
        if project.exists():
            shutil.rmtree(project)
        shutil.copytree(work / "musique-p", project)
        yaml = (work / "musique-p" / "ukr.yaml").read_text()  # its source_scope: same ids
        (project / "ukr.yaml").write_text(yaml + f"graph:\n  raptor:\n    reduction_dims: {d}\n")
        full = index(corpus, project, None)
        after = index(changed, project, None)
        run_dir = work / f"delta-{d}-run"
        if run_dir.exists():
            shutil.rmtree(run_dir)
        comp, _ = evaluate(dataset, project, "tree", run_dir)
        metrics = comp["arms"][0]["metrics"]
        st, st0 = after.get("summary_tree") or {}, full.get("summary_tree") or {}
        if st0.get("skipped_reason") and (work / "musique-index.json").exists():
            st0 = json.loads((work / "musique-index.json").read_text())["summary_tree"]
        total = st.get("summaries_written", 0) + st.get("summaries_reused", 0)
        print(f"  dims {d:>3}: build {st0.get('seconds', 0):.1f} s, levels "
              f"{st0.get('nodes_per_level')}; after the delta: reused "
              f"{st.get('summaries_reused', 0)} / {total}, written "
              f"{st.get('summaries_written', 0)}, removed {st.get('nodes_removed', 0)}, "
              f"{st.get('seconds', 0):.1f} s; tree recall@5 {metrics['recall@5']['mean']:.3f}, "
              f"recall@10 {metrics['recall@10']['mean']:.3f}")  # fmt: skip
        out["by_dims"][str(d)] = {"full": st0, "after_delta": st,
                                  "tree_metrics": metrics}  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ukr-bench-tree"))
    parser.add_argument("--sets", default="musique,novels")
    parser.add_argument("--arms", default=ARMS, help="the first is the baseline")
    parser.add_argument("--top-k", type=int, default=40,
                        help="MuSiQue: also naive,tree at this query.top_k (0: not)")
    parser.add_argument("--delta", action="store_true", help="the 1%% delta reuse experiment")
    parser.add_argument("--dims", default="10,32,64")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    work: Path = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {"arms": args.arms}
    started = time.perf_counter()
    for name in [s for s in args.sets.split(",") if s]:
        out[name] = run_set(work, name, args.arms, args.top_k if name == "musique" else 0)
    if args.delta:
        out["delta"] = run_delta(work, [int(d) for d in args.dims.split(",")])
    out["wall_s"] = round(time.perf_counter() - started, 1)
    out["commands"] = COMMANDS
    print(f"== whole benchmark: {out['wall_s']:.0f} s")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
