"""The web app's Graph view in a real browser (the system's chromium, `conftest.browser`, whose
SwiftShader WebGL sigma draws with) against `ukr serve`, over the two graphs of
`tests.support.graph_project`: the LLM entity graph (``default``) and the `lazy` concept graph
(``docs``). Skipped when playwright or chromium is absent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.graph_project import build_project
from tests.support.server import serving

pytestmark = pytest.mark.integration

DRAWN = ".graph-canvas[data-drawn]"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Both graphs, built before `browser` (indexing runs its own event loop)."""
    pytest.importorskip("uvicorn")
    folder = tmp_path_factory.mktemp("web-graph")
    build_project(folder)
    return folder


@pytest.fixture(scope="module")
def url(project: Path, browser: Any) -> Iterator[str]:
    from unified_kg_rag.service.app import create_app

    with serving(create_app(project, environ={})) as base:
        yield base


@pytest.fixture
def page(url: str, browser: Any) -> Iterator[Any]:
    opened = browser.new_page(viewport={"width": 1280, "height": 1000})
    errors: list[str] = []
    opened.on("pageerror", lambda exc: errors.append(str(exc)))
    yield opened
    opened.close()
    assert errors == []


def drawn_nodes(page: Any) -> int:
    page.wait_for_selector(DRAWN, timeout=30_000)
    return int(page.get_attribute(DRAWN, "data-drawn"))


def test_search_the_entity_graph_select_a_node_and_read_its_passages(
    page: Any, url: str, web_artifacts: Path
) -> None:
    page.goto(url + "/#graph")
    page.get_by_label("Entity or concept").fill("Wars")
    page.get_by_role("list", name="Matching labels").get_by_role("button", name="Warsaw").click()
    assert drawn_nodes(page) == 6  # within two hops of Warsaw
    assert "label=Warsaw" in page.evaluate("location.hash")
    page.get_by_role("list", name="Drawn nodes").locator("button", has_text="Marie Curie").click()
    panel = page.locator(".node-panel")
    assert panel.get_by_role("heading", name="Marie Curie").is_visible()
    panel.get_by_text("The Curies and the Sorbonne").wait_for()  # her communities' report titles
    assert "BORN_IN" in panel.inner_text()
    panel.locator("details.passage summary").first.click()
    assert "Marie Curie" in panel.locator(".passage-text").first.inner_text()
    page.get_by_label("type").check()  # colour by entity type: the legend lists the types
    assert "PERSON" in page.get_by_role("list", name="Colours by type").inner_text()
    page.screenshot(path=str(web_artifacts / "graph.png"), full_page=True)


def test_browse_the_community_hierarchy_and_focus_a_community(
    page: Any, url: str, web_artifacts: Path
) -> None:
    page.goto(url + "/#graph")
    browser_panel = page.locator(".communities")
    browser_panel.get_by_role("button", name="The Curies and the Sorbonne").click()
    detail = browser_panel.locator(".community-detail")
    detail.get_by_text("Marie Curie, born in Warsaw").wait_for()
    assert "5 members" in detail.inner_text()
    detail.get_by_role("button", name="Focus").click()
    assert drawn_nodes(page) == 5
    assert "community=" in page.evaluate("location.hash")
    page.screenshot(path=str(web_artifacts / "community.png"), full_page=True)


def test_a_small_max_nodes_draws_that_many_and_says_it_truncated(page: Any, url: str) -> None:
    page.goto(url + "/#graph?label=Warsaw&max_nodes=3")
    assert drawn_nodes(page) == 3
    assert page.locator(".truncated-note").inner_text().startswith("truncated: showing 3 nodes")
    assert page.get_by_label("Max nodes").input_value() == "3"
    page.get_by_role("list", name="Drawn nodes").locator("button", has_text="Poland").click()
    page.locator(".node-panel").get_by_role("button", name="Expand").click()
    page.wait_for_function("document.querySelector('.graph-canvas').dataset.nodes === '3'")
    assert page.locator(".node-list li").count() == 3  # expanding stays under the cap


def test_the_concept_graph_of_another_index(page: Any, url: str) -> None:
    page.goto(url + "/#graph?index=docs&label=barn%20owl&depth=1")
    assert drawn_nodes(page) >= 2
    assert page.get_by_label("Index").input_value() == "docs"
    page.get_by_role("list", name="Drawn nodes").locator("button", has_text="barn owl").first.click()
    panel = page.locator(".node-panel")
    panel.locator("details.passage summary").first.wait_for()
    assert "owls.md" in panel.inner_text() or "birders" in panel.inner_text()


def test_a_trace_lost_by_a_reload_says_so(page: Any, url: str) -> None:
    page.goto(url + "/#graph?trace=1")
    page.get_by_text("No query trace to draw").wait_for()
    assert page.get_by_label("Entity or concept").is_visible()
