"""The embedded SQLite store backend (``stores.kind: sqlite``), the default.

One database file per project holds every index: search records with FTS5 and vectors, the
graph, the doc registry and the record store. Importing this package registers the backend
loader in `STORE_BACKENDS` and opens nothing.
"""

from __future__ import annotations

from pathlib import Path

from unified_kg_rag.adapters.registry import STORE_BACKENDS
from unified_kg_rag.adapters.sqlite.backend import SqliteBackend
from unified_kg_rag.config.models import StoresConfig
from unified_kg_rag.ports import StoreBackend

__all__ = ["SqliteBackend", "load_sqlite_backend"]


def load_sqlite_backend(config: StoresConfig, project_dir: Path) -> StoreBackend:
    """Build the SQLite backend of a project.

    Args:
        config: the ``stores`` section; ``sqlite.path`` is relative to ``project_dir`` unless
            absolute (``~`` is expanded).
        project_dir: the project directory (where ``ukr.yaml`` lives).

    Returns:
        A `SqliteBackend`; the file is not opened or created until first used.
    """
    path = Path(config.sqlite.path).expanduser()
    if not path.is_absolute():
        path = project_dir / path
    return SqliteBackend(path, config.sqlite)


STORE_BACKENDS.register("sqlite", load_sqlite_backend)
