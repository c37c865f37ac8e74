"""The evaluation framework's own figures: `ukr eval` comparisons with 95% CIs against `naive`.

Runs the user's commands (``ukr eval prepare``, ``ukr index``, ``ukr eval``, ``ukr eval
report``) as subprocesses and prints each comparison's table from its ``comparison.json``:

- **musique**: HippoRAG's 100 MuSiQue questions over their 1,890 passages, indexed without an
  LLM (the `lazy` concept graph); arms ``naive`` (hybrid), ``naive:vector``,
  ``naive:lexical``, ``ppr``, ``lazy``; recall is by supporting passage.
- **novels**: GraphRAG-Bench's ten novels, the Fact Retrieval and Complex Reasoning questions
  whose evidence was located in their novel (``--located-only``: 514); the same arms;
  recall is passage-level, by located evidence.
- **replay** (``--replay DIR``): the MuSiQue graph index ``bench_strategies.py`` builds from
  GPT-3.5's recorded extraction (``graphrag`` and ``lightrag``); arms ``naive``, ``local``,
  ``global``, ``drift``, ``hybrid``, ``mix`` (it holds no graph ``ppr`` reads), retrieval
  only and no LLM at query time (query entities are the indexed names the question contains).

Every run is ``--retrieval-only`` (no answer model: the answer metrics of extractive answers
say little), so the figures are retrieval quality, context size and latency. The wall time
of each ``ukr eval`` is printed. ``--report`` writes the HTML report of the MuSiQue run.

Usage:  python benchmarks/bench_eval.py [--workdir DIR] [--sets musique,novels]
        [--replay PROJECT] [--report OUT.html] [--json OUT]
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
ARMS = "naive,naive:vector,naive:lexical,ppr,lazy"
GRAPH_ARMS = "naive,local,global,drift,hybrid,mix"
SHOWN = ("recall@2", "recall@5", "recall@10", "mrr", "ndcg@10", "cost/context_tokens")


def ukr(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
    proc = subprocess.run([sys.executable, "-m", "unified_kg_rag.cli", *args], env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if check and proc.returncode != 0:
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
                "Fact Retrieval,Complex Reasoning", "--located-only", "--force")
    return out / "corpus", out / "dataset.jsonl"


def index(corpus: Path, project: Path) -> float:
    if (project / ".ukr").exists():
        return float("nan")
    t0 = time.perf_counter()
    ukr("index", str(corpus), "-C", str(project), "-q")
    return time.perf_counter() - t0


def compare(dataset: Path, project: Path, arms: str, run_dir: Path) -> tuple[dict[str, Any], float]:
    if run_dir.exists():
        shutil.rmtree(run_dir)
    t0 = time.perf_counter()
    proc = ukr("eval", str(dataset), "-C", str(project), "--strategies", arms,
               "--retrieval-only", "--out", str(run_dir), "--json", "-q")  # fmt: skip
    return json.loads(proc.stdout), time.perf_counter() - t0


def show(name: str, comp: dict[str, Any], wall: float) -> None:
    arms = comp["arms"]
    n = max(a["questions"] for a in arms)
    print(f"== {name}: {n} questions, `ukr eval` wall time {wall:.0f} s")
    heads = [m.replace("cost/context_tokens", "context tokens") for m in SHOWN]
    print(f"  {'arm':<14}" + "".join(f"{h:>15}" for h in heads) + f"{'p50 ms':>9}")
    for a in arms:
        cells = []
        for m in SHOWN:
            s = a["metrics"].get(m)
            cells.append("n/a" if s is None else (f"{s['mean']:.0f}" if m.startswith("cost/")
                                                   else f"{s['mean']:.3f}"))  # fmt: skip
        print(f"  {a['arm']:<14}" + "".join(f"{c:>15}" for c in cells)
              + f"{a['cost']['retrieval_ms_p50']:>9.1f}")  # fmt: skip
    print(f"  difference from {comp['baseline']} (95% paired bootstrap CI, "
          f"{comp['stats']['resamples']} resamples):")
    for d in comp["deltas"]:
        if d["metric"] in ("recall@5", "recall@10"):
            mark = {True: "better", False: "worse", None: ""}[d["better"]]
            print(f"  {d['arm']:<14} {d['metric']:<10} {d['estimate']:+.3f} "
                  f"({d['low']:+.3f} to {d['high']:+.3f}) {mark}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/ukr-bench-eval"))
    parser.add_argument("--sets", default="musique,novels")
    parser.add_argument("--replay", type=Path, default=None,
                        help="a project holding bench_strategies.py's replay-built index")
    parser.add_argument("--report", type=Path, default=None,
                        help="copy the MuSiQue run's report.html here")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    work: Path = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    out: dict[str, Any] = {}
    started = time.perf_counter()
    for name in [s for s in args.sets.split(",") if s]:
        corpus, dataset = prepare(work, name)
        took = index(corpus, work / f"{name}-p")
        if took == took:  # not NaN: built now
            print(f"== {name}: indexed in {took:.0f} s")
        comp, wall = compare(dataset, work / f"{name}-p", ARMS, work / f"{name}-run")
        show(name, comp, wall)
        out[name] = {"wall_s": wall, "comparison": comp}
    if args.replay is not None:
        _, dataset = prepare(work, "musique")
        comp, wall = compare(dataset, args.replay, GRAPH_ARMS, work / "replay-run")
        show("replay-built MuSiQue graph", comp, wall)
        out["replay"] = {"wall_s": wall, "comparison": comp}
    print(f"== whole comparison: {time.perf_counter() - started:.0f} s")
    if args.report is not None and "musique" in out:
        ukr("eval", "report", str(work / "musique-run"), "--title",
            "MuSiQue-100: LLM-free strategies against naive hybrid")
        shutil.copyfile(work / "musique-run" / "report.html", args.report)
        print(f"report: {args.report} ({args.report.stat().st_size / 1024:.0f} KB)")
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
