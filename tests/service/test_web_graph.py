"""The web app's Graph view in a real browser (the system's chromium, `conftest.browser`, whose
SwiftShader WebGL sigma draws with) against `ukr serve`, over the two graphs of
`tests.support.graph_project`: the LLM entity graph (``default``) and the `lazy` concept graph
(``docs``). Skipped when playwright or chromium is absent."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.graph_project import build_project
from tests.support.server import serving
from tests.support.viewer import embed, serve
from tests.support.web import serious_findings

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


def canvas_nodes_until(page: Any, done: Callable[[int], bool], timeout_s: float = 30.0) -> int:
    """Poll the canvas's node count (``data-nodes``) until ``done`` holds; the count.

    Polls from Python: `page.wait_for_function` evaluates its predicate with ``eval``, which
    the page's Content-Security-Policy (no ``unsafe-eval``) refuses once it has to poll.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        count = int(page.get_attribute(".graph-canvas", "data-nodes") or 0)
        if done(count) or time.monotonic() > deadline:
            return count
        time.sleep(0.1)


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
    assert not panel.locator("details.passage summary").first.inner_text().startswith("#")
    panel.locator("details.passage summary").first.click()
    assert "Marie Curie" in panel.locator(".passage-text").first.inner_text()
    nodes = page.get_by_role("list", name="Drawn nodes")
    nodes.locator("button", has_text="Pierre Curie").click()
    page.locator(".node-panel").get_by_role("button", name="Expand").click()
    assert canvas_nodes_until(page, lambda n: n > 6) > 6
    assert nodes.locator("button", has_text="Sorbonne").count() == 1  # his neighbour, added
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
    assert page.locator(".truncated-note").inner_text() == "truncated: showing 3 nodes; more lie within reach"
    page.get_by_role("list", name="Drawn nodes").locator("button", has_text="Poland").click()
    page.locator(".node-panel").get_by_role("button", name="Expand").click()
    assert page.locator(".expand-note").inner_text() == "Max nodes (3) reached: raise Max nodes to expand"
    assert canvas_nodes_until(page, lambda n: n == 3) == 3
    assert page.locator(".node-list li").count() == 3  # expanding stays under the cap


def test_show_draws_the_best_match_and_says_when_nothing_matches(page: Any, url: str) -> None:
    page.goto(url + "/#graph")
    search = page.get_by_label("Entity or concept")
    search.fill("Shackl")
    page.get_by_text("no match", exact=True).wait_for()
    page.get_by_role("button", name="Show").click()
    page.get_by_text("No entity or concept matches 'Shackl' in this graph").wait_for()
    assert "404" not in page.locator(".graph-view").inner_text()
    assert "Shackl" not in page.evaluate("location.hash")  # nothing put in the address
    search.fill("wars")  # typing clears the old message
    assert page.get_by_text("No entity or concept matches").count() == 0
    page.get_by_role("button", name="Show").click()
    assert drawn_nodes(page) == 6
    assert "label=Warsaw" in page.evaluate("location.hash")
    assert page.locator(".match-note").inner_text().endswith("showing the best match: Warsaw")


def test_an_index_without_a_graph_says_so(page: Any, url: str) -> None:
    page.goto(url + "/#graph?index=nope&label=Warsaw")
    page.get_by_text("No index 'nope' on this server: pick another index.").wait_for()
    assert page.locator(".graph-canvas").count() == 0  # not silently the default index's graph
    page.get_by_label("Index").select_option("docs")
    assert "index=docs" in page.evaluate("location.hash")


def test_dark_scheme_draws_the_canvas_dark(url: str, browser: Any, web_artifacts: Path) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900}, color_scheme="dark")
    page.goto(url + "/#graph?label=Warsaw")
    assert drawn_nodes(page) == 6
    background = page.eval_on_selector(".graph-canvas", "e => getComputedStyle(e).backgroundColor")
    assert background == "rgb(13, 17, 23)"  # the page's dark background
    page.screenshot(path=str(web_artifacts / "graph-dark.png"), full_page=True)
    page.close()


def test_the_concept_graph_of_another_index(page: Any, url: str, web_artifacts: Path) -> None:
    page.goto(url + "/#graph?index=docs&label=barn%20owl&depth=1")
    assert drawn_nodes(page) >= 2
    assert page.get_by_label("Index").input_value() == "docs"
    page.get_by_role("list", name="Drawn nodes").locator("button", has_text="barn owl").first.click()
    panel = page.locator(".node-panel")
    panel.locator("details.passage summary").first.wait_for()
    assert "owls.md" in panel.inner_text() or "birders" in panel.inner_text()
    names = page.locator(".communities .community-list button").all_inner_texts()
    assert names and not any(n.startswith("community ") for n in names), names  # top members
    page.screenshot(path=str(web_artifacts / "graph-concepts.png"), full_page=True)


