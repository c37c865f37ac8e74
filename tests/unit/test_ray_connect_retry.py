"""`RayCluster.connect` tries a refused Ray Client session again, and says why it gave up.

``ray.init`` is stood in for here by a module that raises what Ray Client raised in CI
(the message below is that run's, path shortened); the same path against a real head whose
session server really dies is ``tests/integration/test_ray_connect.py``.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any

import pytest

from unified_kg_rag.adapters.ray.cluster import RayCluster
from unified_kg_rag.util.errors import ConfigurationError

CI_REFUSAL = (
    "Initialization failure from server:\n"
    "Traceback (most recent call last):\n"
    '  File "/check/.venv/lib/python3.11/site-packages/ray/util/client/server/proxier.py", '
    "line 772, in Datapath\n"
    "    raise RuntimeError(\n"
    "RuntimeError: Starting Ray client server failed. See ray_client_server_23000.err for "
    "detailed logs.\n"
)


class _Ray(SimpleNamespace):
    """``ray`` as `RayCluster.connect` uses it: ``init`` fails with ``errors`` in turn."""

    def __init__(self, *errors: BaseException) -> None:
        super().__init__()
        self.errors = list(errors)
        self.calls: list[dict[str, Any]] = []
        self.connected = False

    def is_initialized(self) -> bool:
        return self.connected

    def init(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)
        if self.errors:
            raise self.errors.pop(0)
        self.connected = True


@pytest.fixture
def no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    import unified_kg_rag.adapters.ray.cluster as cluster

    monkeypatch.setattr(cluster, "_init", _fast(cluster._init))


def _fast(init: Any) -> Any:
    def call(ray: Any, address: str, *, attempts: int) -> None:
        init(ray, address, attempts=attempts, wait_s=0.0)

    return call


def test_a_refused_session_is_tried_again(
    monkeypatch: pytest.MonkeyPatch, no_wait: None, caplog: pytest.LogCaptureFixture
) -> None:
    ray = _Ray(ConnectionAbortedError(CI_REFUSAL), ConnectionAbortedError(CI_REFUSAL))
    monkeypatch.setitem(sys.modules, "ray", ray)
    cluster = RayCluster.connect("auto", workers=2, retries=3)
    assert ray.connected and len(ray.calls) == 3
    assert cluster.address == "auto" and cluster.workers == 2
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == [
        "the Ray cluster at auto refused connection attempt 1 (Initialization failure from "
        "server: RuntimeError: Starting Ray client server failed. See "
        "ray_client_server_23000.err for detailed logs.); trying again",
        "the Ray cluster at auto refused connection attempt 2 (Initialization failure from "
        "server: RuntimeError: Starting Ray client server failed. See "
        "ray_client_server_23000.err for detailed logs.); trying again",
    ]


def test_refused_every_time_is_one_line_naming_the_cause(
    monkeypatch: pytest.MonkeyPatch, no_wait: None
) -> None:
    ray = _Ray(*[ConnectionAbortedError(CI_REFUSAL)] * 5)
    monkeypatch.setitem(sys.modules, "ray", ray)
    with pytest.raises(ConfigurationError) as caught:
        RayCluster.connect("auto", workers=1, retries=1)
    assert len(ray.calls) == 2  # the attempt and one retry
    assert str(caught.value) == (
        "--cluster / indexing.cluster: cannot connect to the Ray cluster at auto: "
        "Initialization failure from server: RuntimeError: Starting Ray client server failed. "
        "See ray_client_server_23000.err for detailed logs."
    )


def test_no_retries_means_one_attempt(monkeypatch: pytest.MonkeyPatch, no_wait: None) -> None:
    ray = _Ray(ConnectionAbortedError(CI_REFUSAL))
    monkeypatch.setitem(sys.modules, "ray", ray)
    with pytest.raises(ConfigurationError, match="Starting Ray client server failed"):
        RayCluster.connect("auto", workers=1, retries=0)
    assert len(ray.calls) == 1


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ConnectionError("Could not find any running Ray instance."),
         "Could not find any running Ray instance."),
        (RuntimeError("Version mismatch: the cluster runs Ray 2.40\nthis process Ray 2.60"),
         "Version mismatch: the cluster runs Ray 2.40: this process Ray 2.60"),
        (RuntimeError(""), "RuntimeError"),
    ],
)  # fmt: skip
def test_other_failures_are_not_tried_again(
    monkeypatch: pytest.MonkeyPatch, no_wait: None, error: BaseException, reason: str
) -> None:
    ray = _Ray(error, error)
    monkeypatch.setitem(sys.modules, "ray", ray)
    with pytest.raises(ConfigurationError) as caught:
        RayCluster.connect("auto", workers=1, retries=3)
    assert len(ray.calls) == 1
    assert str(caught.value) == (
        f"--cluster / indexing.cluster: cannot connect to the Ray cluster at auto: {reason}"
    )
