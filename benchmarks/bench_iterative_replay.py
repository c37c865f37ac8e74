"""`iterative` over `local` and `mix` on the replay-built MuSiQue graph, scripted controller.

The index is the one ``benchmarks/bench_strategies.py`` builds (``bench_graph_index.py``'s
build): MuSiQue's 1,890 passages with GPT-3.5-turbo-1106's recorded extraction (HippoRAG's
OpenIE file) served by the replay model through a real OpenAI-compatible server on 127.0.0.1,
methodologies ``graphrag`` and ``lightrag``. Queries are HippoRAG's 100 MuSiQue questions,
retrieval only (no answer call), top 10, as in bench_strategies: query entities are the
indexed names the question contains and the keywords are the question
(``query.llm_query_processing`` off), so nothing but the `iterative` controller calls a chat
model; the script checks that by counting the server's requests per arm and per prompt kind.

Arms: ``local``, ``iterative/local`` (``query.iterative.base: local``), ``mix``,
``iterative/mix``; optionally ``offline/local`` and ``offline/mix`` (`iterative` with no chat
model: the LLM-free bridge terms). Every setting but ``iterative.base`` is the default.

**The scripted controller** (`controller_reply`) is a `FakeOpenAIServer` (real HTTP on
127.0.0.1) whose reply to the ``iterative_controller.v1`` prompt is computed from the prompt
alone, deterministically. It stands in for a fast model that reads the context; it is not an
oracle: it sees exactly what a model would (the question, the packed candidates, the searches
made), never the supporting passages' labels or the answers. The rule:

- ``sufficient``: false while no search has been made yet (the prompt's "Searches already
  made" is ``(none)``: the verdict on round 0), true after; so at most one follow-up round
  and two controller calls per question.
- ``bridge_entities``: the capitalised names of the prompt's ``Passages`` section (maximal
  runs of capitalised words of 2+ letters, which connectors such as *of*, *for*, *the*, *de*
  may join, leading stopwords such as *The*/*In*/*He* and month names dropped, a trailing
  possessive cut; graph markup such as ``(ENTITY)`` or ``PUBLISHED_BY`` and all-capitals
  words are not names and break a run) that are not in the question (its
  case-folded text holds neither the name nor all of its words), ranked by how often they
  occur there (ties: first occurrence), at most 3. Round 0's candidates are what the prompt
  packs: passages, and for `local` its entities, relationships and reports too.
  ``--controller-blocks N`` reads only the first N numbered candidates (a model that reads
  the top of the context); by default all of them.
- ``next_queries``: ``"<question> <bridge>"`` for the first bridges, at most the prompt's
  ``at most N short search queries`` (2 by default).

Any other prompt gets ``{}`` and is counted as ``other`` (expected: none).

Metrics per arm, over the 100 questions: recall@2/@5/@10 and MRR by supporting passage (the
evaluation package's ``recall_at_k``/``mrr`` over the distinct documents of the packed text
units, in context order, as ``evaluate`` scores them), recall anywhere in the context, context
tokens, retrieval latency p50/p95 (the chain's rewrite+route+retrieve+fuse+pack timings; each
arm runs twice through an embedder that memoizes query embeddings and the second run is
timed and scored, so model time is the controller's HTTP round trips only; the first run's
rankings must equal the second's), controller calls per query, and the distribution of
``metadata["iterative"]["stop_reason"]``. The paired bootstrap interval
(``evaluation.statistics.paired_bootstrap``, 10,000 resamples, seed 0) of each `iterative` arm
minus its base at recall@2/@5/@10 and MRR says whether a difference is more than noise.

Usage:  python benchmarks/bench_iterative_replay.py [--project DIR] [--data DIR] [--json OUT]
            [--arms local,iterative/local,mix,iterative/mix] [--set KEY=JSON ...]
        (without --project, or with a folder that holds no index yet, the index is built
        first, about 5 minutes on 2 cores; --project keeps it there for the next run)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_graph_index import DEFAULT_DATA, OPENIE, run_index  # noqa: E402
from benchmarks.bench_strategies import MemoEmbedder  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer  # noqa: E402

from unified_kg_rag import RAGChain, build_app, load_dataset  # noqa: E402
from unified_kg_rag.config.models import QueryConfig, UkrConfig  # noqa: E402
from unified_kg_rag.evaluation.metrics import mrr, percentile, recall_at_k  # noqa: E402
from unified_kg_rag.evaluation.prepare import prepare_hipporag  # noqa: E402
from unified_kg_rag.evaluation.runner import source_names  # noqa: E402
from unified_kg_rag.evaluation.statistics import paired_bootstrap  # noqa: E402

ARMS = ["local", "iterative/local", "mix", "iterative/mix"]
CONTROLLER_MARK = "You judge whether the passages below are enough"
MAX_BRIDGES = 3
CONTROLLER_BLOCKS: int | None = None
"""Read only the first N numbered candidates of the prompt (``--controller-blocks``)."""
_TIMING_KEYS = ("rewrite", "route", "retrieve", "fuse", "pack")
_STOPWORD_TEXT = """
a an the in on at of to for from by with as and but or nor so yet if when while after before
during since until although though because following according he she it they we i you his
her its their our my your this that these those there here who whom whose what which where
why how is was are were be been has have had do does did not no some many most other others
both each all any several such one two three first later then also however further its
january february march april may june july august september october november december
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_WORD = r"[A-Z][\w'’-]*"
_LABEL = re.compile(r"\([A-Z_]+\)|\b[A-Z]+(?:_[A-Z]+)+\b|\b[A-Z]{2,}\b")
"""Graph markup in packed candidates: a type label ``(ENTITY)``, a relation ``PUBLISHED_BY``
or ``IS``, any all-capitals word; read as a break between names."""
_CONNECTOR = r"(?:of|for|the|de|del|da|du|la|le|von|van|der)"
_RUN = re.compile(rf"\b{_WORD}(?:(?:[ ]{_CONNECTOR})*[ ]{_WORD})*")


