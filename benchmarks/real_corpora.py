"""Index two real corpora and answer a few questions over each (prints the answers).

- A Christmas Carol (../shared/data/narrative/a_christmas_carol.txt), one document.
- The 60 "Behind the Tech" podcast transcripts of the GraphRAG paper
  (../shared/data/global/ms_graphrag_benchmark/kevin_scott_podcasts.jsonl: 1,669 parts,
  joined back into one text file per episode, in part order).

The data is read in place and written to a temporary folder, never into the repository.
Usage:  python benchmarks/real_corpora.py [--shared ../shared/data] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = {
    "carol": [
        "What are the names of the three spirits that visit Scrooge?",
        "Who was Jacob Marley and what did he carry?",
        "What happens to Tiny Tim?",
    ],
    "podcasts": [
        "Which guests talk about their childhood interest in science or engineering?",
        "What does Kevin Scott say about artificial intelligence and jobs?",
        "Who talked about open source software?",
    ],
}


def write_podcasts(jsonl: Path, folder: Path) -> int:
    parts: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for line in jsonl.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        match = re.match(r"input/(.+)-part(\d+)\.txt$", record["file"])
        episode, n = (match.group(1), int(match.group(2))) if match else (record["file"], 0)
        parts[episode].append((n, record["text"]))
    folder.mkdir(parents=True, exist_ok=True)
    for episode, chunks in parts.items():
        name = re.sub(r"[^\w.-]+", "_", episode).strip("_")[:120] or "episode"
        text = "\n".join(t for _, t in sorted(chunks))
        (folder / f"{name}.txt").write_text(text, encoding="utf-8")
    return len(parts)


def ukr(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "unified_kg_rag.cli", *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def run(name: str, corpus: Path, project: Path) -> None:
    started = time.perf_counter()
    result = ukr("index", str(corpus), "-C", str(project), "--json")
    if result.returncode not in (0, 3):
        sys.exit(f"index failed: {result.stderr}")
    report = json.loads(result.stdout)
    print(f"\n== {name}: {report['documents_found']} documents, "
          f"{report['text_units_written']} text units, indexed in "
          f"{time.perf_counter() - started:.1f} s")  # fmt: skip
    for question in QUESTIONS[name]:
        out = ukr("query", question, "-C", str(project), "--json")
        if out.returncode != 0:
            print(f"\nQ: {question}\n  failed: {out.stderr.strip()}")
            continue
        answer = json.loads(out.stdout)
        print(f"\nQ: {question}  ({answer['timings_ms']['total']:.0f} ms)")
        print(answer["answer"])
        for s in answer["sources"][:5]:
            print(f"  [{s['n']}] {s['path']} chars {s['start_char']}-{s['end_char']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--keep", type=Path, default=None, help="work here instead of a temp dir")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ukr-real-") as tmp:
        work = args.keep or Path(tmp)
        carol = work / "carol"
        carol.mkdir(parents=True, exist_ok=True)
        source = args.shared / "narrative" / "a_christmas_carol.txt"
        (carol / source.name).write_bytes(source.read_bytes())
        run("carol", carol, work / "carol-project")
        episodes = write_podcasts(
            args.shared / "global" / "ms_graphrag_benchmark" / "kevin_scott_podcasts.jsonl",
            work / "podcasts",
        )
        print(f"\n({episodes} podcast episodes written)")
        run("podcasts", work / "podcasts", work / "podcasts-project")


if __name__ == "__main__":
    main()
