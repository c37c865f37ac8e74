"""Index jobs of a server whose ``indexing.cluster`` is set, on a real uvicorn server.

- The job connects to the cluster in a worker thread: while Ray Client is still setting
  up the job's session (a real head whose session server sleeps 8 s first,
  `tests.support.ray_cluster.session_hooks`), the server answers other requests and the
  job keeps its write lease past ``indexing.lease_s`` (3 s here: the job renews it while it
  connects); the job then indexes its document with the embedding work on the cluster and
  succeeds.
- A cluster nobody answers: the job is recorded ``failed`` with the one-line error naming
  ``--cluster / indexing.cluster``, and its write lease is given up at once (the next
  write is accepted, not refused with 409 until the lease lapses).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.ray_cluster import AUTH_ENV, LocalRayCluster, free_port, session_hooks
from tests.support.server import serving

pytestmark = pytest.mark.integration

pytest.importorskip("uvicorn")


def _project(root: Path, cluster: str, extra: str = "") -> Path:
    project = root / "project"
    (project / "roots" / "notes").mkdir(parents=True)
    (project / "roots" / "notes" / "river.md").write_text(
        "# The river\n\nThe river meets the sea near the old mill, where herons fish.\n",
        encoding="utf-8",
    )
    (project / "ukr.yaml").write_text(
        f"indexing:\n  cluster: '{cluster}'\n  cluster_workers: 1\n{extra}"
        "service:\n  allowed_roots: [roots]\n",
        encoding="utf-8",
    )
    return project


def _lease(project: Path) -> Any:
    """The default index's write lease, read through the project's own store."""
    import asyncio

    from unified_kg_rag.bootstrap import build_app, load_project_config

    async def read() -> Any:
        async with build_app(load_project_config(project), project) as app:
            return await app.index().registry.get_lease()

    return asyncio.run(read())


def _until(done: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def _end(url: str, job_id: str, timeout_s: float = 240) -> dict[str, Any]:
    job: dict[str, Any] = {}

    def ended() -> bool:
        nonlocal job
        job = httpx.get(f"{url}/v1/jobs/{job_id}", timeout=30).json()
        return job["state"] not in ("queued", "running")

    _until(ended, timeout_s, f"job {job_id} to end")
    return job


@pytest.fixture
def head(tmp_path: Path) -> Iterator[tuple[LocalRayCluster, Path]]:
    markers = tmp_path / "markers"
    markers.mkdir()
    paths, env = session_hooks(tmp_path / "hooks", delay_s=8.0, markers=markers)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in AUTH_ENV.items():
            patch.setenv(key, value)
        with LocalRayCluster(cpus=2, paths=paths, env=env) as cluster:
            yield cluster, markers


@pytest.mark.slow
def test_the_server_answers_while_a_job_connects_and_the_job_runs_on_the_cluster(
    head: tuple[LocalRayCluster, Path], tmp_path: Path
) -> None:
    pytest.importorskip("ray", reason="the `ray` extra is not installed (pip install '.[ray]')")
    from unified_kg_rag.service.app import create_app

    cluster, markers = head
    project = _project(tmp_path, cluster.client_address, "  lease_s: 3\n")
    with serving(create_app(project)) as url:
        reply = httpx.post(f"{url}/v1/documents/path", json={"path": "roots/notes"}, timeout=30)
        assert reply.status_code == 202, reply.text
        job_id = reply.json()["id"]
        submitted = time.monotonic()
        _until((markers / "started").exists, 120, "the job's Ray Client session to start")
        health = httpx.get(f"{url}/v1/health", timeout=30)
        job = httpx.get(f"{url}/v1/jobs/{job_id}", timeout=30).json()
        time.sleep(max(0.0, submitted + 4.0 - time.monotonic()))  # past lease_s
        lease = _lease(project)
        still_connecting = not (markers / "slept").exists()
        assert health.status_code == 200
        assert still_connecting, "the server answered only after the connection was made"
        assert lease is not None and lease.holder.endswith(f":job-{job_id}"), lease
        assert lease.expires_at > time.time()  # renewed while connecting: not lapsed
        assert job["state"] == "queued", {k: v for k, v in job.items() if k != "progress"}
        job = _end(url, job_id)
    assert job["state"] == "succeeded", {k: v for k, v in job.items() if k != "progress"}
    assert job["index_report"]["documents_new"] == 1
    assert job["index_report"]["failed"] == []


def test_a_cluster_nobody_answers_fails_the_job_and_frees_the_lease(tmp_path: Path) -> None:
    from unified_kg_rag.service.app import create_app

    address = f"ray://127.0.0.1:{free_port()}"
    project = _project(tmp_path, address)
    with serving(create_app(project)) as url:
        first = httpx.post(f"{url}/v1/documents/path", json={"path": "roots/notes"}, timeout=30)
        assert first.status_code == 202, first.text
        job = _end(url, first.json()["id"], timeout_s=60)
        assert job["state"] == "failed"
        assert job["error"]["type"] == "ConfigurationError"
        message = job["error"]["message"]
        assert message.startswith(
            f"--cluster / indexing.cluster: cannot connect to the Ray cluster at {address}: "
        ), message
        assert "\n" not in message
        assert job["started_at"] is None and job["finished_at"] is not None
        again = httpx.post(f"{url}/v1/documents/path", json={"path": "roots/notes"}, timeout=30)
        assert again.status_code == 202, again.text  # the failed job's lease was given up
        assert _end(url, again.json()["id"], timeout_s=60)["state"] == "failed"
        assert httpx.get(f"{url}/v1/health", timeout=30).status_code == 200
