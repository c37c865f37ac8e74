"""`RayCluster`: the connection to a Ray cluster and the actor pools one indexing run starts.

``ray`` is imported here, when a run connects, never when ``unified_kg_rag`` is imported.
Failure to connect (ray not installed, an address nobody answers, a malformed address) is a
`ConfigurationError` naming ``--cluster`` / ``indexing.cluster``, raised before the run
writes anything.

Worker failure (seed: Ray's fault-tolerance model): every actor is created with
``max_restarts = indexing.cluster_retries`` and ``max_task_retries`` the same, so when a
worker process dies Ray starts a new one (which builds its model again) and runs the calls
it had in flight or queued again; a call fails only after that many restarts. The calls are
pure (text in, vectors or a reply out: workers hold no store), so running one twice is
harmless.

Connecting: Ray Client's "Initialization failure from server" (its server could not start
the session's own server process) is tried again, ``min(indexing.cluster_retries, 2)``
times, with backoff that a cancelled run (Ctrl-C, SIGTERM) cuts short; every other failure
to connect is reported at once. `adapters.ray.compose.connect_cluster` connects from a
worker thread, so a service keeps answering meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
import time
import warnings
from typing import Any

from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_exponential

from unified_kg_rag.config.cluster import check_cluster_address
from unified_kg_rag.util.errors import ConfigurationError, ModelError

__all__ = ["CLUSTER_FIELD", "CONNECT_RETRIES_MAX", "RayCluster", "reraise_cause"]

logger = logging.getLogger(__name__)

CLUSTER_FIELD = "--cluster / indexing.cluster"
"""How errors name the setting (the CLI option and the configuration field)."""

_INSTALL_HINT = "install the `ray` extra: pip install 'unified-kg-rag[ray]'"

CONNECT_RETRIES_MAX = 2
"""The most further connection attempts after a refused one (each refusal can take Ray
about 30 s to report, so a larger ``indexing.cluster_retries`` does not make it wait longer)."""

_CONNECT_LOCK = threading.Lock()

_LOG_HINT = "the head's ray_client_server*.err logs (its session's logs/ folder) say why"


class RayCluster:
    """A connection to a Ray cluster, and the actors started on it (closed together).

    Build with `connect`. ``workers`` actors per pool, each restarted and its calls retried
    up to ``retries`` times.
    """

    def __init__(self, ray: Any, *, address: str, owned: bool, workers: int, retries: int) -> None:
        self._ray = ray
        self.address = address
        self._owned = owned
        self.workers = workers
        self.retries = retries
        self._actors: list[Any] = []

    @classmethod
    def connect(
        cls,
        address: str,
        *,
        workers: int,
        retries: int,
        cancelled: threading.Event | None = None,
    ) -> RayCluster:
        """Connect this process to the cluster at ``address`` (the driver).

        Args:
            address: ``auto``, ``ray://HOST:PORT`` or ``HOST:PORT``
                (`config.cluster.check_cluster_address`).
            workers: actors per pool.
            retries: actor restarts and call retries; also the further connection attempts,
                at most `CONNECT_RETRIES_MAX`, when the cluster's Ray Client server fails to
                start a session (`_init`).
            cancelled: set by the caller (from another thread) to end a wait to try again.

        Raises:
            ConfigurationError: ray is not installed, the address is malformed, or no cluster
                answers there, or every attempt was refused (one line naming ``--cluster`` /
                ``indexing.cluster``).
            asyncio.CancelledError: ``cancelled`` was set, or the asyncio task this runs in was
                cancelled, while it waited to try again.
        """
        try:
            address = check_cluster_address(address)
        except ValueError as exc:
            raise ConfigurationError(str(exc), field=CLUSTER_FIELD) from exc
        try:
            import ray
        except ImportError as exc:
            raise ConfigurationError(f"ray is not installed; {_INSTALL_HINT}",
                                     field=CLUSTER_FIELD) from exc  # fmt: skip
        with _CONNECT_LOCK:  # Ray's connection is the process's: one thread makes it
            if ray.is_initialized():  # the caller connected this process already: use that
                return cls(ray, address=address, owned=False, workers=workers, retries=retries)
            if address != "auto":  # Ray retries an address nobody answers for minutes
                _probe(address)
            try:
                attempts = 1 + min(max(retries, 0), CONNECT_RETRIES_MAX)
                _init(ray, address, attempts=attempts, cancelled=cancelled)
            except Exception as exc:  # ray raises ConnectionError, RuntimeError, grpc errors
                reason = _reason(exc)
                if isinstance(exc, ConnectionAbortedError) and ".err" not in reason:
                    reason = f"{reason} ({_LOG_HINT})"
                raise ConfigurationError(
                    f"cannot connect to the Ray cluster at {address}: {reason}",
                    field=CLUSTER_FIELD,
                ) from exc
        logger.info("connected to the Ray cluster at %s", address)
        return cls(ray, address=address, owned=True, workers=workers, retries=retries)

    def cpus_per_worker(self) -> float:
        """Each actor's share of the cluster's CPUs: total / ``workers``, at most one node's.

        Ray sets a worker's ``OMP_NUM_THREADS`` (torch's threads) from it, so one actor on a
        node uses the node's cores, two share them.
        """
        nodes = [float(n.get("Resources", {}).get("CPU", 0.0))
                 for n in self._ray.nodes() if n.get("Alive")]  # fmt: skip
        total, largest = sum(nodes) or 1.0, max(nodes, default=1.0) or 1.0
        return min(largest, total / self.workers)

    def pool(self, cls: type, *args: object, cpus: float, concurrency: int) -> list[Any]:
        """Start ``workers`` actors of ``cls(*args)``; return their handles.

        Args:
            cls: a worker class of `adapters.ray.workers`.
            args: its constructor's arguments (sent to the cluster once per actor).
            cpus: the CPU share each actor reserves (0 for I/O-bound actors).
            concurrency: calls an actor runs at once (queued beyond).
        """
        remote = self._ray.remote(cls).options(
            num_cpus=cpus,
            max_restarts=self.retries,
            max_task_retries=self.retries,
            max_concurrency=concurrency,
        )
        actors = [remote.remote(*args) for _ in range(self.workers)]
        self._actors.extend(actors)
        return actors

    async def call(self, method: Any, *args: object, error: type[ModelError] = ModelError) -> Any:
        """Run ``actor.method.remote(*args)`` and return its value.

        Raises:
            the worker's own exception (a `ModelError` stays a `ModelError`);
            ModelError: (``error``) the actor died more than ``retries`` times or could not
                start.
        """
        ref = method.remote(*args)
        try:
            return await ref
        except self._ray.exceptions.RayTaskError as exc:
            reraise_cause(exc)
            raise
        except self._ray.exceptions.RayActorError as exc:
            raise error(
                f"a Ray worker died {self.retries + 1} times or could not start (is "
                f"unified-kg-rag installed on every node?): {str(exc).splitlines()[0]}"
            ) from exc

    async def aclose(self) -> None:
        """Stop the actors this run started; disconnect when `connect` connected."""
        self.close_now()

    def close_now(self) -> None:
        """`aclose`, callable without an event loop (a thread whose caller has gone)."""
        for actor in self._actors:
            try:
                self._ray.kill(actor)
            except Exception:  # an actor already gone
                logger.debug("Ray actor already stopped", exc_info=True)
        self._actors.clear()
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()
        self._owned = False


def _init(
    ray: Any,
    address: str,
    *,
    attempts: int,
    wait_s: float = 1.0,
    cancelled: threading.Event | None = None,
) -> None:
    """``ray.init`` (connect as the driver), tried up to ``attempts`` times.

    Ray Client's server starts a server process of its own for each connection; when that
    process fails to start (seen on a loaded 2-core CI machine, the first connection after
    the head started) the connection ends with ``ConnectionAbortedError`` ("Initialization
    failure from server"), and a new connection usually succeeds. That error alone is tried
    again, after ``wait_s`` × 1, 2, 4 … seconds (at most 8: `CONNECT_RETRIES_MAX` makes
    that 1 and 2 s in practice); any other error is raised at once.
    A wait ends early when ``cancelled`` is set or the asyncio task this thread runs is
    cancelled (`_sleep`).

    Raises:
        ConnectionAbortedError: every attempt failed so; whatever else ``ray.init`` raises.
        asyncio.CancelledError: this thread's task was cancelled during a wait.
    """
    _quiet_ray_worker_log()

    def connect() -> None:
        with warnings.catch_warnings():  # Ray Client warns before it raises
            warnings.simplefilter("ignore")
            ray.init(
                address=None if address == "auto" else address,
                logging_level=logging.WARNING,
                log_to_driver=False,
                configure_logging=False,
            )

    retrying = Retrying(
        retry=retry_if_exception_type(ConnectionAbortedError),
        stop=stop_after_attempt(max(1, attempts)),
        wait=wait_exponential(multiplier=wait_s, max=8.0),
        before_sleep=lambda state: logger.warning(
            "the Ray cluster at %s refused connection attempt %d (%s); trying again",
            address,
            state.attempt_number,
            _reason(state.outcome.exception() if state.outcome else None),
        ),
        sleep=lambda seconds: _sleep(seconds, cancelled),
        reraise=True,
    )
    retrying(connect)


def _sleep(seconds: float, cancelled: threading.Event | None = None) -> None:
    """Sleep ``seconds`` in slices of 0.1 s, ending early when the run is cancelled.

    Raises:
        asyncio.CancelledError: ``cancelled`` is set, or this thread's running asyncio task
            is being cancelled (Ctrl-C or SIGTERM cancels the CLI's main task, which
            otherwise could not see it until every connection attempt had run).
    """
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no event loop runs in this thread
        task = None
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if (task is not None and task.cancelling()) or (cancelled and cancelled.is_set()):
            raise asyncio.CancelledError
        time.sleep(min(left, 0.1))


class _DropThreadWarning(logging.Filter):
    """Drops Ray's "SIGTERM handler is not set because current thread is not the main thread".

    Connecting from a worker thread is deliberate: it leaves the process's own SIGTERM
    handling alone.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


_DROP_THREAD_WARNING = _DropThreadWarning()


def _quiet_ray_worker_log() -> None:
    if threading.current_thread() is not threading.main_thread():
        logging.getLogger("ray._private.worker").addFilter(_DROP_THREAD_WARNING)  # idempotent


def _reason(exc: BaseException | None) -> str:
    """One line for ``exc``: its first line, and its last where that says more.

    Ray's server-side failures put the cause on the last line of a multi-line message.
    """
    if exc is None:
        return "unknown error"
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    if len(lines) > 1 and lines[-1] != lines[0]:
        return f"{lines[0].rstrip(':')}: {lines[-1]}"
    return lines[0]


def _probe(address: str, timeout_s: float = 5.0) -> None:
    """Open (and close) a TCP connection to ``address``'s host and port.

    Raises:
        ConfigurationError: nothing accepts connections there within ``timeout_s``.
    """
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise ConfigurationError(
            f"cannot connect to the Ray cluster at {address}: {exc.strerror or exc}",
            field=CLUSTER_FIELD,
        ) from exc


def reraise_cause(exc: BaseException) -> None:
    """Raise the worker's own exception carried by a Ray task error, when it has one."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        raise cause from None
