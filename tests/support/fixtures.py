"""Pytest fixtures built on `tests.support` (import them into a test module or conftest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.openai_server import FakeOpenAIServer

__all__ = ["openai_server", "postgres_url"]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A started `FakeOpenAIServer` on 127.0.0.1, stopped after the test."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a real PostgreSQL + pgvector server for this test session.

    Fails (never skips) when no server can be started: see `tests.support.postgres`.
    """
    from tests.support.postgres import start_server

    try:
        url, server = start_server(tmp_path_factory.mktemp("pgdata"))
    except Exception as exc:
        pytest.fail(f"no PostgreSQL server for the postgres tests: {exc}", pytrace=False)
    yield url
    if server is not None:
        server.cleanup()  # type: ignore[attr-defined]
