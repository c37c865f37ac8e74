"""The PostgreSQL + pgvector store backend (``stores.kind: postgres``).

Every store port (search index, graph, doc registry, record store) on one database, each index
in its own schema. Importing this package registers the backend loader in `STORE_BACKENDS`
and imports nothing else: psycopg and pgvector (the ``postgres`` extra) load when a project
configured for PostgreSQL opens its stores.
"""

from __future__ import annotations

from pathlib import Path

from unified_kg_rag.adapters.registry import STORE_BACKENDS
from unified_kg_rag.config.models import StoresConfig
from unified_kg_rag.ports import StoreBackend
from unified_kg_rag.util.errors import ConfigurationError

__all__ = ["load_postgres_backend"]


def load_postgres_backend(config: StoresConfig, project_dir: Path) -> StoreBackend:
    """Build the PostgreSQL backend of a project.

    Args:
        config: the ``stores`` section; ``postgres.url`` is required.
        project_dir: unused (the database is not in the project directory).

    Returns:
        A `PostgresBackend`; nothing connects until first used.

    Raises:
        ConfigurationError: ``stores.postgres.url`` is not set, or the ``postgres`` extra
            (psycopg, psycopg-pool, pgvector) is not installed.
    """
    del project_dir
    if config.postgres.url is None or not config.postgres.url.get_secret_value().strip():
        raise ConfigurationError(
            "is required when stores.kind is 'postgres' (set it in ukr.yaml or in the "
            "environment variable UKR_STORES__POSTGRES__URL)",
            field="stores.postgres.url",
        )
    url = config.postgres.url.get_secret_value().strip()
    scheme = url.split("://", 1)[0].lower() if "://" in url else None
    if scheme is not None and scheme not in ("postgresql", "postgres"):
        hint = " (drop the '+driver' part of a SQLAlchemy URL)" if "+" in scheme else ""
        raise ConfigurationError(
            f"must start with postgresql:// (got {scheme}://){hint}", field="stores.postgres.url"
        )
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict

        from unified_kg_rag.adapters.postgres.backend import PostgresBackend
    except ImportError as exc:
        raise ConfigurationError(
            f"needs the postgres extra ({exc.name} is missing): "
            "pip install 'unified-kg-rag[postgres]' "
            "(from a checkout: pip install -e '.[postgres]')",
            field="stores.kind",
        ) from exc
    try:
        conninfo_to_dict(url)
    except psycopg.Error:
        raise ConfigurationError(  # the message would echo the URL and its password
            "is not a valid libpq connection URL (postgresql://USER:PASSWORD@HOST:PORT/DB; "
            "percent-encode special characters of the password, e.g. '/' as %2F)",
            field="stores.postgres.url",
        ) from None
    return PostgresBackend(url, config.postgres)


STORE_BACKENDS.register("postgres", load_postgres_backend)
