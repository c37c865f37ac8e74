"""``ukr graph export`` and ``ukr graph stats`` over the two indexes of
`tests.support.graph_project` (an LLM graph in ``default``, a concept graph in ``docs``).
"""

from __future__ import annotations

import json
import re
import statistics
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.fake_viewer import write_fake_viewer
from tests.support.graph_fixture import CHILDREN, ENTITIES, RELATIONSHIPS, TOP, ent
from tests.support.graph_project import build_project
from unified_kg_rag.cli.app import app
from unified_kg_rag.retrieval.graph_view.stats import GraphStats, LevelSizes, write_charts

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("graph_cli")
    build_project(folder)
    return folder


def ukr(runner: CliRunner, project: Path, *args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, [*args, "-C", str(project)])
    return result.exit_code, result.stdout, result.stderr


def test_export_the_whole_graph_as_json_graphml_and_gexf(
    runner: CliRunner, project: Path, tmp_path: Path
) -> None:
    import networkx as nx

    code, _, err = ukr(runner, project, "graph", "export", "-o", str(tmp_path / "g.json"))
    assert code == 0, err
    assert "wrote" in err and f"{len(ENTITIES)} nodes, {len(RELATIONSHIPS)} edges" in err
    whole = json.loads((tmp_path / "g.json").read_text())
    assert {n["attributes"]["label"] for n in whole["nodes"]} == {e[0] for e in ENTITIES}
    assert whole["attributes"]["truncated"] is False
    code, _, err = ukr(runner, project, "graph", "export", "--format", "graphml",
                       "-o", str(tmp_path / "g.graphml"))  # fmt: skip
    assert code == 0, err
    back = nx.read_graphml(tmp_path / "g.graphml", force_multigraph=True)
    assert back.number_of_nodes() == len(ENTITIES)
    assert back.number_of_edges() == len(RELATIONSHIPS)
    assert back.nodes[ent("Warsaw")]["label"] == "Warsaw"
    code, _, err = ukr(runner, project, "graph", "export", "-f", "gexf", "-i", "docs",
                       "--label", "barn owl", "--max-depth", "1", "-o", str(tmp_path / "c.gexf"))
    assert code == 0, err  # fmt: skip
    concepts = nx.read_gexf(tmp_path / "c.gexf")
    assert "barn owl" in {d["label"] for _, d in concepts.nodes(data=True)}


def test_export_an_answers_trace_from_ukr_query_json(
    runner: CliRunner, project: Path, tmp_path: Path
) -> None:
    code, answer, err = ukr(runner, project, "query", "Where was Marie Curie born?",
                            "--strategy", "local", "--json")  # fmt: skip
    assert code == 0, err
    (tmp_path / "answer.json").write_text(answer)
    sources = json.loads(answer)["sources"]
    code, _, err = ukr(runner, project, "graph", "export", "--trace",
                       str(tmp_path / "answer.json"), "-o", str(tmp_path / "t.json"))
    assert code == 0, err  # fmt: skip
    out = json.loads((tmp_path / "t.json").read_text())
    marks = {n["key"]: n["attributes"]["sources"] for n in out["nodes"]
             if n["attributes"].get("trace")}  # fmt: skip
    entities = [s for s in sources if s["kind"] == "entity"]
    assert entities and all(s["n"] in marks[s["id"]] for s in entities)
    assert out["attributes"]["label"] == "trace"


