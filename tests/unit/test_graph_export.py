"""The graph export's writers: the standalone-page inliner, GraphML and GEXF (networkx)."""

from __future__ import annotations

import base64
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from tests.support.fake_viewer import SCRIPT, write_fake_viewer

from unified_kg_rag.retrieval.graph_view.export import (
    NO_VIEWER,
    embed_json,
    inline_viewer,
    to_networkx,
    viewer_page,
    write_export,
)
from unified_kg_rag.retrieval.graph_view.models import GraphSlice
from unified_kg_rag.util.errors import ConfigurationError

pytestmark = pytest.mark.unit

HOSTILE = '</script><script>alert(1)</script> & <!-- \u2028\u2029 "quoted"'


def piece() -> GraphSlice:
    return GraphSlice.model_validate({
        "attributes": {"index": "default", "graph": "entities", "label": "trace",
                       "centre": None, "max_depth": 1, "max_nodes": 10, "truncated": False,
                       "communities": [{"id": "c1", "level": 0, "title": "T", "sources": [2]}],
                       "notes": ["source [3]: ..."]},
        "options": {"type": "directed", "multi": True},
        "nodes": [
            {"key": "a", "attributes": {"label": HOSTILE, "entity_type": "PERSON", "degree": 2,
                                        "depth": 0, "community": "c1", "community_level": 0,
                                        "trace": True, "sources": [1, 2]}},
            {"key": "b", "attributes": {"label": "B", "entity_type": "GEO", "degree": 1,
                                        "depth": 1}},
        ],
        "edges": [
            {"key": "r1", "source": "a", "target": "b",
             "attributes": {"weight": 2.5, "relation": "BORN_IN", "description": "d",
                            "trace": True, "sources": [1]}},
            {"key": "r2", "source": "a", "target": "b",
             "attributes": {"weight": 1.0, "relation": "LIVED_IN"}},
        ],
    })  # fmt: skip


class _Scripts(HTMLParser):
    """Collects each <script>'s attributes and text, and every src/href."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.refs: list[str] = []
        self._in: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.refs += [v for k, v in attrs if k in ("src", "href") and v]
        if tag == "script":
            self._in = found
            self.scripts.append((found, ""))

    def handle_data(self, data: str) -> None:
        if self._in is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in = None


def test_embed_json_escapes_what_could_close_the_script_and_parses_back() -> None:
    text = json.dumps({"label": HOSTILE}, ensure_ascii=False)
    safe = embed_json(text)
    assert not re.search(r"[<>&\u2028\u2029]", safe)
    assert json.loads(safe) == {"label": HOSTILE}


def test_the_viewer_becomes_one_file_with_its_assets_and_the_graph_inlined(
    tmp_path: Path,
) -> None:
    static = write_fake_viewer(tmp_path / "static")
    page = viewer_page(piece(), static)
    parsed = _Scripts()
    parsed.feed(page)
    # no URL left but data: URIs (the icon); the preload hint is gone
    assert all(ref.startswith("data:") for ref in parsed.refs), parsed.refs
    assert "/assets/" not in page and "modulepreload" not in page
    assert "<style>" in page and "color:#123" in page
    font = base64.b64encode(b"wOF2\x00fake").decode()
    assert f'url("data:font/woff2;base64,{font}")' in page
    (graph,) = [text for attrs, text in parsed.scripts if attrs.get("id") == "ukr-graph"]
    assert json.loads(graph) == json.loads(piece().model_dump_json())
    assert "alert(1)</script>" not in page  # the hostile label cannot break out
    (module,) = [(a, t) for a, t in parsed.scripts if a.get("type") == "module"]
    assert "src" not in module[0] and "crossorigin" not in module[0]
    assert module[1] == SCRIPT.replace("</script>", "<\\/script>")
    assert len(parsed.scripts) == 2  # the module and the graph: nothing else split off


@pytest.mark.parametrize(("change", "message"), [
    (lambda p: p.replace('src="/assets/viewer-abc123.js"', 'src="https://cdn.example/x.js"'),
     "the viewer loads 'https://cdn.example/x.js' from the network"),
    (lambda p: p.replace("viewer-def456.css", "gone.css"),
     "the viewer names '/assets/gone.css', which the web bundle does not hold"),
    (lambda p: p.replace("viewer-def456.css", "../../secret.css"),
     "the viewer names '/assets/../../secret.css', which the web bundle does not hold"),
    (lambda p: p.replace('id="ukr-graph"', 'id="graph"'),
     'the viewer has no <script id="ukr-graph"> to hold the graph'),
])  # fmt: skip
def test_a_viewer_that_cannot_be_inlined_is_a_one_line_error(
    tmp_path: Path, change: object, message: str
) -> None:
    static = write_fake_viewer(tmp_path / "static")
    page = change((static / "viewer.html").read_text())  # type: ignore[operator]
    with pytest.raises(ConfigurationError) as err:
        inline_viewer(page, static, "{}")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_a_bundle_without_a_viewer_says_make_web(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(NO_VIEWER)):
        viewer_page(piece(), tmp_path)


def test_graphml_and_gexf_hold_the_nodes_edges_and_flattened_attributes(
    tmp_path: Path,
) -> None:
    import networkx as nx

    graph = to_networkx(piece())
    assert isinstance(graph, nx.MultiDiGraph)
    assert graph.nodes["a"]["sources"] == "1,2" and graph.nodes["a"]["trace"] is True
    assert "community" not in graph.nodes["b"] and "trace" not in graph.nodes["b"]
    write_export(piece(), "graphml", tmp_path / "g.graphml")
    back = nx.read_graphml(tmp_path / "g.graphml", force_multigraph=True)
    assert set(back.nodes) == {"a", "b"} and back.number_of_edges() == 2
    assert back.nodes["a"]["label"] == HOSTILE and back.nodes["a"]["degree"] == 2
    assert back.edges["a", "b", "r1"]["relation"] == "BORN_IN"
    assert back.edges["a", "b", "r1"]["weight"] == 2.5
    assert back.graph["index"] == "default" and back.graph["truncated"] is False
    write_export(piece(), "gexf", tmp_path / "g.gexf")
    gexf = nx.read_gexf(tmp_path / "g.gexf")
    assert set(gexf.nodes) == {"a", "b"} and gexf.number_of_edges() == 2
    assert gexf.nodes["a"]["label"] == HOSTILE and gexf.nodes["a"]["entity_type"] == "PERSON"
    write_export(piece(), "json", tmp_path / "g.json")
    assert GraphSlice.model_validate_json((tmp_path / "g.json").read_text()) == piece()
