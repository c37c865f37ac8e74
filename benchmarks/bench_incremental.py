"""Incremental indexing and deletion on the replay-built MuSiQue graph index (issue #7, Measured).

HippoRAG's recorded GPT-3.5 extraction of the 1,890 MuSiQue passages is served by the replay
model (``tests/support/replay_server.py``) through a real OpenAI-compatible HTTP server on
127.0.0.1; every run is a real ``ukr index`` subprocess (`bench_graph_index.run_index`).

(a) Adding 1% of the corpus: 19 passages (a seeded sample) are taken out of the corpus before
    the base build, which indexes the other 1,871 from scratch; they are then put back and
    ``ukr index`` runs again. Reported: the model calls (cache hits excluded) of the add run
    against the base build's, per stage (extraction incl. gleaning / summaries / reports).
    These are passages the base build never saw, so nothing of theirs is in the response
    cache or the record store: their extraction is paid in full, as a real addition's is.
(b) Deleting 10% of the documents: 189 files (a seeded sample) are removed from the folder
    and ``ukr index FOLDER --yes`` runs. Reported: its wall time, and the items that cite
    only deleted text units, counted by SQL over both stores (graph store: entities,
    relationships, their lineage rows, community reports; search index: text-unit, entity,
    relationship and report records, including records whose graph item is gone). Target:
    zero.

With ``--project DIR`` (an index of the full corpus built by ``bench_graph_index``/a plain
``ukr index``), (b) runs on a COPY of it (the source is never written): its source scope is
read from its registry and pinned with ``UKR_PARSING__SOURCE_SCOPE``, so a fresh copy of the
corpus maps to the same documents. Without it, (b) runs on the index (a) left (all 1,890).

Usage:  python benchmarks/bench_incremental.py [--data DIR] [--project DIR] [--skip-add]
        [--json OUT.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_graph_index import DEFAULT_DATA, OPENIE, _env, _index_cmd  # noqa: E402
from benchmarks.bench_index_query import write_corpus  # noqa: E402
from tests.support.openai_server import FakeOpenAIServer  # noqa: E402
from tests.support.replay_server import ReplayModel  # noqa: E402

ADD_SHARE = 0.01
DELETE_SHARE = 0.10
SEED = 7
STAGES = {"extraction": ("extract",), "summaries": ("summarize",), "reports": ("reports",)}


def run_index(
    corpus: Path, project: Path, server: FakeOpenAIServer, *args: str, **env: str
) -> dict[str, Any]:
    """Run ``ukr index CORPUS -C PROJECT --json [args]`` against the replay server."""
    cmd = [*_index_cmd(corpus, project), *args]
    started = time.perf_counter()
    proc = subprocess.run(cmd, env=_env(server, **env), capture_output=True, text=True,
                          check=False)
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 3):
        sys.exit(f"ukr index failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    report: dict[str, Any] = json.loads(proc.stdout)
    report["wall_s"] = round(wall, 1)
    return report


def _calls(report: dict[str, Any]) -> dict[str, int]:
    """Model calls (cache hits excluded) per stage group, and in all, of one run's report."""
    graph = report.get("graph") or {}
    stages = graph.get("stages") or {}
    out = {
        group: sum(stages.get(n, {}).get("usage", {}).get("calls", 0) for n in names)
        for group, names in STAGES.items()
    }
    out["total"] = int(report.get("usage", {}).get("calls", sum(out.values())))
    return out


def _cache_hits(report: dict[str, Any]) -> int:
    return int(report.get("usage", {}).get("cache_hits", 0))


def add_one_percent(
    passages: list[dict[str, str]], tmp: Path, server: FakeOpenAIServer
) -> tuple[dict[str, Any], Path, Path]:
    """Build without 1% of the passages, add them back; return figures, corpus and project."""
    corpus, project = tmp / "corpus", tmp / "p"
    write_corpus(passages, corpus)
    files = sorted(corpus.iterdir())
    held = random.Random(SEED).sample(files, round(len(files) * ADD_SHARE))
    aside = tmp / "held_out"
    aside.mkdir()
    for f in held:
        f.rename(aside / f.name)
    requests_before = len(server.requests)
    base = run_index(corpus, project, server)
    base_requests = len(server.requests) - requests_before
    for f in held:
        (aside / f.name).rename(corpus / f.name)
    requests_before = len(server.requests)
    added = run_index(corpus, project, server)
    add_requests = len(server.requests) - requests_before
    base_calls, add_calls = _calls(base), _calls(added)
    out = {
        "documents_base": base["documents_new"],
        "documents_added": added["documents_new"],
        "base_wall_s": base["wall_s"],
        "add_wall_s": added["wall_s"],
        "base_calls": base_calls,
        "add_calls": add_calls,
        "base_http_requests": base_requests,
        "add_http_requests": add_requests,
        "add_cache_hits": _cache_hits(added),
        "ratio": {k: (round(add_calls[k] / v, 4) if v else None) for k, v in base_calls.items()},
        "add_graph": {k: added["graph"].get(k) for k in (
            "units_extracted", "records_reused", "entities", "relationships", "reports",
            "descriptions_summarized")},
    }
    return out, corpus, project


