"""The web app's Ask view in a real browser (the system's chromium, `conftest.browser`) against
`ukr serve`; skipped when playwright or chromium is absent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.server import index_good_docs, serving

pytestmark = pytest.mark.integration

KEY = "web-ui-test-key"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three small documents, indexed; tests request it before `browser`: indexing runs its
    own event loop, which cannot start while playwright's runs."""
    pytest.importorskip("uvicorn")
    folder = tmp_path_factory.mktemp("web-ui")
    index_good_docs(folder)
    return folder


def test_ask_streams_an_answer_with_cited_sources(
    project: Path, browser: Any, web_artifacts: Path
) -> None:
    from unified_kg_rag.service.app import create_app

    with serving(create_app(project, environ={})) as url:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url + "/")
        page.get_by_label("naive", exact=True).check()
        assert page.get_by_label("local", exact=True).is_disabled()  # the index lacks graphrag
        page.get_by_label("Question", exact=True).fill("What do barn owls hunt?")
        page.get_by_role("button", name="Ask").click()
        page.wait_for_selector(".answer[data-state=done]", timeout=120_000)
        assert "voles" in page.inner_text(".answer-text")
        cited = page.locator(".source.cited")
        assert cited.count() >= 1
        cited.filter(has_text="Owls").locator("summary").click()
        passages = [cited.nth(i).inner_text() for i in range(cited.count())]
        assert any("voles" in text for text in passages)
        assert page.get_by_role("heading", name="Timings and usage").is_visible()
        page.screenshot(path=str(web_artifacts / "ask.png"), full_page=True)
        assert (web_artifacts / "ask.png").stat().st_size > 0
        assert errors == []
        page.close()


def test_a_required_key_is_asked_for_and_kept_for_the_tab(project: Path, browser: Any) -> None:
    from unified_kg_rag.service.app import create_app

    with serving(create_app(project, environ={"UKR_API_KEYS": f"{KEY}:read"})) as url:
        context = browser.new_context()
        page = context.new_page()
        page.goto(url + "/")
        page.get_by_label("Key", exact=True).fill("wrong")
        page.get_by_role("button", name="Use this key").click()
        page.get_by_text("The server refused this key").wait_for()
        page.get_by_label("Key", exact=True).fill(KEY)
        page.get_by_role("button", name="Use this key").click()
        page.get_by_label("naive", exact=True).wait_for()
        assert page.evaluate("sessionStorage.getItem('ukr.apiKey')") == KEY
        assert page.evaluate("localStorage.length") == 0
        context.close()
