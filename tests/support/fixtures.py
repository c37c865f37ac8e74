"""Pytest fixtures built on `tests.support` (import them into a test module or conftest)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.openai_server import FakeOpenAIServer

__all__ = ["openai_server"]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A started `FakeOpenAIServer` on 127.0.0.1, stopped after the test."""
    with FakeOpenAIServer() as server:
        yield server
