"""`RayCluster.connect` tries a refused Ray Client session again, and says why it gave up.

``ray.init`` is stood in for here by a module that raises what Ray Client raised in CI
(the message below is that run's, path shortened); the same path against a real head whose
session server really dies is ``tests/integration/test_ray_connect.py``.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

from unified_kg_rag.adapters.ray.cluster import CONNECT_RETRIES_MAX, RayCluster
from unified_kg_rag.adapters.ray.compose import connect_cluster
from unified_kg_rag.config.models import UkrConfig
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

    def shutdown(self) -> None:
        self.connected = False


class _SlowRay(_Ray):
    """`_Ray` whose ``init`` takes ``delay_s`` (a connection in progress)."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s

    def init(self, **kwargs: Any) -> None:
        time.sleep(self.delay_s)
        super().init(**kwargs)


@pytest.fixture
def no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    import unified_kg_rag.adapters.ray.cluster as cluster

    monkeypatch.setattr(cluster, "_init", _fast(cluster._init))


def _fast(init: Any) -> Any:
    def call(ray: Any, address: str, *, attempts: int, **kwargs: Any) -> None:
        init(ray, address, attempts=attempts, wait_s=0.0, **kwargs)

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


def test_connection_retries_are_capped(monkeypatch: pytest.MonkeyPatch, no_wait: None) -> None:
    ray = _Ray(*[ConnectionAbortedError(CI_REFUSAL)] * 10)
    monkeypatch.setitem(sys.modules, "ray", ray)
    with pytest.raises(ConfigurationError):
        RayCluster.connect("auto", workers=1, retries=9)  # actor restarts: 9; connection: 2
    assert len(ray.calls) == 1 + CONNECT_RETRIES_MAX == 3


def test_a_refusal_without_a_log_name_points_at_the_heads_logs(
    monkeypatch: pytest.MonkeyPatch, no_wait: None
) -> None:
    zombie = ("Initialization failure from server:\nTraceback (most recent call last):\n"
              "psutil.ZombieProcess: PID still exists but it's a zombie (pid=32031)\n")  # fmt: skip
    monkeypatch.setitem(sys.modules, "ray", _Ray(ConnectionAbortedError(zombie)))
    with pytest.raises(ConfigurationError) as caught:
        RayCluster.connect("auto", workers=1, retries=0)
    assert str(caught.value) == (
        "--cluster / indexing.cluster: cannot connect to the Ray cluster at auto: "
        "Initialization failure from server: psutil.ZombieProcess: PID still exists but it's a "
        "zombie (pid=32031) (the head's ray_client_server*.err logs (its session's logs/ "
        "folder) say why)"
    )


def test_ctrl_c_during_the_wait_to_try_again_ends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's Ctrl-C cancels its main task from a signal handler while connect() runs."""
    ray = _Ray(*[ConnectionAbortedError(CI_REFUSAL)] * 5)
    monkeypatch.setitem(sys.modules, "ray", ray)

    async def main() -> None:
        task = asyncio.current_task()
        assert task is not None
        previous = signal.signal(signal.SIGALRM, lambda *_: task.cancel())
        signal.setitimer(signal.ITIMER_REAL, 0.3)  # during the first wait (1 s)
        try:
            RayCluster.connect("auto", workers=1, retries=2)
        finally:
            signal.signal(signal.SIGALRM, previous)

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(main())
    assert len(ray.calls) == 1  # no second attempt after the cancel
    assert not ray.connected


async def _until(done: Any, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def _connecting_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ukr-ray-connect"]


def test_closing_the_app_while_it_connects_stops_the_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ray = _Ray(*[ConnectionAbortedError(CI_REFUSAL)] * 5)
    monkeypatch.setitem(sys.modules, "ray", ray)
    config = UkrConfig(indexing={"cluster": "auto", "cluster_retries": 2})
    opened: list[object] = []

    async def main() -> None:
        caller = asyncio.ensure_future(connect_cluster(config, opened))
        await asyncio.sleep(0.3)  # the thread made its first attempt and waits 1 s
        caller.cancel()  # Ctrl-C: the caller returns at once ...
        with pytest.raises(asyncio.CancelledError):
            await caller
        assert _connecting_threads()  # ... and the connection goes on (others may wait on it)
        for held in list(opened):  # what App.aclose does
            await held.aclose()  # type: ignore[attr-defined]
        await _until(lambda: not _connecting_threads())
        await _until(lambda: opened == [])

    asyncio.run(main())
    assert len(ray.calls) == 1  # no attempt after the close
    assert not ray.connected


def test_a_connection_made_after_its_caller_left_joins_the_app(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ray = _SlowRay(0.5)
    monkeypatch.setitem(sys.modules, "ray", ray)
    config = UkrConfig(indexing={"cluster": "auto"})
    opened: list[object] = []

    async def main() -> None:
        caller = asyncio.ensure_future(connect_cluster(config, opened))
        await asyncio.sleep(0.1)
        caller.cancel()
        with pytest.raises(asyncio.CancelledError):
            await caller
        await _until(lambda: any(type(held).__name__ == "RayCluster" for held in opened))
        for held in list(opened):  # the app closes it: nothing leaks
            await held.aclose()  # type: ignore[attr-defined]

    asyncio.run(main())
    assert [type(held).__name__ for held in opened] == ["RayCluster"]
    assert len(ray.calls) == 1 and not ray.connected


def test_concurrent_callers_share_one_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    ray = _SlowRay(0.3)
    monkeypatch.setitem(sys.modules, "ray", ray)
    config = UkrConfig(indexing={"cluster": "auto"})
    opened: list[object] = []

    async def main() -> None:
        await asyncio.gather(*(connect_cluster(config, opened) for _ in range(3)))

    asyncio.run(main())
    assert len(ray.calls) == 1
    assert [type(held).__name__ for held in opened] == ["RayCluster"]


def test_every_waiting_caller_gets_the_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    ray = _Ray(ConnectionError("Could not find any running Ray instance."))
    monkeypatch.setitem(sys.modules, "ray", ray)
    config = UkrConfig(indexing={"cluster": "auto"})
    opened: list[object] = []

    async def main() -> list[BaseException | None]:
        return await asyncio.gather(*(connect_cluster(config, opened) for _ in range(2)),
                                    return_exceptions=True)  # fmt: skip

    results = asyncio.run(main())
    assert [type(r).__name__ for r in results] == ["ConfigurationError"] * 2
    assert str(results[0]).endswith("cannot connect to the Ray cluster at auto: Could not find "
                                    "any running Ray instance.")  # fmt: skip
    assert len(ray.calls) == 1 and opened == []


def test_connect_cluster_connects_once_per_app(monkeypatch: pytest.MonkeyPatch) -> None:
    ray = _Ray()
    monkeypatch.setitem(sys.modules, "ray", ray)
    config = UkrConfig(indexing={"cluster": "auto"})
    opened: list[object] = []

    async def main() -> None:
        await connect_cluster(config, opened)
        await connect_cluster(config, opened)

    asyncio.run(main())
    assert len(ray.calls) == 1 and ray.connected
    assert [type(held).__name__ for held in opened] == ["RayCluster"]


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
