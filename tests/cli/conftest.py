"""Fixtures shared by the CLI tests."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A `CliRunner` in an environment without ``UKR_`` variables (the caller's settings)."""
    for key in list(os.environ):
        if key.upper().startswith("UKR_"):
            monkeypatch.delenv(key)
    return CliRunner()
