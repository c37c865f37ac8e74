"""`auto`'s rare-term guarantee, LLM-free: recall and answer-in-context before and after.

*Before* is ``query.auto.rare_term_slots: 0`` (no passage pinned: exactly the routed
strategy's context), *after* the defaults. Indexes (read in place from ../shared/data, never
copied into the repository):

- **MuSiQue plain**: the 1,890 passages indexed without an LLM (the default `lazy` concept
  graph; `auto` routes to `ppr`), the 100 questions;
- **MuSiQue graph** (``--graph-project``): the replay-built index of
  ``benchmarks/bench_graph_index.py`` (``graphrag`` + ``lightrag``; `auto` routes to `hybrid`);
- **novels**: the 10 GraphRAG-Bench novels indexed without an LLM, their "Fact Retrieval" and
  "Complex Reasoning" questions with an answer of at most four words (``bench_lazy.py``'s
  set): answer in context.

Rare-term sets, built from the corpora (nothing tuned on them):

- **natural** (MuSiQue): the supporting passages that hold a rare term of their question
  (a question term at most ``--max-df`` passages hold): the share of them in the context;
- **synthetic** (both corpora): ``--n`` text units drawn at random (seed 7), each with a
  capitalised word or a number that no other text unit holds (a name, a code, a year), asked
  about as "What is said about X?" (three templates in turn): the share of questions whose
  unit is in the context, and its mean rank there.

Usage:  python benchmarks/bench_rare_terms.py --workdir DIR [--graph-project DIR] [--json OUT]
        [--sweep] (the plain indexes are built in DIR the first time, kept for later runs)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_lazy import DEFAULT_DATA, bootstrap, index  # noqa: E402

from unified_kg_rag import RAGChain, build_app, evaluate, load_dataset  # noqa: E402
from unified_kg_rag.config.models import QueryConfig, UkrConfig  # noqa: E402
from unified_kg_rag.domain.models import Collection  # noqa: E402
from unified_kg_rag.domain.text.analysis import (  # noqa: E402
    QUERY_STOPWORDS,
    lexical_query_terms,
    lexical_terms,
)
from unified_kg_rag.evaluation.dataset import EvalItem  # noqa: E402
from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402

TEMPLATES = ("What is said about {}?", "What do the documents say about {}?", "Who or what is {}?")
_CANDIDATE = re.compile(r"(?<![\w'’.-])(?:[A-Z][a-z]{3,}|\d{3,})(?![\w'’-])")


def variants(query: QueryConfig, sweep: bool) -> dict[str, QueryConfig]:
    """The settings compared: before (no guarantee), after (defaults), and the sweep's."""
    auto = query.auto
    out = {"before": query.model_copy(update={"auto": auto.model_copy(update={
        "rare_term_slots": 0})}), "after": query}  # fmt: skip
    if sweep:
        for slots, max_df, after in ((2, 5, 0), (2, 5, 10), (1, 5, 2), (3, 5, 2), (2, 2, 2),
                                     (2, 10, 2), (2, 20, 2)):  # fmt: skip
            out[f"slots={slots} max_df={max_df} after={after}"] = query.model_copy(update={
                "auto": auto.model_copy(update={"rare_term_slots": slots,
                                                "rare_term_max_df": max_df,
                                                "rare_term_after": after})})  # fmt: skip
    return out


async def unit_texts(app: Any) -> dict[str, str]:
    """Return text unit id → text of the app's default index."""
    search = app.index().search
    ids = await search.ids(Collection.TEXT_UNITS)
    out: dict[str, str] = {}
    for i in range(0, len(ids), 500):
        for rec in await search.get(Collection.TEXT_UNITS, ids[i : i + 500]):
            out[rec.id] = rec.text
    return out


def synthetic_set(texts: dict[str, str], n: int, seed: int = 7) -> list[tuple[str, str]]:
    """Return ``(question, unit id)`` pairs about words only that unit holds (see module)."""
    df: Counter[str] = Counter()
    for text in texts.values():
        df.update(set(lexical_terms(text)))
    rng = random.Random(seed)
    ids = sorted(texts)
    rng.shuffle(ids)
    out: list[tuple[str, str]] = []
    for uid in ids:
        words = [w for w in dict.fromkeys(_CANDIDATE.findall(texts[uid]))
                 if lexical_terms(w) == [w.casefold()] and df[w.casefold()] == 1
                 and w.casefold() not in QUERY_STOPWORDS]  # fmt: skip
        if words:
            word = rng.choice(words)
            out.append((TEMPLATES[len(out) % len(TEMPLATES)].format(word), uid))
        if len(out) == n:
            break
    return out