def test_export_html_inlines_the_viewer(
    runner: CliRunner, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from unified_kg_rag.retrieval.graph_view import export

    monkeypatch.setattr(export, "STATIC_DIR", write_fake_viewer(tmp_path / "static"))
    code, _, err = ukr(runner, project, "graph", "export", "-f", "html", "--label", "Warsaw",
                       "-o", str(tmp_path / "g.html"))  # fmt: skip
    assert code == 0, err
    page = (tmp_path / "g.html").read_text()
    assert "/assets/" not in page and "Warsaw" in page
    monkeypatch.setattr(export, "STATIC_DIR", tmp_path / "empty")
    code, _, err = ukr(runner, project, "graph", "export", "-f", "html",
                       "-o", str(tmp_path / "none.html"))  # fmt: skip
    assert code == 2
    assert err.strip() == "ConfigurationError: the web bundle has no viewer (make web)"
    assert not (tmp_path / "none.html").exists()


ANSWER = {"question": "q", "answer": "a [1]", "answer_kind": "extractive", "strategy": "local",
          "index": "default", "sources": [{"n": 1, "kind": "entity", "id": "x", "text": "t"}]}


def test_export_to_a_missing_folder_is_a_usage_error(
    runner: CliRunner, project: Path, tmp_path: Path
) -> None:
    code, _, err = ukr(runner, project, "graph", "export", "-o", str(tmp_path / "no" / "g.json"))
    assert code == 2 and err.startswith(f"UsageError: --output: {tmp_path / 'no'}: no such")


def _bad_trace_files(folder: Path) -> dict[str, Path]:
    (folder / "text.json").write_text("not json at all")
    (folder / "other.json").write_text(json.dumps({"nodes": []}))
    (folder / "empty.json").write_text(json.dumps({**ANSWER, "sources": []}))
    return {"missing": folder / "missing.json", "not JSON": folder / "text.json",
            "not a query output": folder / "other.json", "no sources": folder / "empty.json"}


@pytest.mark.parametrize(("case", "says"), [
    ("missing", "no such file"),
    ("not JSON", "not JSON (Expecting value, line 1)"),
    ("not a query output", "not the output of `ukr query --json`"),
    ("no sources", "the answer has no sources to trace"),
])  # fmt: skip
def test_a_bad_trace_file_is_a_one_line_usage_error(
    runner: CliRunner, project: Path, tmp_path: Path, case: str, says: str
) -> None:
    path = _bad_trace_files(tmp_path)[case]
    code, _, err = ukr(runner, project, "graph", "export", "--trace", str(path),
                       "-o", str(tmp_path / "t.json"))  # fmt: skip
    assert code == 2
    assert err.startswith(f"UsageError: --trace: {path}: {says}") and err.count("\n") == 1


@pytest.mark.parametrize(("args", "code", "says"), [
    (("--format", "pdf"), 2, "'pdf' is not one of"),
    (("--label", "Atlantis"), 2, "NotFoundError: --label 'Atlantis': no node of index 'default'"),
    (("--graph", "concepts"), 2, "MethodologyNotIndexedError: the concepts graph needs the "
                                 "lazy methodology"),
    (("-i", "docs", "--graph", "entities"), 2, "MethodologyNotIndexedError: the entities "
                                               "graph needs one of the graphrag"),
    (("--label", "Warsaw", "--trace", "a.json"), 2, "UsageError: --label: --trace draws"),
])  # fmt: skip
def test_bad_export_input_is_a_clear_error(
    runner: CliRunner, project: Path, tmp_path: Path, args: tuple[str, ...], code: int,
    says: str,
) -> None:
    if "--trace" in args:
        (tmp_path / "a.json").write_text(json.dumps(ANSWER))
        args = tuple(str(tmp_path / a) if a == "a.json" else a for a in args)
    got, _, err = ukr(runner, project, "graph", "export", *args, "-o", str(tmp_path / "x"))
    assert got == code
    assert says in " ".join(err.split())
    assert not (tmp_path / "x").exists()


def test_stats_match_networkx_on_the_fixture_graph(
    runner: CliRunner, project: Path, tmp_path: Path
) -> None:
    import networkx as nx

    reference = nx.MultiDiGraph()
    reference.add_nodes_from(ent(e[0]) for e in ENTITIES)
    reference.add_edges_from((ent(r[0]), ent(r[1])) for r in RELATIONSHIPS)
    code, out, err = ukr(runner, project, "graph", "stats", "--json", "--top", "3",
                         "--charts", str(tmp_path / "charts"))  # fmt: skip
    assert code == 0, err
    stats = json.loads(out)
    assert set(stats) == {"index", "graph", "nodes", "edges", "communities", "degree_buckets",
                          "degrees", "top"}  # fmt: skip
    assert (stats["nodes"], stats["edges"]) == (reference.number_of_nodes(),
                                                reference.number_of_edges())  # fmt: skip
    assert stats["degrees"] == [list(p) for p in sorted(
        {d: list(dict(reference.degree).values()).count(d)
         for d in dict(reference.degree).values()}.items())]  # fmt: skip
    assert sum(b["count"] for b in stats["degree_buckets"]) == reference.number_of_nodes()
    for b in stats["degree_buckets"]:
        assert b["count"] == sum(b["low"] <= d <= b["high"] for _, d in reference.degree)
    names = {ent(e[0]): e[0] for e in ENTITIES}
    ranked = sorted(reference.degree, key=lambda nd: (-nd[1], names[nd[0]].casefold()))
    assert [(t["label"], t["degree"]) for t in stats["top"]] == [
        (names[n], d) for n, d in ranked[:3]]  # fmt: skip
    assert stats["top"][0]["entity_type"] == "PERSON"  # Marie Curie
    levels = {0: [len(m) for m in TOP.values()],
              1: [len(m) for kids in CHILDREN.values() for m in kids.values()]}  # fmt: skip
    for got in stats["communities"]:
        sizes = levels[got["level"]]
        assert (got["count"], got["min"], got["median"], got["max"]) == (
            len(sizes), min(sizes), statistics.median(sizes), max(sizes))
    assert [c["level"] for c in stats["communities"]] == [0, 1]

    files = sorted(p.name for p in (tmp_path / "charts").iterdir())
    assert files == ["community_sizes.png", "community_sizes.svg", "degree_distribution.png",
                     "degree_distribution.svg"]  # fmt: skip
    for name in files:
        data = (tmp_path / "charts" / name).read_bytes()
        if name.endswith(".png"):
            assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000
        else:
            assert ET.fromstring(data).tag == "{http://www.w3.org/2000/svg}svg"
    assert err.count("wrote ") == 4


def test_stats_as_text_and_over_the_concept_graph(runner: CliRunner, project: Path) -> None:
    code, out, err = ukr(runner, project, "graph", "stats", "--top", "2")
    assert code == 0, err
    assert out.startswith(f"entities graph of index default: {len(ENTITIES)} nodes, "
                          f"{len(RELATIONSHIPS)} edges")  # fmt: skip
    assert "Community sizes per level" in out and "Marie Curie" in out
    code, out, err = ukr(runner, project, "graph", "stats", "-i", "docs", "--json")
    assert code == 0, err
    stats = json.loads(out)
    assert stats["graph"] == "concepts" and stats["nodes"] > 0 and stats["edges"] > 0
    code, _, err = ukr(runner, project, "graph", "stats", "-i", "docs", "--graph", "entities")
    assert code == 2 and err.startswith("MethodologyNotIndexedError: the entities graph")


@pytest.mark.parametrize("command", [("graph", "export", "-f", "html", "-o", "x.html"),
                                     ("graph", "stats")])  # fmt: skip
def test_an_unknown_index_is_named_with_the_existing_ones(
    runner: CliRunner, project: Path, command: tuple[str, ...]
) -> None:
    code, _, err = ukr(runner, project, *command, "-i", "nosuch")
    assert code == 2
    assert err == ("NotFoundError: index: no index 'nosuch' in this project (indexes: default, "
                   "docs); index documents into it with `ukr index PATH --index nosuch`\n")


def test_an_index_without_a_graph_names_both_ways_to_build_one(
    runner: CliRunner, tmp_path: Path
) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.md").write_text("Marie Curie was born in Warsaw.\n", encoding="utf-8")
    (tmp_path / "ukr.yaml").write_text("indexing:\n  methodologies: []\n", encoding="utf-8")
    code, _, err = ukr(runner, tmp_path, "index", str(tmp_path / "d"))
    assert code == 0, err
    for command in (("graph", "stats"), ("graph", "export", "-o", str(tmp_path / "g.json"))):
        code, _, err = ukr(runner, tmp_path, *command)
        assert code == 2 and err.count("\n") == 1
        assert err.startswith("MethodologyNotIndexedError: index 'default' has no graph (it "
                              "holds: text units only)")  # fmt: skip
        assert "graphrag, lightrag or hipporag for the LLM entity graph" in err
        assert "lazy for the LLM-free concept graph" in err


def _svg_texts(path: Path) -> list[str]:
    """The texts of a matplotlib SVG (drawn as glyph paths, each text kept as a comment)."""
    return re.findall(r"<!-- (.*?) -->", path.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_charts_note_degree_zero_nodes_and_label_ticks_as_integers(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    stats = GraphStats(
        index="default", graph="concepts", nodes=19, edges=14,
        communities=[LevelSizes(level=0, count=4, min=3, median=4.5, max=6,
                                sizes=[(3, 1), (4, 1), (5, 1), (6, 1)])],
        degree_buckets=[], degrees=[(0, 3), (1, 9), (2, 4), (3, 2), (7, 1)], top=[],
    )  # fmt: skip
    write_charts(stats, tmp_path)
    degree = _svg_texts(tmp_path / "degree_distribution.svg")
    assert any("3 nodes of degree 0 not shown" in t for t in degree), degree
    sizes = _svg_texts(tmp_path / "community_sizes.svg")
    for texts in (degree, sizes):
        assert not any("10^" in t or "×10" in t or "times" in t for t in texts), texts
    numbers = [t for t in degree + sizes if re.fullmatch(r"[\d.$\\mathdefault{}−-]+", t)]
    ticks = [re.sub(r"[^\d.]", "", t) for t in numbers]
    assert ticks and all(t.isdigit() for t in ticks), numbers  # no 4.25 members
    assert {"1", "2", "5"} <= set(ticks)
