"""Extractive answers without an LLM: is the answer quoted when the context holds it?

Two corpora, read in place from ../shared/data and indexed with the default configuration
(no LLM: text units and the `lazy` concept graph):

- MuSiQue: HippoRAG's 100 questions over their 1,890 passages (answers and aliases).
- GraphRAG-Bench novels: the 10 novels, and their "Fact Retrieval" and "Complex Reasoning"
  questions whose answer has at most four words (89 questions; longer answers are sentences
  of the question writer, never quoted verbatim), as ``benchmarks/bench_lazy.py`` selects.

Per corpus and strategy (default ``auto`` and ``naive``), over the questions asked with
``RAGChain.ainvoke`` and no LLM: *answer in context* (a reference answer or alias,
SQuAD-normalised, occurs in the packed context), *answer quoted* (it occurs in the
extractive answer) and their ratio.

Abstention: every MuSiQue question asked against the novels index and every novel question
asked against the MuSiQue index has no answer there (positive: the weak-match verdict should
say so); the answerable questions asked against their own corpus are the negatives. The
verdict's precision, recall and F1 (positive = ``weak``) are reported on the held-out half
of the questions (``split`` below: the half a question falls in is fixed by a hash of its
id), and on all. ``--calibrate`` grid-searches the verdict's thresholds on the other half
(the calibration half) from the features each answer records (``metadata.match``:
``coverage``, ``similarity``) and reports the chosen thresholds on the held-out half.

Usage:  python benchmarks/bench_extractive.py [--project DIR] [--data DIR] [--json OUT]
        [--strategies auto,naive] [--abstention auto] [--calibrate] [--tag NAME]
        (--project keeps the corpora and both indexes there for the next run; without it
        everything is built in a temporary folder: about 10 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from unified_kg_rag import RAGChain, build_app, load_dataset  # noqa: E402
from unified_kg_rag.config.models import UkrConfig  # noqa: E402
from unified_kg_rag.evaluation.dataset import EvalItem  # noqa: E402
from unified_kg_rag.evaluation.metrics import answer_in_text  # noqa: E402
from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
NOVEL_TYPES = ("Fact Retrieval", "Complex Reasoning")


def split(question_id: str) -> str:
    """``calibration`` or ``test``: the half a question falls in, fixed by its id's hash."""
    return "calibration" if hashlib.sha256(question_id.encode()).digest()[0] % 2 else "test"


def prepare(data: Path, work: Path) -> dict[str, tuple[Path, Path]]:
    """Write both corpora and their datasets under ``work``; return name → (corpus, jsonl)."""
    hipporag = data / "multihop" / "hipporag"
    if not (work / "musique" / "dataset.jsonl").exists():
        prepare_hipporag(hipporag / "musique_train.json", hipporag / "musique_train_corpus.json",
                         work / "musique", force=True)  # fmt: skip
    bench = data / "graphrag_bench"
    corpus = work / "novels" / "corpus"
    if not corpus.exists():
        corpus.mkdir(parents=True)
        for novel in json.loads((bench / "novel.json").read_text(encoding="utf-8")):
            (corpus / f"{novel['corpus_name']}.txt").write_text(novel["context"],
                                                                  encoding="utf-8")  # fmt: skip
    questions = [
        q for q in json.loads((bench / "novel_questions.json").read_text(encoding="utf-8"))
        if q["question_type"] in NOVEL_TYPES and len(q["answer"].split()) <= 4
    ]
    dataset = work / "novels" / "dataset.jsonl"
    dataset.write_text("".join(
        json.dumps({"id": q["id"], "question": q["question"], "answers": [q["answer"]],
                    "supporting": []}) + "\n" for q in questions
    ), encoding="utf-8")  # fmt: skip
    return {
        "musique": (work / "musique" / "corpus", work / "musique" / "dataset.jsonl"),
        "novels": (corpus, dataset),
    }