async def in_context(chain: RAGChain, pairs: list[tuple[str, str]], **kw: Any) -> dict[str, Any]:
    """Share of questions whose unit is in the packed context, and its mean rank there."""
    hits, ranks = [], []
    for question, uid in pairs:
        out = await chain.retrieve(question, **kw)
        ids = [s.id for s in out.sources if s.kind == "text_unit"]
        hits.append(1.0 if uid in ids else 0.0)
        if uid in ids:
            ranks.append(ids.index(uid) + 1)
    return {"in_context": float(np.mean(hits)), "mean_rank": float(np.mean(ranks or [0])),
            "per_q": hits}  # fmt: skip


async def natural_musique(chain: RAGChain, items: list[EvalItem], passages: dict[str, str],
                          df: Counter[str], max_df: int, **kw: Any) -> dict[str, Any]:  # fmt: skip
    """Share of rare-term-bearing supporting passages in the context (see module)."""
    found = total = questions = 0
    for item in items:
        rare = [t for t in lexical_query_terms(item.question) if 1 <= df[t] <= max_df]
        bearing = [s for s in item.supporting
                   if set(rare) & set(lexical_terms(passages.get(s, "")))]
        if not bearing:
            continue
        questions += 1
        out = await chain.retrieve(item.question, **kw)
        paths = {Path(s.path or "").stem for s in out.sources}
        total += len(bearing)
        found += sum(s in paths for s in bearing)
    return {"questions": questions, "passages": total, "in_context": found / max(total, 1)}


async def run_set(name: str, project: Path, items: list[EvalItem],
                  passages: dict[str, str] | None,
                  args: argparse.Namespace, routed: str) -> dict[str, Any]:  # fmt: skip
    config = UkrConfig()
    out: dict[str, Any] = {}
    async with build_app(config, project) as app:
        texts = await unit_texts(app)
        df: Counter[str] = Counter()
        for text in texts.values():
            df.update(set(lexical_terms(text)))
        pairs = synthetic_set(texts, args.n)
        settings = variants(config.query, args.sweep)
        runs: dict[str, tuple[QueryConfig, dict[str, Any]]] = {
            k: (v, {"strategy": "auto"}) for k, v in settings.items()}
        runs[f"{routed} (explicit)"] = (config.query, {"strategy": routed})
        runs["naive --mode lexical"] = (config.query, {"strategy": "naive",
                                                       "search_mode": "lexical"})
        for label, (query, kw) in runs.items():
            print(f"  {name}: {label} ...", file=sys.stderr, flush=True)
            chain = RAGChain(app.index(), embedder=app.embedder, chat_model=None,
                             budget_tokenizer=app.budget_tokenizer, config=query)  # fmt: skip
            r = await evaluate(chain, items, retrieval_only=True, **kw)
            row: dict[str, Any] = {
                "recall@2": r.recall_at_2, "recall@5": r.recall_at_5,
                "recall@10": r.recall_at_10, "recall_in_context": r.recall_in_context,
                "answer_in_context": float(np.mean([q.answer_in_context for q in r.questions])),
                "per_q_ans": [float(q.answer_in_context) for q in r.questions],
                "per_q10": [q.recall.get("@10", 0.0) for q in r.questions if q.recall],
            }  # fmt: skip
            row["synthetic"] = await in_context(chain, pairs, top_k=10, **kw)
            if passages is not None:
                row["natural"] = await natural_musique(chain, items, passages, df,
                                                       config.query.auto.rare_term_max_df,
                                                       top_k=10, **kw)  # fmt: skip
            out[label] = row
    out["synthetic_n"] = len(pairs)
    return out


