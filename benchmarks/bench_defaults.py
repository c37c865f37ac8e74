"""Defaults of `ppr`, `lazy` and hybrid fusion chosen by leave-one-dataset-out (issue 19).

Two question sets, no LLM anywhere (the `lazy` concept graph, the bundled MiniLM):

- **MuSiQue**: HippoRAG's 100 training questions over their 1,890 passages; recall@5/@10 of
  the supporting passages (`evaluate()`).
- **novels**: GraphRAG-Bench's 10 novels. Documents are whole books, so the measure is
  *evidence recall@k*: the share of a question's evidence sentences (the ``evidence`` field
  split on "; ") held by at least one of the first k retrieved text units (context order),
  over the "Fact Retrieval" and "Complex Reasoning" questions whose every evidence sentence
  is located in a text unit of their novel. The evidence paraphrases the book (3 of the 813
  questions have it verbatim), so "located" is lexical (`locate`): a window of the unit
  holding at least 75% of the sentence's content terms. Answer-in-context@10 is given for
  the questions whose answer has at most four words (the 89 of bench_lazy's ``--novels``).

Every candidate setting is run on both sets; a paired bootstrap (10,000 resamples, seed 7)
gives the 95% CI of its difference to naive hybrid (default weights) at @5 and
@10. Selection: the candidate with the best mean of recall@5 and @10 on one set is reported
on the other (both directions); the final defaults are tuned on both (`select`): among the
settings not below hybrid at @5 or @10 on either set, the greatest gain over the two sets.

Usage:  python benchmarks/bench_defaults.py [--workdir DIR] (keeps the indexes there)
        [--json OUT] [--data DIR] [--bench DIR] [--quick] (a handful of candidates)
        python benchmarks/bench_defaults.py --table OUT (the selection again from a --json)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_lazy import DEFAULT_DATA, bootstrap, index  # noqa: E402

from unified_kg_rag import RAGChain, build_app, evaluate, load_dataset  # noqa: E402
from unified_kg_rag.config.models import UkrConfig  # noqa: E402
from unified_kg_rag.domain.text.analysis import QUERY_STOPWORDS, lexical_terms  # noqa: E402
from unified_kg_rag.evaluation.metrics import answer_in_text  # noqa: E402
from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402
from unified_kg_rag.ingestion.units import load_units, processed_unit_paths  # noqa: E402

DEFAULT_BENCH = ROOT.parent / "shared" / "data" / "graphrag_bench"
LOCATE_SHARE = 0.75
EARLIER_PPR = {"lexical_seed_weight": 0.0, "lexical_seed_sharpness": 0.0,
               "lexical_fusion_weight": 0.0, "fusion_weight": 0.0,
               "damping": 0.5, "passage_seed_sharpness": 20.0, "passage_seed_top_k": 20,
               "concept_weight": 0.3}  # fmt: skip
_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'})

Setting = dict[str, Any]  # {"query": {...}, "ppr": {...}}


def normalise(text: str) -> str:
    """Casefold, straighten curly quotes, collapse whitespace, drop trailing punctuation."""
    return re.sub(r"\s+", " ", text.translate(_QUOTES).casefold()).strip().rstrip(".!?;:, ")


def locate(sentence: str, units: list[tuple[str, list[str], str]]) -> frozenset[str]:
    """Return the ids of the units holding ``sentence`` (empty: not located).

    GraphRAG-Bench's evidence paraphrases the novel, so few sentences occur verbatim. A
    sentence is located in a unit when some window of max(2n, 20) of its terms (n: the
    sentence's length in terms) holds at least ``LOCATE_SHARE`` of the sentence's distinct
    content terms (`lexical_terms` less the query stopwords); the units reaching the best
    share are its evidence units (two when chunks overlap it).
    """
    wanted = {w for w in lexical_terms(sentence) if w not in QUERY_STOPWORDS}
    if not wanted:
        return frozenset()
    width = max(2 * len(lexical_terms(sentence)), 20)
    best, found = 0.0, set()
    for unit, words, _ in units:
        if len(wanted & set(words)) < max(best, LOCATE_SHARE) * len(wanted):
            continue
        at = [i for i, w in enumerate(words) if w in wanted]
        share = 0.0
        for a, start in enumerate(at):
            seen = {words[p] for p in at[a:] if p - start < width}
            share = max(share, len(seen) / len(wanted))
        if share > best + 1e-9:
            best, found = share, {unit}
        elif abs(share - best) <= 1e-9:
            found.add(unit)
    return frozenset(found) if best >= LOCATE_SHARE else frozenset()


def candidates(quick: bool) -> list[tuple[str, str, Setting]]:
    """(name, strategy, settings): the grid both sets are run over.

    Hybrid's fusion weights; `ppr`'s BM25 seeds (weight x sharpness, 0 meaning 1/rank, the
    earlier rule), then one setting at a time around weight 2, sharpness 20 (every other
    setting pinned to the earlier defaults, so a row does not move with them); `lazy`'s
    similarity threshold (without an LLM it is its only relevance test).
    """
    out: list[tuple[str, str, Setting]] = [("hybrid (naive)", "naive", {})]
    if not quick:
        out += [(f"hybrid lexical_weight {w:g}", "naive", {"query": {"lexical_weight": w}})
                for w in (0.5, 1.0)]  # fmt: skip
        out.append(("hybrid rrf_k 30", "naive", {"query": {"rrf_k": 30}}))
    out.append(("ppr (defaults of this version)", "ppr", {}))
    out.append(("ppr (earlier defaults)", "ppr", {"ppr": EARLIER_PPR}))
    seeds = [(1.0, 0.0), (1.0, 10.0), (2.0, 10.0), (1.0, 20.0), (2.0, 20.0), (3.0, 20.0),
             (4.0, 30.0)]  # fmt: skip
    if quick:
        seeds = [(1.0, 0.0), (2.0, 20.0)]
    out += [(f"ppr BM25 seeds {w:g}, sharpness {a:g}", "ppr",
             {"ppr": {**EARLIER_PPR, "lexical_seed_weight": w, "lexical_seed_sharpness": a}})
            for w, a in seeds]  # fmt: skip
    around: list[tuple[str, dict[str, Any]]] = [
        ("+ BM25 fusion 0.3", {"lexical_fusion_weight": 0.3}),
        ("+ vector fusion 0.5", {"fusion_weight": 0.5}),
        ("damping 0.3", {"damping": 0.3}),
        ("damping 0.7", {"damping": 0.7}),
        ("passage sharpness 10", {"passage_seed_sharpness": 10.0}),
        ("passage sharpness 30", {"passage_seed_sharpness": 30.0}),
        ("passage seeds 50", {"passage_seed_top_k": 50}),
        ("concept weight 0.1", {"concept_weight": 0.1}),
        ("concept weight 1", {"concept_weight": 1.0}),
        ("weight 2.5, passage seeds 50", {"lexical_seed_weight": 2.5, "passage_seed_top_k": 50}),
        ("weight 3, passage seeds 50", {"lexical_seed_weight": 3.0, "passage_seed_top_k": 50}),
    ]
    if not quick:
        base = {**EARLIER_PPR, "lexical_seed_weight": 2.0, "lexical_seed_sharpness": 20.0}
        out += [(f"ppr BM25 seeds 2/20, {n}", "ppr", {"ppr": {**base, **s}}) for n, s in around]
        out += [(f"lazy threshold {t:g}", "lazy", {"lazy": {"relevance_threshold": t}})
                for t in (0.25, 0.35, 0.45)]  # fmt: skip
    return out


class QuestionSet:
    """One indexed corpus and its questions, scored per question at @5 and @10."""

    def __init__(self, name: str, project: Path, dataset: Path) -> None:
        self.name = name
        self.items = load_dataset(dataset)
        self.config = UkrConfig()
        self.app = build_app(self.config, project)
        self.stores = self.app.index()
        self.evidence: list[list[frozenset[str]]] | None = None  # novels: units per sentence
        self.short: list[bool] = []

    def chain(self, settings: Setting) -> RAGChain:
        query = self.config.query
        update: dict[str, Any] = dict(settings.get("query", {}))
        for section in ("ppr", "lazy"):
            if settings.get(section):
                update[section] = getattr(query, section).model_copy(update=settings[section])
        query = query.model_copy(update=update)
        return RAGChain(self.stores, embedder=self.app.embedder, chat_model=None,
                        budget_tokenizer=self.app.budget_tokenizer, config=query)  # fmt: skip

    async def run(self, strategy: str, settings: Setting) -> dict[str, Any]:
        chain = self.chain(settings)
        if self.evidence is None:
            report = await evaluate(chain, self.items, retrieval_only=True, strategy=strategy)
            at5 = [q.recall.get("@5", 0.0) for q in report.questions]
            at10 = [q.recall.get("@10", 0.0) for q in report.questions]
            return {"at5": at5, "at10": at10}
        at5, at10, aic = [], [], []
        for item, sentences, short in zip(self.items, self.evidence, self.short, strict=True):
            out = await chain.retrieve(item.question, strategy=strategy, top_k=10)
            found = [s for s in out.sources if s.kind == "text_unit"][:10]
            units = [s.text for s in found]
            for k, acc in ((5, at5), (10, at10)):
                ids = {s.id for s in found[:k]}
                if sentences:
                    acc.append(sum(bool(ids & s) for s in sentences) / len(sentences))
            if short:
                aic.append(1.0 if answer_in_text(item.answers, "\n".join(units)) else 0.0)
        return {"at5": at5, "at10": at10, "aic10": aic}


async def musique(data: Path, tmp: Path) -> QuestionSet:
    prepare_hipporag(data / "musique_train.json", data / "musique_train_corpus.json",
                     tmp / "musique", force=True)  # fmt: skip
    t = index(tmp / "musique" / "corpus", tmp / "lazy")
    print(f"== MuSiQue: 100 questions, 1,890 passages (lazy index {t:.0f} s)")
    return QuestionSet("MuSiQue", tmp / "lazy", tmp / "musique" / "dataset.jsonl")


async def novels(bench: Path, tmp: Path) -> QuestionSet:
    corpus = tmp / "novels"
    corpus.mkdir(exist_ok=True)
    for novel in json.loads((bench / "novel.json").read_text()):
        (corpus / f"{novel['corpus_name']}.txt").write_text(novel["context"], encoding="utf-8")
    t = index(corpus, tmp / "novels_p")
    questions = [q for q in json.loads((bench / "novel_questions.json").read_text())
                 if q["question_type"] in ("Fact Retrieval", "Complex Reasoning")]  # fmt: skip
    # locate the evidence in the index's own text units
    probe = build_app(UkrConfig(), tmp / "novels_p")
    stores = probe.index()
    units = await load_units(stores, await processed_unit_paths(stores))
    await probe.aclose()
    by_novel: dict[str, list[tuple[str, list[str]]]] = {}
    for u in units:
        by_novel.setdefault(Path(u.path).stem, []).append(
            (u.id, lexical_terms(u.text), normalise(u.text)))
    kept, evidence, verbatim, some = [], [], 0, 0
    for q in questions:
        sentences = [s for s in q["evidence"].split("; ") if s.strip()]
        texts = by_novel.get(q["source"], [])
        verbatim += bool(sentences) and all(
            any(normalise(s) in t for _, _, t in texts) for s in sentences)
        located = [locate(s, texts) for s in sentences]
        some += any(located)
        whole = bool(sentences) and all(located)
        if whole or len(q["answer"].split()) <= 4:
            kept.append(q)
            evidence.append(located if whole else [])
    dataset = tmp / "novels_evidence.jsonl"
    dataset.write_text("".join(
        json.dumps({"id": q["id"], "question": q["question"], "answers": [q["answer"]],
                    "supporting": []}) + "\n" for q in kept
    ))  # fmt: skip
    qs = QuestionSet("novels", tmp / "novels_p", dataset)
    qs.evidence = evidence
    qs.short = [len(q["answer"].split()) <= 4 for q in kept]
    print(f"== novels: {len(questions)} fact-retrieval and complex-reasoning questions; "
          f"every evidence sentence located in a text unit for {sum(map(bool, evidence))} "
          f"(some for {some}; all verbatim for {verbatim}); {sum(qs.short)} have answers of "
          f"at most four words; {len(units)} units "
          f"(lazy index {t:.0f} s)")  # fmt: skip
    return qs


def compare(r: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """Means at @5/@10 and the paired-bootstrap CIs of the difference to ``base``."""
    out: dict[str, Any] = {"@5": float(np.mean(r["at5"])), "@10": float(np.mean(r["at10"]))}
    for k in ("5", "10"):
        out[f"d@{k}"] = bootstrap([a - b for a, b in zip(r[f"at{k}"], base[f"at{k}"],
                                                          strict=True)])  # fmt: skip
    if r.get("aic10"):
        out["aic@10"] = float(np.mean(r["aic10"]))
        out["d_aic@10"] = bootstrap([a - b for a, b in zip(r["aic10"], base["aic10"],
                                                            strict=True)])  # fmt: skip
    return out


def line(name: str, c: dict[str, Any]) -> str:
    d5, d10 = c["d@5"], c["d@10"]
    aic = (f"  answer@10 {c['aic@10']:.3f} ({c['d_aic@10'][0]:+.3f})" if "aic@10" in c
           else "")
    return (f"  {name:<50} {c['@5']:.3f} {c['@10']:.3f}   "
            f"{d5[0]:+.3f} ({d5[1]:+.3f}..{d5[2]:+.3f})  "
            f"{d10[0]:+.3f} ({d10[1]:+.3f}..{d10[2]:+.3f}){aic}")


def objective(c: dict[str, Any]) -> float:
    return (c["@5"] + c["@10"]) / 2


async def main_async(args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    sets = [await musique(args.data, tmp), await novels(args.bench, tmp)]
    grid = candidates(args.quick)
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for qs in sets:
        started = time.perf_counter()
        raw: dict[str, dict[str, Any]] = {}
        print(f"== {qs.name}: recall @5 @10, then the difference to hybrid (default weights) "
              f"@5 and @10 (95% CI)")  # fmt: skip
        table[qs.name] = {}
        base = await qs.run("naive", {})
        for name, strategy, settings in grid:
            raw[name] = await qs.run(strategy, settings) if name != grid[0][0] else base
            table[qs.name][name] = compare(raw[name], base)
            table[qs.name][name]["strategy"] = strategy
            table[qs.name][name]["settings"] = settings
            print(line(name, table[qs.name][name]), flush=True)
        print(f"  ({time.perf_counter() - started:.0f} s)")
        await qs.app.aclose()

    return {"table": table, **select(table, [qs.name for qs in sets])}


def gain(c: dict[str, Any]) -> float:
    """Mean of the @5 and @10 gains over hybrid."""
    return float(c["d@5"][0] + c["d@10"][0]) / 2


def select(table: dict[str, dict[str, dict[str, Any]]], sets: list[str]) -> dict[str, Any]:
    """Print and return the leave-one-set-out choices and the final defaults per strategy.

    Final rule (tuned on both sets): among the settings at or above hybrid at @5 and @10 on
    every set, the one with the greatest gain averaged over the sets; when none is, the one
    whose worse set gains most.
    """
    out: dict[str, Any] = {"loo": {}, "final": {}}
    print("== leave one set out: the best setting (mean of @5 and @10) on the tuning set, then")
    print("   on the held-out set (difference to hybrid at default weights, 95% CI)")
    first = table[sets[0]]
    for strategy in ("ppr", "lazy", "naive"):
        names = [n for n, c in first.items()
                 if c["strategy"] == strategy and "defaults of this" not in n]  # fmt: skip
        if not names:
            continue
        for tune, held in ((sets[0], sets[1]), (sets[1], sets[0])):
            best = max(names, key=lambda n, t=tune: objective(table[t][n]))
            out["loo"][f"{strategy}: {tune} -> {held}"] = best
            print(f"  {strategy}, tuned on {tune}: {best}")
            print(line(f"{tune} (tuned on)", table[tune][best]))
            print(line(f"{held} (held out)", table[held][best]))
        safe = [n for n in names if all(table[s][n]["d@5"][0] >= 0 and table[s][n]["d@10"][0]
                                        >= 0 for s in sets)]  # fmt: skip
        if safe:
            final = max(safe, key=lambda n: sum(gain(table[s][n]) for s in sets))
            rule = "not below hybrid on any set, the best mean gain"
        else:
            final = max(names, key=lambda n: min(gain(table[s][n]) for s in sets))
            rule = "below hybrid somewhere in every setting: the best worse-set gain"
        out["final"][strategy] = final
        print(f"  {strategy}, final (tuned on both; {rule}): {final}")
        for s in sets:
            print(line(s, table[s][final]))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--table", type=Path, default=None)
    args = parser.parse_args()
    if args.table is not None:  # the selection again, from an earlier run's --json
        table = json.loads(args.table.read_text())["table"]
        select(table, list(table))
        return
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
