"""Pytest fixtures built on `tests.support` (import them into a test module or conftest)."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.openai_server import FakeOpenAIServer

__all__ = ["openai_server", "postgres_url"]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A started `FakeOpenAIServer` on 127.0.0.1, stopped after the test."""
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """The URL of a real PostgreSQL + pgvector server for this test session.

    Its data folder is a private temporary folder, not one under pytest's ``tmp_path``
    root: pytest keeps only the three newest session folders of a user, so a second test
    session started meanwhile deleted the first one's running server.

    Fails (never skips) when no server can be started: see `tests.support.postgres`.
    """
    from tests.support.postgres import start_server

    data_dir = Path(tempfile.mkdtemp(prefix="ukr-test-pgdata-"))
    try:
        url, server = start_server(data_dir)
    except Exception as exc:
        shutil.rmtree(data_dir, ignore_errors=True)
        pytest.fail(f"no PostgreSQL server for the postgres tests: {exc}", pytrace=False)
    yield url
    if server is not None:
        server.cleanup()  # type: ignore[attr-defined]
    shutil.rmtree(data_dir, ignore_errors=True)