# ----------------------------------------------------------------- the scripted controller


def _section(prompt: str, start: str, end: str) -> str:
    i = prompt.find(start)
    if i < 0:
        return ""
    i += len(start)
    j = prompt.find(end, i)
    return prompt[i:] if j < 0 else prompt[i:j]


def capitalised_names(text: str) -> list[str]:
    """Return the capitalised names of ``text`` in order of occurrence, repeats kept.

    Graph markup (`_LABEL`: ``(ENTITY)``, ``PUBLISHED_BY``, any all-capitals word) breaks
    a run. A name is a maximal run of capitalised words (2+ letters each; lower-case connectors
    such as *of*, *for*, *the*, *de*, *von* may join them: *Society for the Exploration of
    Psychotherapy Integration*), its leading stopwords
    (`_STOPWORDS`: a sentence-initial *The*, *In*, *He* ..., month names) dropped and a
    trailing ``'s``
    cut; a run left empty is no name.
    """
    out: list[str] = []
    for m in _RUN.finditer(_LABEL.sub("\n", text)):
        words = [w for w in m.group(0).split(" ")]
        while words and (words[0].casefold() in _STOPWORDS
                         or sum(ch.isalpha() for ch in words[0]) < 2):  # fmt: skip
            words.pop(0)
        if words:
            words[-1] = re.sub(r"['’]s?$", "", words[-1])
        words = [w for w in words if sum(ch.isalpha() for ch in w) >= 2 or not w[0].isupper()]
        if words:
            out.append(" ".join(words))
    return out


