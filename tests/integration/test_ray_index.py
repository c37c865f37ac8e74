"""``ukr index --cluster`` on a real Ray cluster started on 127.0.0.1 (issue 23, item 3).

One cluster per module (``ray start --head``: seconds). Covered:

- a Ray build equals a local build, item for item (text units, vectors within 1e-5,
  entities, relationships, communities, reports, extraction records), on MuSiQue subsets
  with real recorded GPT-3.5 extraction (the replay server) and the real bundled embedder,
  and the work really went to the workers (texts and calls counted by the Ray adapters);
- a worker killed while it holds a batch: Ray starts it again and runs the batch again (the
  result is the local one, the worker has a new process id);
- a chat worker killed in the middle of a call: the call is sent again and answered.

Skipped (with that reason) only when ``ray`` is not installed; the ``dev`` extra installs it.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("ray", reason="the `ray` extra is not installed (pip install '.[ray]')")

from tests.support.index_compare import assert_same_index, snapshot
from tests.support.openai_server import FakeOpenAIServer, Scripted
from tests.support.ray_cluster import AUTH_ENV, LocalRayCluster
from tests.support.replay_server import (
    DEFAULT_DATA_PATH,
    require_replay_data,
    start_replay_server,
)

from unified_kg_rag.adapters.ray import ClusterModels, cluster_models
from unified_kg_rag.bootstrap import build_app
from unified_kg_rag.config.models import UkrConfig
from unified_kg_rag.domain.models import Message

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRayCluster]:
    with pytest.MonkeyPatch.context() as env:
        for key, value in AUTH_ENV.items():  # the head's authentication mode, here too
            env.setenv(key, value)
        with LocalRayCluster(cpus=2) as running:
            yield running


def _config(server: FakeOpenAIServer | None, cluster: str | None, **indexing: Any) -> UkrConfig:
    llm: dict[str, Any] = {"kind": "none"}
    if server is not None:
        llm = {"kind": "openai", "max_concurrency": 4,
               "openai": {"base_url": server.base_url, "api_key": "replay", "model": "replay"}}
    return UkrConfig(
        llm=llm, graph={"unit_concurrency": 4}, parsing={"source_scope": "musique"},
        indexing={"cluster": cluster, "cluster_workers": 2, "cluster_worker_calls": 2,
                  **indexing},
    )  # fmt: skip


def _corpus(folder: Path, first: int, count: int) -> Path:
    passages = json.loads((DEFAULT_DATA_PATH.parent / "musique_train_corpus.json").read_text())
    folder.mkdir()
    for i, p in enumerate(passages[first : first + count]):
        (folder / f"{i:05d}.md").write_text(f"# {p['title']}\n\n{p['text']}\n", encoding="utf-8")
    return folder


async def _build(config: UkrConfig, project: Path, corpus: Path) -> tuple[dict[str, Any], Any]:
    async with build_app(config, project) as app:
        report = await app.index_pipeline().run([corpus])
        on = [m for m in app.opened_models if isinstance(m, ClusterModels)]
        sent = (on[0].embedder.texts_sent, sum(c.calls_sent for c in on[0].chats)) if on else None
        return snapshot(app.backend.location), (report, sent)


@pytest.mark.parametrize(("first", "count"), [(0, 6), (40, 12)])
def test_ray_build_equals_local_build(
    cluster: LocalRayCluster, tmp_path: Path, first: int, count: int
) -> None:
    require_replay_data()
    corpus = _corpus(tmp_path / "corpus", first, count)
    server = start_replay_server()
    try:
        local, (local_report, none) = asyncio.run(
            _build(_config(server, None), tmp_path / "local", corpus))
        local_calls = len(server.requests)
        on_ray, (ray_report, sent) = asyncio.run(
            _build(_config(server, cluster.client_address), tmp_path / "ray", corpus))
        ray_calls = len(server.requests) - local_calls
    finally:
        server.stop()
    assert none is None and local_report.exit_code == ray_report.exit_code == 0
    assert ray_report.graph is not None and ray_report.graph.entities > 0
    assert ray_report.graph.reports > 0
    assert_same_index(on_ray, local)
    texts, calls = sent
    assert calls == ray_calls == local_calls > count  # every model call went to a worker
    assert texts >= len(on_ray["vectors"])  # text units and graph items embedded there
    assert len(local["entities"]) == ray_report.graph.entities


def _texts(n: int) -> list[str]:
    return [f"passage {i}: " + " ".join(["the river meets the sea near the old mill"] * (i % 7 + 1))
            for i in range(n)]  # fmt: skip


def test_killed_embedding_worker_batch_is_retried(
    cluster: LocalRayCluster, tmp_path: Path
) -> None:
    texts = _texts(300)

    async def main() -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
        config = _config(None, cluster.client_address, cluster_retries=2)
        async with build_app(config, tmp_path) as app:
            want = await app.embedder.embed_documents(texts)
            on = cluster_models(config, app.embedder, None, app.opened_models)
            before = await on.embedder.worker_pids()
            running = asyncio.ensure_future(on.embedder.embed_documents(texts))
            await asyncio.sleep(0.5)  # both workers hold a batch
            os.kill(before[0], signal.SIGKILL)
            got = await running
            return want, got, before, await on.embedder.worker_pids()

    want, got, before, after = asyncio.run(main())
    assert after[0] != before[0] and after[1] == before[1]  # restarted; the other untouched
    assert got.shape == want.shape == (300, 384)
    np.testing.assert_allclose(got, want, atol=1e-5)


def _until(done: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        time.sleep(0.05)


def test_killed_chat_worker_call_is_sent_again(cluster: LocalRayCluster, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(Scripted(reply="slow answer", delay_s=3.0, times=1))

        async def main() -> tuple[str, list[int], list[int]]:
            config = _config(server, cluster.client_address, cluster_workers=1)
            async with build_app(config, tmp_path) as app:
                on = cluster_models(config, app.embedder, None, app.opened_models)
                chat = on.chats[0]
                before = await chat.worker_pids()
                call = asyncio.ensure_future(chat.complete(
                    [Message(role="user", content="hello")], max_tokens=20))
                await asyncio.to_thread(_until, lambda: bool(server.requests))
                os.kill(before[0], signal.SIGKILL)  # the worker dies while the server answers
                reply = await call
                return reply.text, before, await chat.worker_pids()

        text, before, after = asyncio.run(main())
        assert after != before
        assert len(server.requests) == 2  # the killed call, then the same call again
        assert server.requests[0].body["messages"] == server.requests[1].body["messages"]
    assert text != "slow answer" and text  # the second request got the default reply
