"""Fixtures shared by the CLI tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.openai_server import FakeOpenAIServer


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A `CliRunner` in an environment without ``UKR_`` variables (the caller's settings)."""
    clear_ukr_env(monkeypatch)
    return CliRunner()


def clear_ukr_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Remove every ``UKR_`` variable for the test (the caller's own settings)."""
    for key in list(os.environ):
        if key.upper().startswith("UKR_"):
            monkeypatch.delenv(key)


def openai_env_server(
    monkeypatch: pytest.MonkeyPatch, reply: Callable[[dict[str, Any]], str],
    env: Mapping[str, str] = {},
) -> Iterator[FakeOpenAIServer]:
    """Yield a scripted OpenAI-compatible server the ``UKR_LLM__*`` variables point at.

    The environment is cleared of ``UKR_`` variables first, then ``llm.kind: openai`` with
    the server's URL and key is set, then ``env``; the server stops after the test. Use
    as ``yield from openai_env_server(monkeypatch, reply, {...})`` in a fixture.
    """
    clear_ukr_env(monkeypatch)
    srv = FakeOpenAIServer(reply=reply).start()
    monkeypatch.setenv("UKR_LLM__KIND", "openai")
    monkeypatch.setenv("UKR_LLM__OPENAI__BASE_URL", srv.base_url)
    monkeypatch.setenv("UKR_LLM__OPENAI__API_KEY", "k")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    yield srv
    srv.stop()