def test_show_in_graph_draws_an_answers_query_trace(page: Any, url: str, web_artifacts: Path) -> None:
    """Ask on the concept graph's index, then "Show in graph": the concepts its passages
    state are drawn highlighted, each naming the numbered source it came through."""
    page.goto(url + "/#ask")
    page.get_by_label("Index", exact=True).select_option("docs")
    page.get_by_label("naive", exact=True).check()
    page.get_by_label("Question", exact=True).fill("Who saw a barn owl hunting voles?")
    page.get_by_role("button", name="Ask", exact=True).click()
    page.locator(".answer[data-state=done]").wait_for(timeout=120_000)
    page.get_by_role("button", name="Show in graph").click()
    traced = page.locator(".node-button.traced")
    traced.first.wait_for(timeout=30_000)
    labels = [traced.nth(i).inner_text() for i in range(traced.count())]
    assert any("barn owl" in label for label in labels), labels
    assert page.locator(".node-button").count() > traced.count() - 1  # inside its neighbourhood
    traced.filter(has_text="barn owl").first.click()
    assert "came through source [" in page.locator(".trace-note").inner_text()
    assert page.get_by_label("Index").input_value() == "docs"  # the answer's index, not the first
    heading = page.locator(".trace-heading")
    assert heading.get_by_role("heading").inner_text() == "Query trace: Who saw a barn owl hunting voles?"
    assert heading.get_by_role("link", name="Back to Ask").get_attribute("href") == "#ask"
    assert "outlined: in the answer's context" in page.locator(".trace-key").inner_text()
    assert serious_findings(page) == ""
    page.screenshot(path=str(web_artifacts / "trace.png"), full_page=True)


def test_a_trace_lost_by_a_reload_says_so(page: Any, url: str) -> None:
    page.goto(url + "/#graph?trace=1")
    page.get_by_text("No query trace to draw").wait_for()
    assert page.get_by_label("Entity or concept").is_visible()


HOSTILE = '<img src=x onerror="window.__xss=1">'


def test_the_standalone_viewer_draws_an_embedded_trace_without_the_network(
    browser: Any, tmp_path: Path
) -> None:
    """viewer.html with a graph in its ``ukr-graph`` script, as ``ukr graph export --format
    html`` writes it: drawn, a node read from the list, data shown as text, no request
    beyond the page's own files."""
    from unified_kg_rag.service.web import STATIC_DIR

    graph = {
        "attributes": {"label": "Warsaw", "truncated": True, "total": 9},
        "options": {"type": "directed", "multi": True},
        "nodes": [
            {"key": "a", "attributes": {"label": "Warsaw", "entity_type": "GEO", "degree": 2,
                                        "community": "c1", "trace": True, "sources": [2]}},
            {"key": "b", "attributes": {"label": HOSTILE, "entity_type": "PERSON", "degree": 1,
                                        "description": "</script><b>bold</b>", "community": "c1"}},
            {"key": "c", "attributes": {"label": "Poland", "entity_type": "GEO", "degree": 1}},
        ],
        "edges": [{"key": "e1", "source": "b", "target": "a",
                   "attributes": {"relation": "BORN_IN", "trace": True}}],
    }  # fmt: skip
    manifest = json.loads((STATIC_DIR / "viewer.json").read_text(encoding="utf-8"))
    for name in manifest["js"] + manifest["css"]:  # the manifest names all the viewer needs
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(STATIC_DIR / name, tmp_path / name)
    page_text = embed((STATIC_DIR / "viewer.html").read_text(encoding="utf-8"), graph)
    (tmp_path / "viewer.html").write_text(page_text, encoding="utf-8")
    with serve(tmp_path) as base:
        page = browser.new_page()
        errors: list[str] = []
        requests: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("request", lambda r: requests.append(r.url))
        page.goto(f"{base}/viewer.html")
        assert drawn_nodes(page) == 3
        assert page.get_by_role("heading", level=1).inner_text() == "Neighbourhood of Warsaw"
        assert "truncated: showing 3 of 9 nodes" in page.get_by_role("status").inner_text()
        assert "community c1" in page.get_by_role("list", name="Colours by community").inner_text()
        nodes = page.get_by_role("list", name="Drawn nodes")
        nodes.locator("button", has_text="Warsaw").click()
        assert page.locator(".trace-note").inner_text() == "came through source [2]"
        nodes.locator("button", has_text="onerror").click()
        assert page.locator("#node-heading").inner_text() == HOSTILE
        assert "</script><b>bold</b>" in page.locator("aside").inner_text()
        assert page.evaluate("window.__xss") is None
        assert errors == []
        page.close()
    own = {f"{base}/viewer.html", *(f"{base}/{n}" for n in manifest["js"] + manifest["css"])}
    network = {url for url in requests if not url.startswith("blob:")}  # the layout's worker
    assert network - own <= {f"{base}/favicon.ico"}
