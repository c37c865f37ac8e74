"""Fixtures of the web app's browser tests: the system's chromium, and where screenshots go.

The browser is Debian's chromium (``apt-get install chromium``) or ``UKR_CHROMIUM``, driven by
playwright; nothing runs ``playwright install``. Without either the browser tests skip, saying
which is missing.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_CANDIDATES = ("/usr/lib/chromium/chromium", "chromium", "chromium-browser")


def chromium_binary() -> str | None:
    """The chromium to drive: ``UKR_CHROMIUM``, else the system's; None when there is none."""
    named = os.environ.get("UKR_CHROMIUM")
    if named:
        return named
    for candidate in _CANDIDATES:
        found = shutil.which(candidate) or (candidate if Path(candidate).is_file() else None)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless chromium of the system, or a skip saying what is missing.

    Request it after any fixture that runs its own event loop (indexing): playwright's sync
    API holds one while the browser is open.
    """
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    executable = chromium_binary()
    if executable is None:
        pytest.skip("no chromium binary (apt-get install chromium, or set UKR_CHROMIUM)")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, headless=True,
                                              args=["--no-sandbox", "--disable-gpu"])  # fmt: skip
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def web_artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the browser tests save screenshots of each view: ``UKR_TEST_ARTIFACTS`` (CI keeps
    it), else a folder of the test run's temporary directory."""
    named = os.environ.get("UKR_TEST_ARTIFACTS")
    folder = Path(named) if named else tmp_path_factory.mktemp("web-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
