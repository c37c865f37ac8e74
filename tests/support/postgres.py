"""A real PostgreSQL 16 + pgvector server for tests: `pgserver` in-process, or a given URL.

``UKR_TEST_POSTGRES_URL`` (a libpq URL of a database the tests may create schemas in) wins;
otherwise the ``pgserver`` wheel starts a private server on a Unix socket under a temporary
directory (offline; it bundles pgvector). A server that cannot be started fails the tests that
need it: PostgreSQL tests are never skipped silently.

Each test gets its own catalog schema (`fresh_catalog`), so tests share the server but never
each other's data.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import socket
import struct
import threading
import uuid
from pathlib import Path

__all__ = ["PrivateServer", "TcpForwarder", "fresh_catalog", "start_server"]

_counter = itertools.count()


def start_server(data_dir: Path) -> tuple[str, object | None]:
    """Return ``(url, handle)``: the test database URL and the pgserver handle (None when
    ``UKR_TEST_POSTGRES_URL`` is used).

    Raises:
        RuntimeError: pgserver is not installed or the server did not start.
    """
    url = os.environ.get("UKR_TEST_POSTGRES_URL")
    if url:
        return url, None
    try:
        import pgserver
    except ImportError as exc:  # pragma: no cover - the dev extra installs it
        raise RuntimeError(
            "PostgreSQL tests need the pgserver package (pip install -e '.[dev]') or "
            "UKR_TEST_POSTGRES_URL"
        ) from exc
    server = pgserver.get_server(str(data_dir), cleanup_mode="stop")
    return str(server.get_uri()), server


def fresh_catalog() -> str:
    """Return a catalog schema name no other test in this run (or earlier run) uses."""
    return f"t{next(_counter)}_{uuid.uuid4().hex[:8]}"


class PrivateServer:
    """A pgserver PostgreSQL of one test, which the test may crash (`kill`).

    Outage tests cannot use the session's server (other tests need it) nor
    ``UKR_TEST_POSTGRES_URL`` (a server the tests do not own).

    Args:
        data_dir: an empty folder for the cluster.

    Raises:
        RuntimeError: pgserver is not installed.
    """

    def __init__(self, data_dir: Path) -> None:
        try:
            import pgserver
        except ImportError as exc:  # pragma: no cover - the dev extra installs it
            raise RuntimeError("outage tests need the pgserver package") from exc
        self._server = pgserver.get_server(str(data_dir), cleanup_mode="stop")
        self.url: str = str(self._server.get_uri())

    @property
    def socket_dir(self) -> str:
        """The folder of the server's Unix socket (the URL's ``host``)."""
        return str(self.url.rsplit("host=", 1)[1])

    def kill(self) -> None:
        """Crash the server: SIGKILL its postmaster (its socket file stays, refusing)."""
        pid = self._server.get_pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)

    def cleanup(self) -> None:
        """Stop the server if it still runs."""
        self._server.cleanup()


class TcpForwarder:
    """A TCP port on 127.0.0.1 that forwards every connection to a PostgreSQL Unix socket.

    `drop_connections` resets the connections it carries (a network cut, the server still
    up); `stop` also closes the port, so that nothing listens on it any more.

    Args:
        socket_path: the server's socket file (``<dir>/.s.PGSQL.5432``).
    """

    def __init__(self, socket_path: str) -> None:
        self._target = socket_path
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="tcp-forward").start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # stopped
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(self._target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                dst.sendall(data)
        for end in (src, dst):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def url(self, base: str) -> str:
        """Return ``base`` (a pgserver URL, empty password) pointed at this port."""
        from psycopg.conninfo import conninfo_to_dict

        info = conninfo_to_dict(base)
        return f"postgresql://{info['user']}:@127.0.0.1:{self.port}/{info['dbname']}"

    def drop_connections(self) -> None:
        """Reset every forwarded connection (the port keeps accepting new ones)."""
        with self._lock:
            sockets, self._open = self._open, []
        for end in sockets:
            with contextlib.suppress(OSError):
                end.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                end.shutdown(socket.SHUT_RDWR)  # wakes the pump blocked in recv
            end.close()

    def stop(self) -> None:
        """Close the port (connecting to it is refused) and every forwarded connection."""
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept
        self._listener.close()
        self.drop_connections()