def _scope_of(db: Path) -> str:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        scopes = {s for (s,) in con.execute("SELECT DISTINCT source_scope FROM doc_records")}
    finally:
        con.close()
    if len(scopes) != 1:
        sys.exit(f"--project: expected one source scope in {db}, found {sorted(scopes)}")
    return scopes.pop()


def _doc_units(db: Path, paths: set[str]) -> set[str]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT path, data FROM doc_records WHERE index_name = 'default'")
        return {t for p, d in rows if p in paths for t in json.loads(d)["text_unit_ids"]}
    finally:
        con.close()


def citing_only_deleted(db: Path, deleted: set[str]) -> dict[str, int]:
    """Count items of both stores that cite only deleted text units (all should be 0).

    Also counts items citing any deleted unit (lineage must have been stripped) and search
    records of graph items the graph store no longer has (orphans).
    """
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    q = con.execute
    try:
        out: dict[str, int] = {}
        graph_ids: dict[str, set[str]] = {}
        for table, key in (("entities", "id"), ("relationships", "id"),
                           ("reports", "community_id")):
            only = anyref = 0
            ids: set[str] = set()
            for item_id, data in q(f"SELECT {key}, data FROM {table} "
                                   "WHERE index_name = 'default'"):
                ids.add(item_id)
                units = set(json.loads(data).get("text_unit_ids") or ())
                only += bool(units) and units <= deleted
                anyref += bool(units & deleted)
            graph_ids[table] = ids
            out[f"graph {table} citing only deleted"] = only
            out[f"graph {table} citing any deleted"] = anyref
        lineage: dict[tuple[str, str], set[str]] = {}
        for kind, item, unit in q("SELECT item_kind, item_id, text_unit_id FROM lineage "
                                  "WHERE index_name = 'default'"):
            lineage.setdefault((kind, item), set()).add(unit)
        out["lineage items citing only deleted"] = sum(u <= deleted for u in lineage.values())
        out["lineage rows of deleted units"] = sum(len(u & deleted) for u in lineage.values())
        members = {m for (d,) in q("SELECT data FROM communities WHERE index_name = 'default'")
                   for m in json.loads(d)["member_ids"]}
        out["community members not in the graph"] = len(members - graph_ids["entities"])
        search: dict[str, set[str]] = {}
        for collection, item_id in q("SELECT collection, id FROM search_records "
                                     "WHERE index_name = 'default'"):
            search.setdefault(collection, set()).add(item_id)
        out["search text_units deleted"] = len(search.get("text_units", set()) & deleted)
        for collection, table in (("entities", "entities"), ("relationships", "relationships"),
                                  ("reports", "reports")):
            out[f"search {collection} without graph item"] = len(
                search.get(collection, set()) - graph_ids[table])
        return out
    finally:
        con.close()


def delete_ten_percent(
    corpus: Path, project: Path, server: FakeOpenAIServer, **env: str
) -> dict[str, Any]:
    """Remove 10% of the corpus files, run ``ukr index --yes``, check both stores."""
    db = project / ".ukr" / "ukr.db"
    files = sorted(corpus.iterdir())
    doomed = random.Random(SEED + 1).sample(files, round(len(files) * DELETE_SHARE))
    deleted_units = _doc_units(db, {f.name for f in doomed})
    for f in doomed:
        f.unlink()
    requests_before = len(server.requests)
    report = run_index(corpus, project, server, "--yes", **env)
    checks = citing_only_deleted(db, deleted_units)
    graph = report.get("graph") or {}
    return {
        "documents_deleted": report["documents_deleted"],
        "documents_unchanged": report["documents_unchanged"],
        "text_units_deleted": report["text_units_deleted"],
        "records_removed": report.get("records_removed"),
        "wall_s": report["wall_s"],
        "elapsed_s": report["elapsed_s"],
        "stage_s": {k: v["seconds"] for k, v in (graph.get("stages") or {}).items()},
        "calls": _calls(report),
        "cache_hits": _cache_hits(report),
        "http_requests": len(server.requests) - requests_before,
        "deleted_units_known": len(deleted_units),
        "checks": checks,
        "violations": sum(checks.values()),
        "entities": graph.get("entities"),
        "relationships": graph.get("relationships"),
        "reports": graph.get("reports"),
    }


