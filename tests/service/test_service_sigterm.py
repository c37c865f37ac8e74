"""``ukr serve`` stopped by SIGTERM mid-job, started again, the job resumed (issue 17)."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.openai_server import FakeOpenAIServer, Scripted
from tests.support.server import free_port

pytestmark = pytest.mark.integration

pytest.importorskip("uvicorn")

WORDS = ["heron", "lantern", "copper", "meadow", "violin", "harbor", "glacier", "saffron",
         "orchard", "thimble", "quartz", "bramble", "falcon", "pewter", "juniper", "canyon"]


def write_corpus(folder: Path, n: int) -> list[Path]:
    folder.mkdir()
    for i in range(n):
        paragraphs = ("\n\n".join(" ".join(WORDS[(i * 7 + p * 3 + k * k) % 16] for k in range(60))
                      + "." for p in range(8)))  # fmt: skip
        (folder / f"doc{i:02}.md").write_text(f"# Document {i}\n\n{paragraphs}\n")
    return sorted(folder.iterdir())


@contextmanager
def ukr_serve(project: Path, port: int, log: Path, *extra: str
              ) -> Iterator[subprocess.Popen[bytes]]:  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "unified_kg_rag.cli", "serve", "-C", str(project),
             "--port", str(port), *extra], stdout=out, stderr=subprocess.STDOUT,
            env=env)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def job_of(url: str, job_id: str) -> dict[str, Any]:
    job: dict[str, Any] = httpx.get(f"{url}/v1/jobs/{job_id}").json()
    return job


def expected_units(project: Path, files: list[Path]) -> dict[str, int]:
    """Text units per file, from the project's own chunker (no embedding)."""
    from unified_kg_rag.bootstrap import build_app, load_project_config
    from unified_kg_rag.ingestion.corpus import discover
    from unified_kg_rag.ingestion.prepare import parse_and_chunk

    config = load_project_config(project)
    app = build_app(config, project)
    found, _ = discover(files, parsing=config.parsing, extensions=sorted(app.parsers))
    counts = {f.relative_path: len(parse_and_chunk(f, None, config=config,
                                                   tokenizer=app.chunk_tokenizer,
                                                   parsers=app.parsers)[1]) for f in found}  # fmt: skip
    asyncio.run(app.aclose())
    return counts


CONFIG = """\
indexing: {batch_documents: 1, embed_batch_units: 2}
embeddings: {kind: openai, openai: {base_url: "%s", api_key: k, dimension: 8}}
"""


@pytest.fixture
def embeddings() -> Iterator[FakeOpenAIServer]:
    """An OpenAI-compatible embedding server taking 0.2 s a call (a job lasts a few seconds)."""
    with FakeOpenAIServer() as server:
        server.script(Scripted(delay_s=0.2, path="/v1/embeddings", times=None))
        yield server


def test_sigterm_interrupts_a_job_that_resumes_after_a_restart_to_exact_counts(
    tmp_path: Path, embeddings: FakeOpenAIServer
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "ukr.yaml").write_text(CONFIG % embeddings.base_url)
    files = write_corpus(tmp_path / "corpus", 8)
    port, log = free_port(), tmp_path / "serve.log"
    url = f"http://127.0.0.1:{port}"
    with ukr_serve(project, port, log) as proc:
        sent = [("files", (f.name, f.read_bytes(), "text/markdown")) for f in files]
        job = httpx.post(f"{url}/v1/documents", files=sent, timeout=60).json()
        deadline = time.monotonic() + 120
        while job_of(url, job["id"])["progress"]["documents_done"] < 2:
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    first_log = log.read_text()
    assert "Traceback" not in first_log, first_log
    with ukr_serve(project, port, log):
        said = log.read_text()[len(first_log):]
        assert f"job {job['id']} (index, index 'default') was interrupted" in said
        assert f"POST /v1/jobs/{job['id']}/resume" in said
        stopped = job_of(url, job["id"])
        assert stopped["state"] == "interrupted", stopped
        assert stopped["summary"].startswith("kept ")
        done = stopped["progress"]["documents_done"]
        assert 2 <= done < len(files)
        listed = httpx.get(f"{url}/v1/jobs", params={"state": "interrupted"}).json()
        assert [j["id"] for j in listed] == [job["id"]]
        resumed = httpx.post(f"{url}/v1/jobs/{job['id']}/resume")
        assert resumed.status_code == 202, resumed.text
        new = resumed.json()
        assert new["resumed_from"] == job["id"] and new["inputs"] == stopped["inputs"]
        while (end := job_of(url, new["id"]))["state"] in ("queued", "running"):
            time.sleep(0.1)
        assert end["state"] == "succeeded", end
        report = end["index_report"]
        assert report["documents_unchanged"] == done
        assert report["documents_new"] + report["documents_retried"] + done == len(files)
        assert job_of(url, job["id"])["resumed_by"] == new["id"]
        again = httpx.post(f"{url}/v1/jobs/{job['id']}/resume")
        assert again.status_code == 400 and new["id"] in again.json()["error"]["message"]
        docs = httpx.get(f"{url}/v1/documents").json()["documents"]
    want = expected_units(project, [project / "uploads" / "default" / f.name for f in files])
    assert {d["path"]: d["text_units"] for d in docs} == want
    assert {d["status"] for d in docs} == {"processed"}
    with sqlite3.connect(project / ".ukr" / "ukr.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = db.execute("SELECT count(*), count(DISTINCT id) FROM search_records WHERE "
                          "collection = 'text_units'").fetchone()  # fmt: skip
        assert rows == (sum(want.values()), sum(want.values()))


def test_workers_share_the_jobs_and_one_writer(tmp_path: Path, embeddings: FakeOpenAIServer) -> None:
    """``--workers 2``: every worker sees the job, refuses a second one, and cancels it."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "ukr.yaml").write_text(CONFIG % embeddings.base_url)
    files = write_corpus(tmp_path / "corpus", 8)
    port, log = free_port(), tmp_path / "serve.log"
    url = f"http://127.0.0.1:{port}"
    with ukr_serve(project, port, log, "--workers", "2") as proc:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
        if children.exists():  # Linux: two worker processes (and multiprocessing's tracker)
            kids = children.read_text().split()
            spawned = [k for k in kids
                       if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes()]  # fmt: skip
            assert len(spawned) == 2, kids
        sent = [("files", (f.name, f.read_bytes(), "text/markdown")) for f in files]
        job = httpx.post(f"{url}/v1/documents", files=sent, timeout=60).json()
        for _ in range(6):  # new connections: they land on either worker
            with httpx.Client() as client:
                seen = client.get(f"{url}/v1/jobs/{job['id']}").json()
                assert seen["id"] == job["id"]
                other = client.post(f"{url}/v1/documents", timeout=60,
                                    files=[("files", ("extra.md", b"# Extra", "text/plain"))])
                assert other.status_code == 409, other.text
                assert job["id"] in other.json()["error"]["message"]
        with httpx.Client() as client:
            stopped = client.post(f"{url}/v1/jobs/{job['id']}/cancel", timeout=60).json()
        assert stopped["state"] == "cancelled", stopped
    assert "Traceback" not in log.read_text(), log.read_text()
