"""The standalone HTML export (`ukr graph export --format html`) opened from disk in chromium.

Uses the web bundle's real ``viewer.html`` (built by ``make web``); skips while the bundle has
none. The page must run with no server (a ``file://`` URL), draw the graph it holds, and
treat hostile labels as text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from unified_kg_rag.retrieval.graph_view.export import STATIC_DIR, viewer_page
from unified_kg_rag.retrieval.graph_view.models import GraphSlice

pytestmark = pytest.mark.integration

HOSTILE = ['</script><script>window.__xss = 1</script>', '<img src=x onerror="window.__xss=1">',
           "Warsaw & \u2028 Kraków"]  # fmt: skip


def hostile_slice() -> GraphSlice:
    nodes = [{"key": f"n{i}", "attributes": {"label": label, "entity_type": "GEO",
                                             "degree": 2, "depth": 0, "trace": i == 0,
                                             "sources": [1] if i == 0 else None}}
             for i, label in enumerate(HOSTILE)]  # fmt: skip
    edges = [{"key": f"e{i}", "source": f"n{i}", "target": f"n{(i + 1) % 3}",
              "attributes": {"weight": 1.0, "relation": "NEAR"}} for i in range(3)]  # fmt: skip
    return GraphSlice.model_validate({
        "attributes": {"index": "default", "graph": "entities", "label": "*", "centre": None,
                       "max_depth": 0, "max_nodes": 3, "truncated": False},
        "options": {"type": "directed", "multi": True}, "nodes": nodes, "edges": edges,
    })  # fmt: skip


@pytest.mark.skipif(not (STATIC_DIR / "viewer.html").is_file(),
                    reason="the web bundle has no viewer.html yet (make web)")  # fmt: skip
def test_the_exported_page_runs_from_disk_and_escapes_labels(
    browser: Any, tmp_path: Path, web_artifacts: Path
) -> None:
    page_file = tmp_path / "graph.html"
    page_file.write_text(viewer_page(hostile_slice()), encoding="utf-8")
    page = browser.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(page_file.as_uri())
    page.wait_for_selector("canvas")  # sigma drew
    assert page.get_by_role("heading", level=1).inner_text() == "Whole graph of index default (3 nodes)"
    page.screenshot(path=str(web_artifacts / "export-standalone.png"))
    assert errors == []
    assert page.evaluate("window.__xss") is None
    assert [u for u in requests if not u.startswith(("file:", "data:", "blob:"))] == []
    page.close()
