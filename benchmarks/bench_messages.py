"""Message archives: provenance recall and the share of the corpus an answer cites.

The corpus is the deterministic synthetic iMessage ``chat.db`` of
`tests.support.chat_corpus` (seed 13: 10,000 messages, 50 threads, 2013-01-02 → 2024-12-26,
246 scripted messages carrying the anchors of 30 golden questions: 10 aggregation, 10
verification, 10 relation). It is indexed through the product path, ``ukr index chat.db
--source imessage --handles handles.yaml`` (no LLM: the `lazy` concept graph), and every
golden question is asked with each strategy an LLM-free index serves.

Per strategy and question kind:

- provenance recall: |evidence guids ∩ required| / |required|, where the evidence is the
  messages the answer rests on (`RAGOutput.evidence`: the messages it cites);
- cited share: |evidence| / messages in the corpus, per answer (seed 004's "share of corpus
  cited": LightRAG 17.2% at recall 0.515, Graphiti 1.9% at 0.490);
- the same two over every message of the packed context (`Source.messages`): what a
  document-grain engine would cite;
- fact recall: AND-of-OR groups found in the answer text (extractive answers here);
- query latency p50 (the bundled embedder on CPU, nothing memoized).

Then the incremental cost: 10 new messages on a new day appended to the archive and the same
command run again (transcripts new / changed / unchanged, time).

Usage:  python benchmarks/bench_messages.py [--workdir DIR] [--messages N] [--threads N]
            [--strategies naive,lazy,ppr] [--sentences N] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.chat_corpus import (  # noqa: E402
    ChatCorpus,
    GoldenQuestion,
    generate_chat_corpus,
    write_handles_yaml,
)
from tests.support.chatdb import apple_nanos  # noqa: E402

from unified_kg_rag import RAGChain, RAGInput, build_app  # noqa: E402
from unified_kg_rag.config.load import load_config  # noqa: E402

UKR = str(Path(sys.executable).with_name("ukr"))


def index(project: Path, corpus: ChatCorpus, handles: Path) -> dict[str, Any]:
    """Run ``ukr index`` on the archive (the product path); return its JSON report."""
    started = time.perf_counter()
    proc = subprocess.run(
        [UKR, "index", str(corpus.path), "--source", "imessage", "--handles", str(handles),
         "--project", str(project), "--json"],
        capture_output=True, text=True, check=False,
    )
    if proc.returncode not in (0, 3):
        raise SystemExit(f"ukr index failed ({proc.returncode}): {proc.stderr[-2000:]}")
    report: dict[str, Any] = json.loads(proc.stdout)
    report["wall_s"] = round(time.perf_counter() - started, 1)
    return report


def fact_recall(answer: str, facts: tuple[tuple[str, ...], ...]) -> float:
    """1.0 when every OR-group has an alternative in the answer (case-insensitive)."""
    text = answer.casefold()
    return float(all(any(alt.casefold() in text for alt in group) for group in facts))


async def ask_all(
    project: Path, questions: tuple[GoldenQuestion, ...], strategies: list[str], total: int,
    sentences: int,
) -> dict[str, list[dict[str, Any]]]:
    config = load_config(project)
    query = config.query.model_copy(update={"extractive_messages": sentences})
    rows: dict[str, list[dict[str, Any]]] = {}
    async with build_app(config, project) as app:
        chain = RAGChain(app.index(), embedder=app.embedder, chat_model=None,
                         budget_tokenizer=app.budget_tokenizer, config=query)
        for strategy in strategies:
            rows[strategy] = []
            for q in questions:
                started = time.perf_counter()
                out = await chain.ainvoke(RAGInput(question=q.question, strategy=strategy))
                ms = (time.perf_counter() - started) * 1000
                required = set(q.required_guids)
                evidence = {m.guid for m in out.evidence}
                context = {m.guid for s in out.sources for m in s.messages}
                rows[strategy].append({
                    "id": q.id, "kind": q.kind,
                    "recall": len(evidence & required) / len(required),
                    "share": len(evidence) / total,
                    "context_recall": len(context & required) / len(required),
                    "context_share": len(context) / total,
                    "fact": fact_recall(out.answer, q.facts),
                    "cited": len(evidence), "context_messages": len(context), "ms": ms,
                })
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, float]:
    def mean(key: str) -> float:
        return statistics.fmean(r[key] for r in rows)

    return {
        "recall": mean("recall"), "share": mean("share"), "cited": mean("cited"),
        "context_recall": mean("context_recall"), "context_share": mean("context_share"),
        "context_messages": mean("context_messages"), "fact": mean("fact"),
        "p50_ms": statistics.median(r["ms"] for r in rows),
    }


def print_table(rows: dict[str, list[dict[str, Any]]]) -> None:
    head = (f"{'strategy':10} {'kind':13} {'prov.recall':>11} {'cited/ans':>9} {'share':>7} "
            f"{'ctx recall':>10} {'ctx msgs':>8} {'ctx share':>9} {'fact':>6} {'p50 ms':>7}")
    print(head)
    print("-" * len(head))
    for strategy, items in rows.items():
        for kind in ("all", "aggregation", "verification", "relation"):
            part = [r for r in items if kind == "all" or r["kind"] == kind]
            s = summarize(part)
            print(f"{strategy:10} {kind:13} {s['recall']:11.3f} {s['cited']:9.1f} "
                  f"{s['share']:7.2%} {s['context_recall']:10.3f} {s['context_messages']:8.1f} "
                  f"{s['context_share']:9.2%} {s['fact']:6.3f} {s['p50_ms']:7.0f}")


def append_messages(path: Path, n: int) -> None:
    """Append ``n`` messages on a new day (after the last one) to an existing thread."""
    conn = sqlite3.connect(path)
    try:
        for trigger, in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'"):
            conn.execute(f'DROP TRIGGER "{trigger}"')  # Apple's triggers call Apple functions
        chat_id, handle_id = conn.execute(
            "SELECT c.ROWID, j.handle_id FROM chat c JOIN chat_handle_join j "
            "ON j.chat_id = c.ROWID ORDER BY c.ROWID LIMIT 1").fetchone()
        last = datetime(2024, 12, 28, 9, 0, tzinfo=UTC)
        for i in range(n):
            guid = f"BENCH-APPEND-{i:04d}"
            cur = conn.execute(
                "INSERT INTO message (guid, text, handle_id, is_from_me, date) "
                "VALUES (?, ?, ?, ?, ?)",
                (guid, f"Appended note {i} about the weekend plans", handle_id, i % 2,
                 apple_nanos(last + timedelta(minutes=i))))
            conn.execute("INSERT INTO chat_message_join (chat_id, message_id) VALUES (?, ?)",
                         (chat_id, cur.lastrowid))
        conn.commit()
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--messages", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=50)
    parser.add_argument("--strategies", default="naive,lazy,ppr,auto")
    parser.add_argument("--sentences", type=int, default=4,
                        help="query.extractive_messages: messages an extractive answer quotes")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--reuse", action="store_true",
                        help="query the index already in --workdir (no generation, no build)")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-messages-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    project = work / "project"
    target = work / ("chat-reused.db" if args.reuse else "chat.db")
    corpus = generate_chat_corpus(target, seed=13, messages=args.messages, threads=args.threads)
    handles = write_handles_yaml(corpus, work / "handles.yaml")
    print(f"corpus: {corpus.messages:,} messages, {corpus.threads} threads, "
          f"{corpus.first_day}..{corpus.last_day}, {len(corpus.questions)} questions "
          f"({time.perf_counter() - started:.1f} s)")
    first: dict[str, Any] = {}
    if not args.reuse:
        first = index(project, corpus, handles)
        m = first["messages"]
        print(f"index: {m['messages']:,} messages → {m['transcripts']} transcripts, "
              f"{first['text_units_written']} text units, {first['wall_s']} s (ukr index, wall)")
    rows = asyncio.run(ask_all(project, corpus.questions, args.strategies.split(","),
                               corpus.messages, args.sentences))
    print_table(rows)
    if args.reuse:
        return
    append_messages(corpus.path, 10)
    second = index(project, corpus, handles)
    m2 = second["messages"]
    print(f"incremental (+10 messages on a new day): {m2['new']} new, {m2['changed']} changed, "
          f"{m2['unchanged']} unchanged, {m2['removed']} removed transcripts; "
          f"{second['text_units_embedded']} text units embedded; {second['wall_s']} s")
    if args.json:
        args.json.write_text(json.dumps({"index": first, "rows": rows, "incremental": second},
                                        indent=1, default=str))


if __name__ == "__main__":
    main()
