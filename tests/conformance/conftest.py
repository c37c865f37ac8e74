"""The ``backend`` fixture: every conformance test runs once per store backend.

To add a backend, add a factory to `BACKEND_FACTORIES` and a `pytest.param` to
`BACKEND_PARAMS` (with its marker, e.g. ``pytest.mark.postgres``). A factory gets the test's
``pytest.FixtureRequest`` (for session fixtures such as ``postgres_url``) and a fresh temporary
directory, and returns an empty `StoreBackend`; the fixture closes it afterwards.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes import FakeBackend
from tests.support.postgres import fresh_catalog
from unified_kg_rag.adapters.sqlite import SqliteBackend
from unified_kg_rag.config.models import PostgresConfig, SqliteAnnConfig, SqliteConfig
from unified_kg_rag.ports import StoreBackend


def _sqlite(_request: pytest.FixtureRequest, tmp_path: Path) -> StoreBackend:
    return SqliteBackend(tmp_path / "state" / "ukr.db", SqliteConfig(busy_timeout_s=5.0))


def _sqlite_ann(_request: pytest.FixtureRequest, tmp_path: Path) -> StoreBackend:
    """SQLite with every non-empty collection served by the HNSW index (threshold 0)."""
    ann = SqliteAnnConfig(exact_search_max_vectors=0)
    return SqliteBackend(tmp_path / "state" / "ukr.db", SqliteConfig(busy_timeout_s=5.0, ann=ann))


def _postgres(request: pytest.FixtureRequest, _tmp_path: Path) -> StoreBackend:
    from unified_kg_rag.adapters.postgres.backend import PostgresBackend

    url = request.getfixturevalue("postgres_url")
    return PostgresBackend(url, PostgresConfig(schema_name=fresh_catalog(), pool_min_size=0))


BACKEND_FACTORIES: dict[str, Callable[[pytest.FixtureRequest, Path], StoreBackend]] = {
    "fake": lambda _request, _tmp: FakeBackend(),
    "sqlite": _sqlite,
    "postgres": _postgres,
    "sqlite_ann": _sqlite_ann,
}

BACKEND_PARAMS = [
    pytest.param("fake", marks=pytest.mark.unit),
    pytest.param("sqlite", marks=pytest.mark.integration),
    pytest.param("postgres", marks=[pytest.mark.integration, pytest.mark.postgres]),
]


SQLITE_ANN_PARAM = pytest.param("sqlite_ann", marks=pytest.mark.integration)
"""The SQLite store through its HNSW index: added by the search-index suite only."""


@pytest.fixture(params=BACKEND_PARAMS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreBackend]:
    store = BACKEND_FACTORIES[request.param](request, tmp_path)
    yield store
    asyncio.run(store.aclose())
