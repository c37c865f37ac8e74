"""A real Ray cluster on 127.0.0.1 for tests and benchmarks: ``ray start --head --block``.

`LocalRayCluster` starts the head node in a subprocess of its own session (so stopping it
ends exactly the processes it started, never another Ray on the machine), with the Ray
Client server on, and waits until ``ray start`` says the runtime started (the Ray Client
port answers earlier: Ray starts its server before the raylet) and the client port answers.
Its workers import
``unified_kg_rag`` from the directory this process imports it from (``PYTHONPATH``), so a
checkout under test runs its own code on the workers.

Token authentication (Ray 2.5x turns it on when ``~/.ray/auth_token`` exists) is set
explicitly with ``RAY_AUTH_MODE``, the head's and this process's alike (`auth_env`), so a
token file some other Ray run left does not make the Ray Client connection time out.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import unified_kg_rag

__all__ = ["AUTH_ENV", "LocalRayCluster", "free_port", "session_hooks"]

AUTH_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
"""What the head and the connecting process both need in their environment."""

STARTED = b"Ray runtime started."
"""What ``ray start`` prints once every head process (the raylet too) is up."""


_SESSION_HOOKS = """\
import os
import time

with open("/proc/self/cmdline", "rb") as f:
    _argv = f.read().split(b"\\0")
_shim = any(a.endswith(b"setup_worker.py") for a in _argv)  # execs the server next
if any(b"specific-server" in a for a in _argv) and not _shim:
    _marks = os.environ.get("UKR_TEST_SESSION_MARKERS")
    if _marks:
        open(os.path.join(_marks, "started"), "a").close()
    time.sleep(float(os.environ.get("UKR_TEST_SESSION_DELAY_S", "0")))
    if _marks:
        open(os.path.join(_marks, "slept"), "a").close()
    _path = os.environ.get("UKR_TEST_SESSION_FAILURES")
    _left = 0
    if _path:
        with open(_path, "r+") as f:
            _left = int(f.read() or 0)
            if _left > 0:
                f.seek(0)
                f.truncate()
                f.write(str(_left - 1))
    if _left > 0:
        os._exit(3)  # the session's server dies before it serves
"""


def session_hooks(folder: Path, *, failures: Path | None = None, delay_s: float = 0.0,
                  markers: Path | None = None) -> tuple[list[str], dict[str, str]]:  # fmt: skip
    """``(paths, env)`` for a `LocalRayCluster` whose Ray Client sessions misbehave.

    A ``sitecustomize`` written to ``folder`` runs in each session's server process (Ray
    Client starts one per connection, ``--mode specific-server``): it sleeps ``delay_s``
    first (a slow connection), then, while the number in the file ``failures`` is above 0,
    takes 1 off and exits, so Ray refuses that session ("Initialization failure from
    server"). With ``markers`` (a folder) it creates ``started`` there on entry and ``slept``
    after the delay. The head waits 6 s (not Ray's 30) past the delay for a session's server
    to answer.
    """
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(_SESSION_HOOKS, encoding="utf-8")
    env = {"UKR_TEST_SESSION_DELAY_S": str(delay_s),
           "RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S": str(6 + int(delay_s))}  # fmt: skip
    if failures is not None:
        env["UKR_TEST_SESSION_FAILURES"] = str(failures)
    if markers is not None:
        env["UKR_TEST_SESSION_MARKERS"] = str(markers)
    return [str(folder)], env


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class LocalRayCluster:
    """A one-node Ray cluster with ``cpus`` CPUs; ``client_address`` is its ``ray://`` address.

    ``paths`` go first on the head's ``PYTHONPATH`` and ``env`` into its environment (a test
    that changes how the head's processes start).
    """

    def __init__(
        self,
        cpus: int = 2,
        *,
        start_timeout_s: float = 120.0,
        paths: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.cpus = cpus
        self.paths = list(paths)
        self.env = dict(env or {})
        self.port = free_port()
        self.client_port = free_port()
        self.start_timeout_s = start_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = tempfile.TemporaryFile()  # noqa: SIM115  (closed by stop)

    @property
    def client_address(self) -> str:
        """``ray://127.0.0.1:PORT`` (Ray Client)."""
        return f"ray://127.0.0.1:{self.client_port}"

    @property
    def gcs_address(self) -> str:
        """``127.0.0.1:PORT`` (the head's GCS)."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> LocalRayCluster:
        """Start the head; wait for its start message and the client port.

        Raises:
            RuntimeError: (with the end of ``ray start``'s output) it did not come up within
                ``start_timeout_s``.
        """
        ray_bin = Path(sys.executable).with_name("ray")
        src = str(Path(unified_kg_rag.__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            [*self.paths, src, *filter(None, [os.environ.get("PYTHONPATH")])]),
            **AUTH_ENV, "PYTHONUNBUFFERED": "1", **self.env}  # fmt: skip
        cmd = [str(ray_bin), "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
               "--port", str(self.port), "--ray-client-server-port", str(self.client_port),
               "--num-cpus", str(self.cpus), "--include-dashboard", "false",
               "--disable-usage-stats"]  # fmt: skip
        self._proc = subprocess.Popen(cmd, env=env, stdout=self._log, stderr=subprocess.STDOUT,
                                      start_new_session=True)  # fmt: skip
        try:
            if self._wait_started():
                return self
        except BaseException:  # Ctrl-C while waiting: the head is in a session of its own
            self.stop()
            raise
        self._log.seek(0)
        log = self._log.read().decode(errors="replace")[-3000:]
        self.stop()
        raise RuntimeError(f"ray start did not come up: {log}")

    def _wait_started(self) -> bool:
        assert self._proc is not None
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            if STARTED not in os.pread(self._log.fileno(), 1 << 24, 0):  # offset untouched
                time.sleep(0.5)
                continue
            try:
                socket.create_connection(("127.0.0.1", self.client_port), timeout=1).close()
                return True
            except OSError:
                time.sleep(0.5)
        return False

    def stop(self) -> None:
        """End the head's session (SIGTERM, then SIGKILL after 5 s)."""
        if self._proc is None:
            return
        try:
            os.killpg(self._proc.pid, signal.SIGTERM)
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
        except ProcessLookupError:
            pass
        self._proc = None
        self._log.close()
        # a head killed before its clean-up leaves its address for `ray.init()` to find
        current = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        if current.is_file() and current.read_text().strip().endswith(f":{self.port}"):
            current.unlink()

    def __enter__(self) -> LocalRayCluster:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