def _run_index_cmd_note() -> str:
    return ("python -m unified_kg_rag.cli index CORPUS -C PROJECT --json [--yes], env "
            "UKR_LLM__KIND=openai UKR_LLM__OPENAI__BASE_URL=<replay server> "
            "UKR_LLM__OPENAI__MODEL=gpt-3.5-turbo-1106-replay UKR_LLM__MAX_CONCURRENCY=16 "
            "UKR_GRAPH__UNIT_CONCURRENCY=16")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--project", type=Path, default=None,
                        help="a built index of the full corpus; (b) runs on a copy of it")
    parser.add_argument("--skip-add", action="store_true", help="only (b); needs --project")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    if args.skip_add and args.project is None:
        parser.error("--skip-add needs --project")
    passages = json.loads((args.data / "musique_train_corpus.json").read_text())
    out: dict[str, Any] = {"command": " ".join([Path(sys.executable).name, *sys.argv])}
    with tempfile.TemporaryDirectory() as tmp_name, \
            FakeOpenAIServer(reply=ReplayModel(args.data / OPENIE)) as server:
        tmp = Path(tmp_name)
        corpus = project = None
        if not args.skip_add:
            out["add"], corpus, project = add_one_percent(passages, tmp, server)
        env: dict[str, str] = {}
        if args.project is not None:
            project = tmp / "copy"
            shutil.copytree(args.project, project)
            env["UKR_PARSING__SOURCE_SCOPE"] = _scope_of(project / ".ukr" / "ukr.db")
            corpus = tmp / "corpus_b"
            write_corpus(passages, corpus)
        assert corpus is not None
        assert project is not None
        out["delete"] = delete_ten_percent(corpus, project, server, **env)
        if args.project is not None:
            scope = env["UKR_PARSING__SOURCE_SCOPE"]
            out["delete"]["project"] = f"copy of {args.project} (scope {scope})"
    _print(out, len(passages))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2))


def _print(out: dict[str, Any], n: int) -> None:
    print(f"== incremental indexing, MuSiQue {n} passages, replayed GPT-3.5 extraction")
    print(f"  command: {out['command']}")
    print(f"  each run: {_run_index_cmd_note()}")
    if "add" in out:
        a = out["add"]
        print(f"(a) add 1%: {a['documents_added']} passages held out of the base build "
              f"({a['documents_base']} documents, {a['base_wall_s']} s), then added "
              f"({a['add_wall_s']} s)")
        print(f"  {'model calls':<12} {'base build':>10} {'add run':>8} {'ratio':>8}")
        for k in ("extraction", "summaries", "reports", "total"):
            ratio = a["ratio"][k]
            shown = f"{ratio:.4f}" if ratio is not None else "-"
            print(f"  {k:<12} {a['base_calls'][k]:>10} {a['add_calls'][k]:>8} {shown:>8}")
        print(f"  HTTP requests at the replay server: base {a['base_http_requests']}, "
              f"add {a['add_http_requests']}; add run cache hits {a['add_cache_hits']}")
        print(f"  add run graph: {a['add_graph']}")
    d = out["delete"]
    print(f"(b) delete 10%: {d['documents_deleted']} documents ({d['text_units_deleted']} text "
          f"units, {d['records_removed']} extraction records) removed, "
          f"{d['documents_unchanged']} unchanged" + (f"; on {d['project']}" if "project" in d
                                                     else ""))
    print(f"  wall (ukr index --yes, end to end) {d['wall_s']} s; stages {d['stage_s']}")
    print(f"  model calls {d['calls']}  cache hits {d['cache_hits']}  HTTP requests "
          f"{d['http_requests']}")
    print(f"  after: entities {d['entities']}  relationships {d['relationships']}  "
          f"reports {d['reports']}")
    print(f"  items citing deleted units ({d['deleted_units_known']} deleted units), both "
          f"stores, by SQL: {d['violations']} in all")
    for k, v in d["checks"].items():
        print(f"    {k:<44} {v}")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M')}")


if __name__ == "__main__":
    main()
