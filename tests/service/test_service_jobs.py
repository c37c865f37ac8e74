"""Index, delete and reset jobs over HTTP, on a real uvicorn server (issue 17)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from numpy.typing import NDArray

from tests.support.server import index_good_docs, serving, sse_events
from unified_kg_rag.ingestion.uploads import allowed_path
from unified_kg_rag.util.errors import UsageError

pytestmark = pytest.mark.integration

uvicorn = pytest.importorskip("uvicorn")

CONFIG = """\
indexing:
  batch_documents: 1
  embed_batch_units: 2
service:
  allowed_roots: [roots]
  max_upload_file_bytes: 4000
  max_upload_files: 4
  max_upload_total_bytes: 10000
"""


@dataclass
class Served:
    url: str
    api: Any
    project: Path


class SlowEmbedder:
    """The server's embedding model, taking ``delay_s`` more per call (a job that lasts)."""

    def __init__(self, inner: Any, delay_s: float) -> None:
        self._inner = inner
        self.delay_s = delay_s

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def embed_documents(self, texts: Sequence[str]) -> NDArray[np.float32]:
        await asyncio.sleep(self.delay_s)
        result: NDArray[np.float32] = await self._inner.embed_documents(texts)
        return result


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Three indexed documents; allowed root ``roots/``; small upload limits."""
    from unified_kg_rag.service.app import create_app

    project = tmp_path_factory.mktemp("jobs")
    (project / "ukr.yaml").write_text(CONFIG, encoding="utf-8")
    (project / "roots").mkdir()
    index_good_docs(project)
    api = create_app(project)
    with serving(api) as url:
        warm = httpx.post(f"{url}/v1/query", json={"question": "owls", "strategy": "naive"},
                          timeout=120)  # loads the embedding model
        assert warm.status_code == 200
        yield Served(url, api, project)


@pytest.fixture
def slow(served: Served) -> Iterator[SlowEmbedder]:
    """Make each embedding call of the server's jobs take 0.4 s more."""
    app = served.api.state.ukr
    real = app.embedder
    app.embedder = SlowEmbedder(real, 0.4)
    try:
        yield app.embedder
    finally:
        app.embedder = real


def multipart(files: Sequence[tuple[str, bytes]], **fields: str) -> tuple[bytes, str]:
    """A multipart/form-data body (built by hand: names go out exactly as given)."""
    boundary = "ukr-test-boundary-7d1f"
    out = b""
    for name, value in fields.items():
        out += (f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                f"{value}\r\n").encode()
    for name, data in files:
        out += (f'--{boundary}\r\nContent-Disposition: form-data; name="files"; '
                f'filename="{name}"\r\nContent-Type: text/plain\r\n\r\n').encode() + data + b"\r\n"
    return out + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def upload(url: str, files: Sequence[tuple[str, bytes]], **fields: str) -> httpx.Response:
    body, kind = multipart(files, **fields)
    return httpx.post(f"{url}/v1/documents", content=body, headers={"content-type": kind},
                      timeout=60)


def doc(i: int, sentences: int = 6) -> bytes:
    words = ["heron", "lantern", "copper", "meadow", "violin", "harbor", "glacier", "saffron"]
    text = ". ".join(" ".join(words[(i + j + k) % 8] for k in range(9)) for j in range(sentences))
    return f"Document {i}. {text}.".encode()