def report(name: str, rows: dict[str, Any]) -> None:
    print(f"== {name} (synthetic rare-term set: {rows['synthetic_n']} questions)")
    print(f"  {'':<30} {'@2':>6} {'@5':>6} {'@10':>6} {'ans ctx':>8} {'natural':>8} "
          f"{'synth':>6} {'rank':>5}")  # fmt: skip
    before = rows["before"]
    for label, r in rows.items():
        if not isinstance(r, dict):
            continue
        nat = f"{r['natural']['in_context']:.3f}" if "natural" in r else "n/a"
        rec = ["  n/a" if r[k] is None else f"{r[k]:.3f}" for k in ("recall@2", "recall@5",
                                                                     "recall@10")]
        line = (f"  {label:<30} {rec[0]}  {rec[1]}  {rec[2]}"
                f"  {r['answer_in_context']:.3f}    {nat:>6}  {r['synthetic']['in_context']:.3f}"
                f"  {r['synthetic']['mean_rank']:.1f}")  # fmt: skip
        if label == "after":
            diffs = {
                "@10": [a - b for a, b in zip(r["per_q10"], before["per_q10"], strict=True)],
                "ans": [a - b for a, b in zip(r["per_q_ans"], before["per_q_ans"], strict=True)],
            }
            line += "   after-before " + ", ".join(
                "{} {:+.3f} ({:+.3f}..{:+.3f})".format(k, *bootstrap(d)) for k, d in diffs.items()
                if d)  # fmt: skip
        print(line)
    if "natural" in before:
        print(f"  natural set: {before['natural']['questions']} questions, "
              f"{before['natural']['passages']} passages")


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """Write the corpora and build the plain indexes (kept in ``--workdir``)."""
    work: Path = args.workdir
    work.mkdir(parents=True, exist_ok=True)
    prepare_hipporag(args.data / "musique_train.json", args.data / "musique_train_corpus.json",
                     work / "musique", force=True)  # fmt: skip
    corpus = work / "musique" / "corpus"
    out: dict[str, Any] = {
        "musique": load_dataset(work / "musique" / "dataset.jsonl"),
        "passages": {p.stem: p.read_text(encoding="utf-8") for p in corpus.glob("*.md")},
    }
    if "plain" in args.only:
        index(corpus, work / "musique_p")
    if "novels" in args.only:
        novels = work / "novels"
        novels.mkdir(exist_ok=True)
        bench = args.data.parents[1] / "graphrag_bench"  # data/multihop/hipporag -> data
        for novel in json.loads((bench / "novel.json").read_text()):
            (novels / f"{novel['corpus_name']}.txt").write_text(novel["context"],
                                                                 encoding="utf-8")
        questions = [q for q in json.loads((bench / "novel_questions.json").read_text())
                     if q["question_type"] in ("Fact Retrieval", "Complex Reasoning")
                     and len(q["answer"].split()) <= 4]  # fmt: skip
        out["novels"] = [EvalItem(id=q["id"], question=q["question"], answers=[q["answer"]])
                         for q in questions]
        index(novels, work / "novels_p")
    return out


async def main_async(args: argparse.Namespace, data: dict[str, Any]) -> dict[str, Any]:
    work: Path = args.workdir
    results: dict[str, Any] = {}
    musique, passages = data["musique"], data["passages"]
    if "plain" in args.only:
        rows = await run_set("MuSiQue plain", work / "musique_p", musique, passages, args, "ppr")
        report("MuSiQue, 100 questions, plain LLM-free index (auto -> ppr)", rows)
        results["musique_plain"] = rows
    if "graph" in args.only and args.graph_project is not None:
        rows = await run_set("MuSiQue graph", args.graph_project, musique, passages, args,
                             "hybrid")  # fmt: skip
        report("MuSiQue, 100 questions, replay-built graph index (auto -> hybrid)", rows)
        results["musique_graph"] = rows
    if "novels" in args.only:
        items = data["novels"]
        rows = await run_set("novels", work / "novels_p", items, None, args, "ppr")
        report(f"GraphRAG-Bench novels, {len(items)} short-answer questions, plain index "
               "(auto -> ppr)", rows)  # fmt: skip
        results["novels"] = rows
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--graph-project", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the HippoRAG data folder (the novels are in ../../graphrag_bench)")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--n", type=int, default=200, help="synthetic questions per corpus")
    parser.add_argument("--only", default="plain,graph,novels")
    parser.add_argument("--sweep", action="store_true")
    args = parser.parse_args()
    results = asyncio.run(main_async(args, prepare(args)))
    if args.json:
        strip = {"per_q_ans", "per_q10", "per_q"}
        clean = json.loads(json.dumps(results, default=str))
        for rows in clean.values():
            for r in rows.values():
                if isinstance(r, dict):
                    for k in strip & set(r):
                        del r[k]
                    r.get("synthetic", {}).pop("per_q", None)
        args.json.write_text(json.dumps(clean, indent=2) + "\n")


if __name__ == "__main__":
    main()
