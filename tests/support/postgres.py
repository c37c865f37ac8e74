"""A real PostgreSQL 16 + pgvector server for tests: `pgserver` in-process, or a given URL.

``UKR_TEST_POSTGRES_URL`` (a libpq URL of a database the tests may create schemas in) wins;
otherwise the ``pgserver`` wheel starts a private server on a Unix socket under a temporary
directory (offline; it bundles pgvector). A server that cannot be started fails the tests that
need it: PostgreSQL tests are never skipped silently.

Each test gets its own catalog schema (`fresh_catalog`), so tests share the server but never
each other's data.
"""

from __future__ import annotations

import itertools
import os
import uuid
from pathlib import Path

__all__ = ["fresh_catalog", "start_server"]

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