def wait_end(url: str, job_id: str, timeout_s: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job: dict[str, Any] = httpx.get(f"{url}/v1/jobs/{job_id}").json()
        if job["state"] not in ("queued", "running"):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not end")


def leftovers(project: Path) -> list[str]:
    staging = project / "uploads" / ".staging"
    return sorted(p.name for p in staging.rglob("*")) if staging.exists() else []


def test_an_upload_is_indexed_in_a_job_followed_as_server_sent_events(served: Served) -> None:
    reply = upload(served.url, [("alpha.md", doc(1)), ("beta.txt", doc(2))])
    assert reply.status_code == 202, reply.text
    job = reply.json()
    assert job["kind"] == "index" and job["index"] == "default"
    assert job["inputs"]["uploads"] == ["alpha.md", "beta.txt"]
    with httpx.stream("GET", f"{served.url}/v1/jobs/{job['id']}/events", timeout=120) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        raw = list(r.iter_lines())
    events = sse_events(raw)
    kinds = [k for k, _ in events]
    assert kinds[0] == "state" and kinds[-1] == "end" and set(kinds[1:-1]) <= {"progress"}
    assert raw[0] == "event: state" and raw[1].startswith("data: {") and raw[2] == ""
    end = events[-1][1]
    assert end["state"] == "succeeded" and end["error"] is None
    assert end["progress"]["documents_done"] == end["progress"]["documents_total"] == 2
    assert end["index_report"]["documents_new"] == 2 and end["finished_at"] >= end["started_at"]
    assert end["usage"]["calls"] == 0
    kept = served.project / "uploads" / "default"
    assert (kept / "alpha.md").read_bytes() == doc(1)
    listed = httpx.get(f"{served.url}/v1/documents", params={"path_prefix": "alpha"}).json()
    assert listed["documents"][0]["source_scope"] == kept.resolve().as_posix()
    newest = httpx.get(f"{served.url}/v1/jobs", params={"state": "succeeded"}).json()[0]
    assert newest["id"] == job["id"]


@pytest.mark.parametrize("name", ["../escape.md", "sub/inner.md", "a\\b.md", "nul\x00.md",
                                  "bell\x07.md", "", ".."])
def test_unsafe_file_names_are_refused_naming_the_file(served: Served, name: str) -> None:
    reply = upload(served.url, [("fine.md", doc(3)), (name, doc(4))])
    assert reply.status_code == 400, reply.text
    error = reply.json()["error"]
    assert error["type"] == "UsageError" and repr(name) in error["message"]
    assert leftovers(served.project) == []
    assert not (served.project / "uploads" / "default" / "fine.md").exists()


@pytest.mark.parametrize(("files", "limit"), [
    ([("big.md", b"x" * 4001)], "max_upload_file_bytes"),
    ([(f"f{i}.md", doc(i)) for i in range(5)], "max_upload_files"),
    ([(f"g{i}.md", b"y" * 3500) for i in range(3)], "max_upload_total_bytes"),
])
def test_uploads_over_a_limit_are_refused_while_streaming_leaving_nothing(
    served: Served, files: list[tuple[str, bytes]], limit: str
) -> None:
    reply = upload(served.url, files)
    assert reply.status_code == 413, reply.text
    assert reply.json()["error"]["type"] == "PayloadTooLargeError"
    assert limit in reply.json()["error"]["message"]
    assert leftovers(served.project) == []
    assert not any((served.project / "uploads" / "default" / n).exists() for n, _ in files)


def test_server_side_paths_are_indexed_only_under_the_allowed_roots(
    served: Served, tmp_path: Path
) -> None:
    roots = served.project / "roots"
    (roots / "notes").mkdir()
    (roots / "notes" / "river.md").write_bytes(doc(7))
    outside = tmp_path / "secret.md"
    outside.write_bytes(b"the secret")
    (roots / "link.md").symlink_to(outside)
    (roots / "linked").mkdir()
    (roots / "linked" / "out.md").symlink_to(outside)
    for path in ("roots/../docs", str(outside), "roots/link.md", "roots/linked", "../x"):
        reply = httpx.post(f"{served.url}/v1/documents/path", json={"path": path})
        assert reply.status_code == 400, (path, reply.text)
        assert reply.json()["error"]["field"] == "path"
    reply = httpx.post(f"{served.url}/v1/documents/path", json={"path": "roots/notes"})
    assert reply.status_code == 202, reply.text
    job = wait_end(served.url, reply.json()["id"])
    assert job["state"] == "succeeded" and job["index_report"]["documents_new"] == 1
    assert job["inputs"]["paths"] == [str((roots / "notes").resolve())]


def test_no_allowed_roots_means_no_server_side_paths(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"service\.allowed_roots"):
        allowed_path(str(tmp_path), [], tmp_path)
    with pytest.raises(UsageError, match=r"not a file or folder below service\.allowed_roots"):
        allowed_path("/etc", ["roots"], tmp_path)


def test_a_path_refused_says_nothing_of_what_exists_outside_the_roots(tmp_path: Path) -> None:
    (tmp_path / "roots").mkdir()
    (tmp_path / "there").mkdir()
    messages = []
    for path in ("there", "not-there", "roots/missing.md"):
        with pytest.raises(UsageError) as refused:
            allowed_path(path, ["roots"], tmp_path)
        messages.append(str(refused.value).removeprefix(f"path: {path}"))
    assert len(set(messages)) == 1


@pytest.mark.parametrize(("path", "why"), [
    ("roots/" + "a" * 5000, "not a usable path"),
    ("roots/" + "b/" * 3000, "not a usable path"),
    ("roots/\\ud800x", "not a usable path"),
    ("roots/fifo.md", "not a regular file or a folder"),
])
def test_unusable_server_paths_are_400_not_500(served: Served, path: str, why: str) -> None:
    fifo = served.project / "roots" / "fifo.md"
    if not fifo.exists():
        os.mkfifo(fifo)
    body = '{"path": "' + path + '"}'  # a lone surrogate goes out escaped, as sent
    reply = httpx.post(f"{served.url}/v1/documents/path", content=body,
                       headers={"content-type": "application/json"})
    assert reply.status_code == 400, reply.text
    assert why in reply.json()["error"]["message"]
    assert len(reply.json()["error"]["message"]) < 400  # a long path is cut, not echoed


def test_a_resume_checks_the_roots_again(served: Served, slow: SlowEmbedder,
                                         tmp_path: Path) -> None:
    folder = served.project / "roots" / "resumed"
    folder.mkdir()
    for i in range(3):
        (folder / f"part{i}.md").write_bytes(doc(40 + i, sentences=14))
    started = httpx.post(f"{served.url}/v1/documents/path", json={"path": "roots/resumed"})
    assert started.status_code == 202, started.text
    job_id = started.json()["id"]
    cancelled = httpx.post(f"{served.url}/v1/jobs/{job_id}/cancel", timeout=60).json()
    assert cancelled["state"] == "cancelled"
    secret = tmp_path / "secret.md"
    secret.write_text("The launch code is SWORDFISH.")
    (folder / "zz-secret.md").symlink_to(secret)
    refused = httpx.post(f"{served.url}/v1/jobs/{job_id}/resume")
    assert refused.status_code == 400, refused.text
    assert "leads out" in refused.json()["error"]["message"]
    (folder / "zz-secret.md").unlink()
    resumed = httpx.post(f"{served.url}/v1/jobs/{job_id}/resume")
    assert resumed.status_code == 202, resumed.text
    assert wait_end(served.url, resumed.json()["id"])["state"] == "succeeded"


def test_a_cut_upload_is_refused_and_nothing_is_kept(served: Served) -> None:
    body, kind = multipart([("whole.md", doc(50)), ("cut.md", doc(51))])
    cut = body[: body.index(b"Document 51") + 20]  # ends inside the second file
    reply = httpx.post(f"{served.url}/v1/documents", content=cut,
                       headers={"content-type": kind}, timeout=60)
    assert reply.status_code == 400, reply.text
    assert "closing boundary" in reply.json()["error"]["message"]
    assert leftovers(served.project) == []
    assert not (served.project / "uploads" / "default" / "whole.md").exists()


def test_names_are_compared_in_nfc_and_format_characters_are_refused(served: Served) -> None:
    for name in ("evil\u202egnp.md", "zero\u200bwidth.md", "line\u2028sep.md"):
        reply = upload(served.url, [(name, doc(60))])
        assert reply.status_code == 400, (name, reply.text)
    nfd = upload(served.url, [("cafe\u0301.md", doc(61))])
    assert nfd.status_code == 202, nfd.text
    assert nfd.json()["inputs"]["uploads"] == ["caf\u00e9.md"]
    wait_end(served.url, nfd.json()["id"])
    assert (served.project / "uploads" / "default" / "caf\u00e9.md").exists()


def test_one_job_per_index_queries_answer_during_it_and_cancel_keeps_work(
    served: Served, slow: SlowEmbedder
) -> None:
    files = [(f"slow{i}.md", doc(10 + i, sentences=14)) for i in range(4)]
    first = upload(served.url, files).json()
    second = upload(served.url, [("other.md", doc(20))])
    assert second.status_code == 409
    assert second.json()["error"]["type"] == "JobConflictError"
    assert first["id"] in second.json()["error"]["message"]
    assert not (served.project / "uploads" / "default" / "other.md").exists()
    query = httpx.post(f"{served.url}/v1/query", timeout=120,
                       json={"question": "What do barn owls hunt?", "strategy": "naive"})
    assert query.status_code == 200 and query.json()["sources"]
    while httpx.get(f"{served.url}/v1/jobs/{first['id']}").json()["progress"][
            "documents_done"] < 1:
        time.sleep(0.1)
    cancelled = httpx.post(f"{served.url}/v1/jobs/{first['id']}/cancel", timeout=60).json()
    assert cancelled["state"] == "cancelled" and cancelled["finished_at"]
    done = cancelled["progress"]["documents_done"]
    assert 1 <= done < 4 and "document" in cancelled["summary"]
    listed = httpx.get(f"{served.url}/v1/documents", params={"path_prefix": "slow"}).json()
    assert sum(d["status"] == "processed" for d in listed["documents"]) == done
    again = upload(served.url, [("other.md", doc(20))])
    assert again.status_code == 202
    assert wait_end(served.url, again.json()["id"])["state"] == "succeeded"


def test_a_run_outside_the_server_holding_the_lease_is_a_409_naming_it(served: Served) -> None:
    from unified_kg_rag.adapters.sqlite.backend import SqliteBackend

    async def lease(take: bool) -> None:
        async with SqliteBackend(served.project / ".ukr" / "ukr.db") as backend:
            registry = backend.doc_registry("default")
            if take:
                await registry.acquire_lease("buildbox:4242:cafe", 600)
            else:
                await registry.release_lease("buildbox:4242:cafe")

    asyncio.run(lease(True))
    try:
        reply = httpx.post(f"{served.url}/v1/documents/path", json={"path": "roots/notes"})
    finally:
        asyncio.run(lease(False))
    assert reply.status_code == 409
    error = reply.json()["error"]
    assert error["type"] == "BuildInProgress" and "buildbox:4242:cafe" in error["message"]
    assert httpx.get(f"{served.url}/v1/jobs", params={"state": "queued"}).json() == []


def test_a_job_holds_the_lease_from_its_acceptance_and_gives_it_up_at_its_end(
    served: Served, slow: SlowEmbedder
) -> None:
    """Taken when the job is accepted, not when it runs: another server on the same database
    (its own job records) asking meanwhile is refused (tests/service/test_pg_two_servers.py)."""
    from unified_kg_rag.adapters.sqlite.backend import SqliteBackend
    from unified_kg_rag.service.jobs import job_holder

    async def holder() -> str | None:
        async with SqliteBackend(served.project / ".ukr" / "ukr.db") as backend:
            lease = await backend.doc_registry("default").get_lease()
            return None if lease is None or lease.expires_at < time.time() else lease.holder

    job = upload(served.url, [("leased.md", doc(40, sentences=10))]).json()
    assert asyncio.run(holder()) == job_holder(job["id"])
    assert job_holder(job["id"]).endswith(f":{os.getpid()}:job-{job['id']}")
    assert wait_end(served.url, job["id"])["state"] == "succeeded"
    assert asyncio.run(holder()) is None
    unknown = httpx.get(f"{served.url}/v1/jobs/0123456789ab").json()["error"]
    assert unknown["type"] == "NotFoundError"
    assert "job records are kept per project directory" in unknown["message"]


def test_a_job_cancelled_at_once_leaves_the_lease_free(
    served: Served, slow: SlowEmbedder
) -> None:
    """However early the cancel lands (even before the run's first step), the lease the
    job took on acceptance is given up by the time the cancel answers: the next write is
    accepted at once, not refused until the lease lapses."""
    from unified_kg_rag.adapters.sqlite.backend import SqliteBackend

    async def lease_holder() -> str | None:
        async with SqliteBackend(served.project / ".ukr" / "ukr.db") as backend:
            lease = await backend.doc_registry("default").get_lease()
            return None if lease is None or lease.expires_at < time.time() else lease.holder

    job = upload(served.url, [("at-once.md", doc(50, sentences=10))]).json()
    cancelled = httpx.post(f"{served.url}/v1/jobs/{job['id']}/cancel", timeout=60).json()
    assert cancelled["state"] in ("cancelled", "succeeded")
    assert asyncio.run(lease_holder()) is None
    after = upload(served.url, [("after.md", doc(51))])
    assert after.status_code == 202, after.text
    assert wait_end(served.url, after.json()["id"])["state"] == "succeeded"


def test_a_client_leaving_mid_events_breaks_nothing(served: Served, slow: SlowEmbedder) -> None:
    job = upload(served.url, [("leave.md", doc(30, sentences=10))]).json()
    with httpx.stream("GET", f"{served.url}/v1/jobs/{job['id']}/events", timeout=60) as r:
        assert next(r.iter_lines()) == "event: state"  # then hang up
    assert httpx.get(f"{served.url}/v1/health").json() == {"status": "ok"}
    assert wait_end(served.url, job["id"])["state"] == "succeeded"
    with httpx.stream("GET", f"{served.url}/v1/jobs/{job['id']}/events", timeout=60) as r:
        kinds = [k for k, _ in sse_events(list(r.iter_lines()))]
    assert kinds == ["state", "end"]


def test_deleting_by_id_prefix_or_path_runs_a_job_and_removes_the_upload(served: Served) -> None:
    assert wait_end(served.url, upload(served.url, [("gone1.md", doc(40)), (
        "gone2.md", doc(41))]).json()["id"])["state"] == "succeeded"
    docs = httpx.get(f"{served.url}/v1/documents", params={"path_prefix": "gone"}).json()
    first, _ = docs["documents"]
    by_id = httpx.delete(f"{served.url}/v1/documents/{first['document_id'][:8]}")
    assert by_id.status_code == 202, by_id.text
    job = wait_end(served.url, by_id.json()["id"])
    assert job["kind"] == "delete" and job["state"] == "succeeded"
    assert [d["path"] for d in job["delete_report"]["deleted"]] == ["gone1.md"]
    kept = served.project / "uploads" / "default"
    assert not (kept / "gone1.md").exists() and (kept / "gone2.md").exists()
    by_path = httpx.delete(f"{served.url}/v1/documents", params={"path": "gone2.md"})
    assert wait_end(served.url, by_path.json()["id"])["state"] == "succeeded"
    assert not (kept / "gone2.md").exists()
    assert httpx.get(f"{served.url}/v1/documents", params={"path_prefix": "gone"}).json()[
        "total"] == 0
    unknown = httpx.delete(f"{served.url}/v1/documents/feedfacecafe")
    assert unknown.status_code == 404 and unknown.json()["error"]["type"] == "NotFoundError"
    assert httpx.get(f"{served.url}/v1/jobs/nope").status_code == 404


def test_resetting_an_index_the_project_lacks_is_a_404_naming_the_indexes(served: Served) -> None:
    reply = httpx.post(f"{served.url}/v1/indexes/defualt/reset")
    assert reply.status_code == 404
    error = reply.json()["error"]
    assert error["field"] == "index" and "no index 'defualt'" in error["message"]
    assert "default" in error["message"]  # the existing ones are listed


def test_a_reset_job_rebuilds_the_index_in_place(served: Served) -> None:
    before = httpx.get(f"{served.url}/v1/documents").json()["total"]
    reply = httpx.post(f"{served.url}/v1/indexes/default/reset")
    assert reply.status_code == 202, reply.text
    job = wait_end(served.url, reply.json()["id"])
    assert job["kind"] == "reset" and job["state"] == "succeeded", job
    report = job["index_report"]
    assert report["reset"] and report["documents_found"] == before
    assert report["documents_deleted"] == 0 and report["failed"] == []
    after = httpx.get(f"{served.url}/v1/documents").json()["documents"]
    assert len(after) == before and {d["status"] for d in after} == {"processed"}
