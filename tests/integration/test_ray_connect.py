"""Connecting to a real Ray cluster whose Ray Client server fails to start a session.

CI once failed here: the first Ray Client connection after the head started ended with
"Initialization failure from server ... Starting Ray client server failed" (Ray's client
server starts a server process per session, and that process did not come up), while
the next connections worked. `RayCluster.connect` now tries that failure again
(``min(indexing.cluster_retries, 2)`` times).

The failure is made real (`tests.support.ray_cluster.session_hooks`): the head's
``PYTHONPATH`` starts with a ``sitecustomize`` that ends a session's server process
(``--mode specific-server``) at start-up while a counter file says so, so Ray's own proxy
refuses the session with the same error class as in CI
("Initialization failure from server"; here its cause reads "Proxy failed to Connect to
backend", because the process dies after the proxy saw it start). The head waits 6 s (not
Ray's 30) for a session's server to answer, which keeps the refusal short; a refusal still
costs about 40 s (Ray waits for the channel more than once), so the case of no retries left
(one error, one line) is tested without a cluster in ``tests/unit/test_ray_connect_retry.py``.

Skipped (with that reason) only when ``ray`` is not installed; the ``dev`` extra installs it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="the `ray` extra is not installed (pip install '.[ray]')")

from tests.support.ray_cluster import AUTH_ENV, LocalRayCluster, session_hooks

from unified_kg_rag.adapters.ray.cluster import RayCluster

pytestmark = [pytest.mark.integration, pytest.mark.slow]


class _Head:
    def __init__(self, cluster: LocalRayCluster, failures: Path) -> None:
        self.cluster = cluster
        self.failures = failures

    def fail_next(self, n: int) -> None:
        self.failures.write_text(str(n))

    def left(self) -> int:
        return int(self.failures.read_text() or 0)


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Head]:
    folder = tmp_path_factory.mktemp("ray-head")
    failures = folder / "failures"
    failures.write_text("0")
    paths, hooks = session_hooks(folder / "hooks", failures=failures)
    with pytest.MonkeyPatch.context() as env:
        for key, value in AUTH_ENV.items():
            env.setenv(key, value)
        with LocalRayCluster(cpus=1, paths=paths, env=hooks) as cluster:
            # Ray 2.60's proxy can lose the first session after the head starts by itself
            # (gRPC: "skipping fork() handlers"; the CI failure): open and close one first,
            # so the test's first attempt is the refusal it injects
            asyncio.run(RayCluster.connect(cluster.client_address, workers=1,
                                           retries=2).aclose())  # fmt: skip
            yield _Head(cluster, failures)


def _connect(head: _Head, retries: int) -> RayCluster:
    return RayCluster.connect(head.cluster.client_address, workers=1, retries=retries)


def test_a_refused_session_is_tried_again(head: _Head, caplog: pytest.LogCaptureFixture) -> None:
    head.fail_next(1)
    with caplog.at_level(logging.WARNING, logger="unified_kg_rag.adapters.ray.cluster"):
        cluster = _connect(head, retries=3)
    try:
        assert cluster._ray.is_initialized()
        nodes = [n for n in cluster._ray.nodes() if n.get("Alive")]
        assert len(nodes) == 1  # really connected: the head answers
    finally:
        asyncio.run(cluster.aclose())
    assert head.left() == 0
    refused = [r.getMessage() for r in caplog.records if "refused connection" in r.getMessage()]
    assert refused, "the refused session was not reported"
    assert refused[0].startswith(
        f"the Ray cluster at {head.cluster.client_address} refused connection attempt 1 "
        "(Initialization failure from server: RuntimeError: "
    ), refused[0]
    assert refused[-1].endswith("; trying again")
