"""Read-only SQLite access for message archives: open, introspect, explain failures.

`connect_readonly` opens a file with a ``file:…?mode=ro`` URI and reads its schema at once,
so a lock (``SQLITE_BUSY`` after the busy timeout) or a corrupt file fails here. Only when
that open fails for another reason *and* the file's folder is not writable (SQLite cannot
create the ``-shm`` index a WAL reader needs) is the file reopened with ``immutable=1``: no
locking and no sidecar files, at the price of not reading a ``-wal`` that was never
checkpointed (a warning says so). A locked file is never reopened that way: immutable reads
of a file mid-write could be torn.

Source: SQLite's URI parameters (``mode=ro``, ``immutable``) and WAL read-only rules
(sqlite.org/wal.html, "Read-Only Databases"); seed 001 (``_connect_ro``).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

__all__ = [
    "SQLITE_MAGIC",
    "column_names",
    "connect_readonly",
    "failure_reason",
    "is_locked",
    "table_names",
]

logger = logging.getLogger(__name__)

SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite 3 database file."""


def connect_readonly(path: Path, timeout: float, *, probe: bool = False) -> sqlite3.Connection:
    """Open ``path`` read-only and read its schema (so a lock or corruption shows here).

    Falls back to ``immutable=1`` only when the read-only open fails, not for a lock, and the
    folder is not writable (SQLite cannot create the ``-shm`` a WAL reader needs there).

    Args:
        path: the database file.
        timeout: seconds to wait on another connection's lock (the busy timeout).
        probe: a format probe: the immutable fallback is logged at DEBUG (the parse that
            follows warns once).

    Raises:
        sqlite3.Error: the file cannot be opened or its schema read.
    """
    uri = Path(path).resolve().as_uri()
    try:
        return _open(f"{uri}?mode=ro", timeout)
    except sqlite3.OperationalError as exc:
        folder = Path(path).resolve().parent
        if is_locked(exc) or os.access(folder, os.W_OK):
            raise  # a lock is never bypassed: immutable=1 would read a file mid-write
    wal = Path(f"{path}-wal")
    note = ("changes still in its -wal file are not read" if wal.exists()
            else "it has no -wal file, so nothing is missed")
    logger.log(logging.DEBUG if probe else logging.WARNING,
               "%s: opened with immutable=1 (read-only folder): %s", path, note)
    return _open(f"{uri}?mode=ro&immutable=1", timeout)


def _open(uri: str, timeout: float) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def table_names(conn: sqlite3.Connection) -> set[str]:
    """Return the names of the tables of ``conn``'s main database."""
    return {
        str(name)
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }


def column_names(conn: sqlite3.Connection, table: str) -> set[str]:
    """Return the column names of ``table`` (empty when there is no such table).

    ``table`` must be a trusted identifier (a constant of the caller): it is interpolated.
    """
    return {str(row[1]) for row in conn.execute(f"PRAGMA table_info({table})")}


def is_locked(exc: sqlite3.Error) -> bool:
    """Return True when ``exc`` says another connection holds a lock (busy or locked)."""
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def failure_reason(exc: Exception) -> str:
    """A one-line reason for a SQLite failure."""
    text = " ".join(str(exc).split())
    if isinstance(exc, sqlite3.Error) and is_locked(exc):
        return "database is locked by another process (quit Messages or copy the file)"
    if "not a database" in text or "malformed" in text:
        return f"corrupt or not a SQLite database ({text})"
    return f"cannot read SQLite database ({text})"