def controller_reply(body: dict[str, Any]) -> str:
    """Return the scripted controller's JSON reply to one chat request (module docstring)."""
    users = [str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user"]
    prompt = users[-1] if users else ""
    if CONTROLLER_MARK not in prompt:
        return "{}"
    searched_block = _section(prompt, "Searches already made:\n", "\n\nPassages:\n").strip()
    head, _, tail = prompt.rpartition("\n\nQuestion: ")  # the passages come before it
    passages = _section(head, "\n\nPassages:\n", "\0")
    if CONTROLLER_BLOCKS is not None:  # "[n] " opens candidate n at a line start
        passages = re.split(rf"(?m)^\[{CONTROLLER_BLOCKS + 1}\] ", passages, maxsplit=1)[0]
    question = tail.split("\n\nReply with one JSON object")[0].strip()
    m = re.search(r"at most (\d+) short search queries", prompt)
    max_queries = int(m.group(1)) if m else 2
    if searched_block != "(none)":
        return json.dumps({"sufficient": True, "bridge_entities": [], "next_queries": []})
    q_fold = question.casefold()
    q_words = set(re.findall(r"\w+", q_fold))
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for name in capitalised_names(passages):
        fold = name.casefold()
        if fold in q_fold or set(re.findall(r"\w+", fold)) <= q_words:
            continue
        counts[name] += 1
        first.setdefault(name, len(first))
    bridges = sorted(counts, key=lambda n: (-counts[n], first[n]))[:MAX_BRIDGES]
    queries = [f"{question} {b}" for b in bridges[:max_queries]]
    return json.dumps({"sufficient": False, "bridge_entities": bridges, "next_queries": queries})


# ----------------------------------------------------------------- the measurement


def _score(out: Any, supporting: list[str]) -> dict[str, float]:
    docs: list[set[str]] = []
    seen: set[str] = set()
    for s in out.sources:
        key = s.document_id or s.id
        if s.kind == "text_unit" and key not in seen:
            seen.add(key)
            docs.append(source_names(s))
    row = {f"recall@{k}": recall_at_k(docs, supporting, k) for k in (2, 5, 10)}
    row["mrr"] = mrr(docs, supporting)
    row["recall_in_context"] = recall_at_k(docs, supporting, len(docs)) if docs else 0.0
    return row


def _ranking(out: Any) -> list[tuple[str, str]]:
    return [(s.kind, s.id) for s in out.sources]


async def run_arm(chain: RAGChain, items: list[Any], strategy: str,
                  server: FakeOpenAIServer) -> dict[str, Any]:  # fmt: skip
    """Run ``strategy`` over ``items`` twice (warm, then timed) and return its figures."""
    warm = [_ranking(await chain.retrieve(it.question, strategy=strategy, top_k=10))
            for it in items]  # fmt: skip
    before = len(server.requests)
    per_q: dict[str, list[float]] = {}
    latencies, tokens, calls, meta_calls = [], [], [], []
    stops: Counter[str] = Counter()
    rounds: Counter[int] = Counter()
    examples: list[dict[str, Any]] = []
    changed = 0
    for it, first in zip(items, warm, strict=True):
        n0 = len(server.requests)
        out = await chain.retrieve(it.question, strategy=strategy, top_k=10)
        calls.append(len(server.requests) - n0)
        meta_calls.append(int(out.metadata.get("llm_calls", 0) or 0))
        changed += _ranking(out) != first
        for k, v in _score(out, it.supporting).items():
            per_q.setdefault(k, []).append(v)
        latencies.append(sum(out.timings_ms.get(k, 0.0) for k in _TIMING_KEYS))
        tokens.append(out.context_tokens)
        info = out.metadata.get("iterative")
        if isinstance(info, dict):
            stops[str(info.get("stop_reason"))] += 1
            rounds[int(info.get("rounds", 0))] += 1
            if len(examples) < 3:
                examples.append({"question": it.question, "searched": info.get("searched"),
                                 "stop_reason": info.get("stop_reason")})  # fmt: skip
        if out.metadata.get("degraded"):
            stops["(degraded: " + ",".join(out.metadata["degraded"]) + ")"] += 1
    kinds = Counter("controller" if CONTROLLER_MARK in json.dumps(r.body) else "other"
                    for r in server.requests[before:])  # fmt: skip
    n = len(items)
    return {
        **{k: sum(v) / n for k, v in per_q.items()},
        "context_tokens": sum(tokens) / n,
        "retrieval_p50_ms": percentile(latencies, 50),
        "retrieval_p95_ms": percentile(latencies, 95),
        "controller_calls_per_q": sum(calls) / n,
        "metadata_llm_calls_per_q": sum(meta_calls) / n,
        "requests_by_prompt": dict(kinds),
        "stop_reasons": dict(stops),
        "rounds": {str(k): v for k, v in sorted(rounds.items())},
        "rankings_changed_between_runs": changed,
        "examples": examples,
        "per_q": per_q,
    }


def _query_config(base: str, overrides: dict[str, Any]) -> QueryConfig:
    fields = UkrConfig().query.model_dump()
    fields["llm_query_processing"] = False
    fields["iterative"]["base"] = base
    for key, value in overrides.items():  # dotted keys reach into sections
        *path, last = key.split(".")
        section = fields
        for part in path:
            section = section[part]
        section[last] = value
    return QueryConfig.model_validate(fields)


async def measure(project: Path, dataset: Path, arms: list[str], overrides: dict[str, Any],
                  server: FakeOpenAIServer,
                  limit: int | None = None) -> dict[str, Any]:  # fmt: skip
    """Return each arm's figures (`run_arm`) over the questions of ``dataset``."""
    items = [it for it in load_dataset(dataset) if it.supporting][:limit]
    config = UkrConfig.model_validate({"llm": {
        "kind": "openai", "cache": False, "max_retries": 0,
        "openai": {"base_url": server.base_url, "api_key": "scripted",
                   "model": "scripted-controller"},
    }})  # fmt: skip
    out: dict[str, Any] = {}
    async with build_app(config, project) as app:
        embedder = MemoEmbedder(app.embedder)
        for arm in arms:
            strategy, _, base = arm.partition("/")
            chat = None if strategy == "offline" else app.chat_model
            chain = RAGChain(app.index(), embedder=embedder, chat_model=chat,
                             budget_tokenizer=app.budget_tokenizer,
                             config=_query_config(base or "local", overrides),
                             reranker=app.reranker)  # fmt: skip
            print(f"  running {arm} ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            name = "iterative" if strategy == "offline" else strategy
            out[arm] = await run_arm(chain, items, name, server)
            print(f"  {arm} done in {time.perf_counter() - t0:.0f} s", file=sys.stderr,
                  flush=True)  # fmt: skip
    return out


def _base_of(arm: str) -> str | None:
    strategy, _, base = arm.partition("/")
    return base if strategy in ("iterative", "offline") else None


def report(rows: dict[str, Any]) -> None:
    """Print the table, and fill each `iterative` arm's ``vs_base`` intervals."""
    print(f"  {'arm':<16} {'@2':>6} {'@5':>6} {'@10':>6} {'MRR':>6} {'in ctx':>7} "
          f"{'tokens':>7} {'p50 ms':>7} {'p95 ms':>7} {'calls/q':>7}")  # fmt: skip
    for arm, r in rows.items():
        print(f"  {arm:<16} {r['recall@2']:.3f}  {r['recall@5']:.3f}  {r['recall@10']:.3f}  "
              f"{r['mrr']:.3f}  {r['recall_in_context']:.3f}  {r['context_tokens']:>6.0f}  "
              f"{r['retrieval_p50_ms']:>6.1f}  {r['retrieval_p95_ms']:>6.1f}  "
              f"{r['controller_calls_per_q']:>6.2f}")  # fmt: skip
    print("  paired bootstrap, arm minus its base (95% CI):")
    for arm, r in rows.items():
        base = _base_of(arm)
        if base is None or base not in rows:
            continue
        parts = []
        r["vs_base"] = {}
        for metric in ("recall@2", "recall@5", "recall@10", "mrr"):
            ci = paired_bootstrap(r["per_q"][metric], rows[base]["per_q"][metric])
            r["vs_base"][metric] = [ci.estimate, ci.low, ci.high]
            parts.append(f"{metric} {ci.estimate:+.3f} ({ci.low:+.3f}..{ci.high:+.3f})")
        gained = sum(a > b for a, b in zip(r["per_q"]["recall@10"],
                                           rows[base]["per_q"]["recall@10"], strict=True))
        lost = sum(a < b for a, b in zip(r["per_q"]["recall@10"],
                                         rows[base]["per_q"]["recall@10"], strict=True))
        r["vs_base"]["questions_up_down@10"] = [gained, lost]  # fmt: skip
        print(f"  {arm:<16} vs {base}: " + "  ".join(parts) +
              f"  (@10: {gained} questions up, {lost} down)")  # fmt: skip
    for arm, r in rows.items():
        print(f"  {arm:<16} requests {r['requests_by_prompt'] or '{}'}  metadata llm_calls/q "
              f"{r['metadata_llm_calls_per_q']:.2f}  stop reasons {r['stop_reasons'] or '-'}  "
              f"rounds {r['rounds'] or '-'}  rankings changed between runs "
              f"{r['rankings_changed_between_runs']}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", type=Path, default=None,
                        help="an index built by this script or bench_strategies.py (built "
                        "there first when the folder holds none, kept for later runs)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--arms", default=",".join(ARMS),
                        help="comma-separated: local, mix, iterative/BASE (scripted "
                        "controller), offline/BASE (iterative without a chat model)")
    parser.add_argument("--controller-blocks", type=int, default=None,
                        help="the scripted controller reads only the first N candidates")
    parser.add_argument("--limit", type=int, default=None, help="the first N questions only")
    parser.add_argument("--set", action="append", default=[],
                        help="query override for every arm as JSON key=value, e.g. "
                        "--set iterative.max_next_queries=3")
    args = parser.parse_args()
    overrides = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    arms = args.arms.split(",")
    global CONTROLLER_BLOCKS
    CONTROLLER_BLOCKS = args.controller_blocks
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        prepare_hipporag(args.data / "musique_train.json",
                         args.data / "musique_train_corpus.json", tmp / "musique", force=True)
        project = args.project
        if project is None or not (project / ".ukr").exists():
            from tests.support.replay_server import ReplayModel

            project = project or tmp / "p"
            with FakeOpenAIServer(reply=ReplayModel(args.data / OPENIE)) as replay:
                built = run_index(tmp / "musique" / "corpus", project, replay)
            print(f"== index built in {built['wall_s']} s")
        with FakeOpenAIServer(reply=controller_reply) as server:
            rows = asyncio.run(measure(project, tmp / "musique" / "dataset.jsonl", arms,
                                       overrides, server, args.limit))  # fmt: skip
    n = len(next(iter(rows.values()))["per_q"]["mrr"]) if rows else 0
    print(f"== MuSiQue, {n} questions, retrieval only, replay-built graph index; "
          "iterative's controller scripted (see the module docstring)")
    report(rows)
    if args.json:
        args.json.write_text(json.dumps({k: {m: v for m, v in r.items() if m != "per_q"}
                                         for k, r in rows.items()}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