def index(corpus: Path, project: Path) -> float:
    """Index ``corpus`` into ``project`` with ``ukr index`` (default config); NaN if kept."""
    if (project / ".ukr").exists():
        return float("nan")
    env = {k: v for k, v in os.environ.items() if not k.startswith("UKR_")}
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "unified_kg_rag.cli", "index", str(corpus), "-C", str(project),
         "--json"], env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        sys.exit(f"ukr index failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return time.perf_counter() - started


async def ask(project: Path, items: list[EvalItem], strategy: str,
              checkpoint: Path | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Answer every question extractively; return per-question records.

    With ``checkpoint``, the records are read from there when it exists (a pass done by an
    earlier run with the same ``--tag``) and written there when done.
    """
    done = await asyncio.to_thread(_load_pass, checkpoint)
    if done is not None:
        return done
    config = UkrConfig()
    rows: list[dict[str, Any]] = []
    async with build_app(config, project) as app:
        chain = RAGChain(app.index(), embedder=app.embedder, chat_model=None,
                         budget_tokenizer=app.budget_tokenizer, config=config.query)  # fmt: skip
        for item in items:
            out = await chain.ainvoke(item.question, strategy=strategy)
            context = "\n".join(s.text for s in out.sources)
            match = out.metadata.get("match")
            rows.append({
                "id": item.id,
                "split": split(item.id),
                "answer_kind": out.answer_kind,
                "strategy": out.strategy,
                "in_context": answer_in_text(item.answers, context),
                "quoted": answer_in_text(item.answers, out.answer),
                "match": match if isinstance(match, dict) else None,
            })  # fmt: skip
    await asyncio.to_thread(_save_pass, checkpoint, rows)
    return rows


def _load_pass(checkpoint: Path | None) -> list[dict[str, Any]] | None:
    if checkpoint is None or not checkpoint.exists():
        return None
    rows: list[dict[str, Any]] = json.loads(checkpoint.read_text(encoding="utf-8"))
    return rows


def _save_pass(checkpoint: Path | None, rows: list[dict[str, Any]]) -> None:
    if checkpoint is not None:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        checkpoint.write_text(json.dumps(rows), encoding="utf-8")


def quoting(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = len(rows)
    in_ctx = sum(r["in_context"] for r in rows) / n
    quoted = sum(r["quoted"] for r in rows) / n
    quoted_given = [r["quoted"] for r in rows if r["in_context"]]
    return {
        "questions": n,
        "answer_in_context": round(in_ctx, 3),
        "answer_quoted": round(quoted, 3),
        "quoted_over_in_context": round(quoted / in_ctx, 3) if in_ctx else 0.0,
        "quoted_when_in_context": round(sum(quoted_given) / len(quoted_given), 3)
        if quoted_given else 0.0,
    }


def verdict_scores(labelled: list[tuple[bool, bool]]) -> dict[str, float]:
    """Precision/recall/F1 of ``weak`` over (predicted weak, truly unanswerable) pairs."""
    tp = sum(p and t for p, t in labelled)
    fp = sum(p and not t for p, t in labelled)
    fn = sum(t and not p for p, t in labelled)
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"n": len(labelled), "precision": round(precision, 3), "recall": round(recall, 3),
            "f1": round(f1, 3)}  # fmt: skip


def abstention(answerable: list[dict[str, Any]], unanswerable: list[dict[str, Any]],
               which: str | None = None) -> dict[str, float] | None:  # fmt: skip
    rows = [(r, False) for r in answerable] + [(r, True) for r in unanswerable]
    if which is not None:
        rows = [(r, t) for r, t in rows if r["split"] == which]
    if any(r["match"] is None for r, _ in rows):
        return None  # no verdict recorded (the code before the verdict)
    return verdict_scores([(r["match"]["verdict"] == "weak", t) for r, t in rows])


def calibrate(answerable: list[dict[str, Any]],
              unanswerable: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    """Grid-search (coverage, similarity) floors on the calibration half; test the other.

    A match is weak when its coverage is below the coverage floor or its similarity below
    the similarity floor. The pair chosen maximises F1 on the calibration half among those
    whose precision there is at least 0.85 (the target is 0.8 on held-out questions).
    """
    data = [(r, False) for r in answerable] + [(r, True) for r in unanswerable]

    def scored(cov: float, sim: float, half: str) -> dict[str, float]:
        return verdict_scores([
            (r["match"]["coverage"] < cov or r["match"]["similarity"] < sim, t)
            for r, t in data if r["split"] == half
        ])  # fmt: skip

    best: tuple[float, float, float] | None = None
    for cov in [i / 20 for i in range(0, 21)]:
        for sim in [i / 40 for i in range(0, 33)]:
            s = scored(cov, sim, "calibration")
            if s["precision"] >= 0.85 and (best is None or s["f1"] > best[0]):
                best = (s["f1"], cov, sim)
    if best is None:
        return {"chosen": None}
    _, cov, sim = best
    return {"coverage_floor": cov, "similarity_floor": sim,
            "calibration": scored(cov, sim, "calibration"),
            "test": scored(cov, sim, "test")}  # fmt: skip


async def main_async(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    sets = prepare(args.data, work)
    items = {name: load_dataset(jsonl) for name, (_, jsonl) in sets.items()}
    projects = {name: work / f"{name}_project" for name in sets}
    for name, (corpus, _) in sets.items():
        took = index(corpus, projects[name])
        print(f"== {name}: index {'kept' if took != took else f'built in {took:.0f} s'}",
              file=sys.stderr, flush=True)  # fmt: skip
    out: dict[str, Any] = {"quoting": {}, "abstention": {}}
    passes = work / "passes" / args.tag if args.tag else None
    other = {"musique": "novels", "novels": "musique"}
    verdict_strategies = set(args.abstention.split(",")) if args.abstention else set()
    for strategy in args.strategies.split(","):
        own: dict[str, list[dict[str, Any]]] = {}
        for name in sets:
            print(f"  {name} / {strategy} ...", file=sys.stderr, flush=True)
            own[name] = await ask(projects[name], items[name], strategy,
                                  _at(passes, f"{name}-{strategy}"))  # fmt: skip
            out["quoting"][f"{name}/{strategy}"] = quoting(own[name])
            print(f"  {name}/{strategy}: {out['quoting'][f'{name}/{strategy}']}", flush=True)
        out.setdefault("rows", {})[strategy] = {"answerable": own["musique"] + own["novels"]}
        if strategy not in verdict_strategies:
            continue
        cross: list[dict[str, Any]] = []
        for name in sets:  # questions of ``name`` against the other corpus: no answer there
            print(f"  {name} questions on {other[name]} / {strategy} ...", file=sys.stderr,
                  flush=True)  # fmt: skip
            cross += await ask(projects[other[name]], items[name], strategy,
                               _at(passes, f"{name}-on-{other[name]}-{strategy}"))  # fmt: skip
        answerable = own["musique"] + own["novels"]
        out["abstention"][strategy] = {
            "test": abstention(answerable, cross, "test"),
            "all": abstention(answerable, cross),
            "weak_when_answer_quoted": _share_weak([r for r in answerable if r["quoted"]]),
        }
        if args.calibrate and out["abstention"][strategy]["all"] is not None:
            out["abstention"][strategy]["calibrated"] = calibrate(answerable, cross)
        out["rows"][strategy]["unanswerable"] = cross
    return out


def _at(passes: Path | None, label: str) -> Path | None:
    return None if passes is None else passes / f"{label}.json"


def _share_weak(rows: list[dict[str, Any]]) -> float | None:
    if not rows or any(r["match"] is None for r in rows):
        return None
    return round(sum(r["match"]["verdict"] == "weak" for r in rows) / len(rows), 3)


def report(out: dict[str, Any]) -> None:
    print("== extractive answers, no LLM (answer = a reference answer or alias, SQuAD-normalised)")
    print(f"  {'set/strategy':<18} {'n':>4} {'in context':>11} {'quoted':>7} {'ratio':>6} "
          f"{'quoted|in ctx':>14}")  # fmt: skip
    for key, r in out["quoting"].items():
        print(f"  {key:<18} {r['questions']:>4} {r['answer_in_context']:>11.3f} "
              f"{r['answer_quoted']:>7.3f} {r['quoted_over_in_context']:>6.3f} "
              f"{r['quoted_when_in_context']:>14.3f}")  # fmt: skip
    print("== weak-match verdict (positive = weak; unanswerable = asked against the other corpus)")
    for strategy, a in out["abstention"].items():
        if a["all"] is None:
            print(f"  {strategy}: no verdict recorded")
            continue
        for half in ("test", "all"):
            s = a[half]
            print(f"  {strategy:<6} {half:<5} n={s['n']:<4} precision {s['precision']:.3f}  "
                  f"recall {s['recall']:.3f}  F1 {s['f1']:.3f}")  # fmt: skip
        print(f"  {strategy:<6} weak although the answer is quoted: "
              f"{a['weak_when_answer_quoted']}")  # fmt: skip
        if "calibrated" in a:
            print(f"  {strategy:<6} calibrated on the calibration half: {a['calibrated']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=None,
                        help="work folder: corpora and indexes, kept for later runs")  # fmt: skip
    parser.add_argument("--data", type=Path, default=SHARED)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--strategies", default="auto,naive")
    parser.add_argument("--abstention", default="auto",
                        help="strategies whose weak-match verdict is measured (asking every "
                        "question against the other corpus too); empty: none")  # fmt: skip
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--tag", default="",
                        help="keep each pass's answers under DIR/passes/TAG and reuse them "
                        "(a run stopped midway resumes; one tag per code version)")  # fmt: skip
    args = parser.parse_args()
    if args.project is not None:
        args.project.mkdir(parents=True, exist_ok=True)
        out = asyncio.run(main_async(args, args.project))
    else:
        with tempfile.TemporaryDirectory(prefix="ukr-extractive-") as tmp:
            out = asyncio.run(main_async(args, Path(tmp)))
    report(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
