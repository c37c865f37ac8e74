"""Two ``ukr serve`` processes on one PostgreSQL database: both answer, one writes (issue 23).

Each server has its own project directory (as two machines behind a load balancer would):
the index lives in PostgreSQL, the job records and uploads in each project. The embedding
model is a fake OpenAI-compatible server on 127.0.0.1; a delay it adds to every call makes the
write job last while the other server is asked to write and to answer.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from benchmarks.bench_pg_servers import run_load

from tests.support.openai_server import FakeOpenAIServer, Scripted
from tests.support.postgres import fresh_catalog
from tests.support.server import free_port

pytestmark = [pytest.mark.integration, pytest.mark.postgres]

pytest.importorskip("uvicorn")

CONFIG = """\
indexing: {batch_documents: 1, embed_batch_units: 2}
embeddings: {kind: openai, openai: {base_url: "%s", api_key: k, dimension: 8}}
stores: {kind: postgres}
"""

WORDS = ["heron", "lantern", "copper", "meadow", "violin", "harbor", "glacier", "saffron",
         "orchard", "thimble", "quartz", "bramble", "falcon", "pewter", "juniper", "canyon"]


def corpus(first: int, n: int) -> list[tuple[str, bytes]]:
    """``n`` markdown documents of the 16 words (several text units each)."""
    out = []
    for i in range(first, first + n):
        paragraphs = "\n\n".join(" ".join(WORDS[(i * 7 + p * 3 + k * k) % 16] for k in range(60))
                                 + "." for p in range(6))  # fmt: skip
        out.append((f"doc{i:02}.md", f"# Document {i}\n\n{paragraphs}\n".encode()))
    return out


@contextmanager
def ukr_serve(project: Path, port: int, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """``ukr serve`` as a subprocess on 127.0.0.1:``port``; SIGTERM when done."""
    log = project / "serve.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "unified_kg_rag.cli", "serve", "-C", str(project),
             "--port", str(port)], stdout=out, stderr=subprocess.STDOUT, env=env)  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        assert "Traceback" not in log.read_text(), log.read_text()


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/v1/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)


def upload(url: str, files: list[tuple[str, bytes]]) -> httpx.Response:
    sent = [("files", (name, data, "text/markdown")) for name, data in files]
    return httpx.post(f"{url}/v1/documents", files=sent, timeout=60)


def job_of(url: str, job_id: str) -> dict[str, Any]:
    job: dict[str, Any] = httpx.get(f"{url}/v1/jobs/{job_id}", timeout=30).json()
    return job


def wait_end(url: str, job_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 180
    while (job := job_of(url, job_id))["state"] in ("queued", "running"):
        assert time.monotonic() < deadline, job
        time.sleep(0.1)
    return job


def ask(url: str, question: str, **extra: Any) -> list[tuple[str, str]]:
    """The sources of a retrieval-only (``naive``, no model) answer: (document path, text)."""
    reply = httpx.post(f"{url}/v1/query", json={"question": question, "strategy": "naive",
                                                "top_k": 5, **extra}, timeout=60)  # fmt: skip
    assert reply.status_code == 200, reply.text
    return [(s["path"], s["text"]) for s in reply.json()["sources"]]


def processed(url: str) -> int:
    (index,) = httpx.get(f"{url}/v1/status", timeout=30).json()["indexes"]
    count: int = index["documents"].get("processed", 0)
    return count


def concept_labels(url: str, q: str) -> list[str]:
    reply = httpx.get(f"{url}/v1/graph/labels", params={"q": q, "graph": "concepts"}, timeout=60)
    assert reply.status_code == 200, reply.text
    return [m["label"] for m in reply.json()["matches"]]


def test_two_servers_share_the_index_and_one_write_job_refuses_the_other_with_409(
    tmp_path: Path, postgres_url: str
) -> None:
    with ExitStack() as stack:
        embeddings = stack.enter_context(FakeOpenAIServer())
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),
               "UKR_STORES__POSTGRES__URL": postgres_url,
               "UKR_STORES__POSTGRES__SCHEMA_NAME": fresh_catalog()}  # fmt: skip
        urls, procs = [], []
        for name in ("a", "b"):  # started together: the two start-ups overlap
            project = tmp_path / name
            project.mkdir()
            (project / "ukr.yaml").write_text(CONFIG % embeddings.base_url)
            port = free_port()
            procs.append(stack.enter_context(ukr_serve(project, port, env)))
            urls.append(f"http://127.0.0.1:{port}")
        for url, proc, name in zip(urls, procs, "ab", strict=True):
            wait_healthy(url, proc, tmp_path / name / "serve.log")
        a, b = urls

        # an index job through A is seen by B, which never restarted
        first = upload(a, corpus(0, 4))
        assert first.status_code == 202, first.text
        assert wait_end(a, first.json()["id"])["state"] == "succeeded"
        question = "heron lantern glacier"
        on_a = ask(a, question)
        assert len(on_a) == 5 and on_a == ask(b, question)
        assert processed(b) == 4
        for url in urls:  # both load (and keep) the concept graph of the first build
            assert concept_labels(url, "heron") and concept_labels(url, "zeppelin") == []

        # a slow job through A holds the index: B's writes are 409, B still answers
        embeddings.script(Scripted(delay_s=0.3, path="/v1/embeddings", times=None))
        slow = upload(a, corpus(4, 6)).json()
        refused = upload(b, [("late.md", b"# Late\n\nA late note on copper.\n")])
        assert refused.status_code == 409, refused.text
        error = refused.json()["error"]
        assert error["type"] == "BuildInProgress"
        assert f":job-{slow['id']}" in error["message"] and "is being written by" in error["message"]
        deleted = httpx.delete(f"{b}/v1/documents", params={"path": "doc00.md"})
        assert deleted.status_code == 409 and deleted.json()["error"]["type"] == "BuildInProgress"
        assert len(ask(b, question)) == 5  # what the job committed so far may be among them
        unknown = httpx.get(f"{b}/v1/jobs/{slow['id']}")
        assert unknown.status_code == 404
        assert "kept per project directory" in unknown.json()["error"]["message"]
        assert job_of(a, slow["id"])["state"] in ("queued", "running")  # all that, during it
        assert wait_end(a, slow["id"])["state"] == "succeeded"
        assert httpx.get(f"{b}/v1/jobs", params={"state": "failed"}).json() == []

        # once it ended, B writes, and A sees B's document and B's concept graph
        notes = [(f"zeppelin{i}.md", b"# Airships\n\nThe zeppelin hangar held a zeppelin, %d "
                  b"crews trained in the zeppelin hangar.\n" % i) for i in (1, 2)]
        late = upload(b, notes)  # two: a concept is kept when it is in two text units
        assert late.status_code == 202, late.text
        assert wait_end(b, late.json()["id"])["state"] == "succeeded"
        assert [p for p, _ in ask(a, "zeppelin hangar", filters={"path": "zeppelin2.md"})] == [
            "zeppelin2.md"]
        assert any("zeppelin" in label.casefold() for label in concept_labels(a, "zeppelin"))
        assert processed(a) == 12

        # the load loop of benchmarks/bench_pg_servers.py, over both (so it cannot rot)
        run = asyncio.run(run_load([a, b], [question, "zeppelin hangar"], "naive", 4, 8))
        assert run["failures"] == [] and len(run["latencies_ms"]) == 8
